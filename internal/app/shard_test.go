package app_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/app"
	"github.com/switchboard-dev/switchboard/internal/quota"
	"github.com/switchboard-dev/switchboard/internal/telephony/sim"
	"github.com/switchboard-dev/switchboard/internal/workers"
)

// Two replicas, each a worker: neither's cache holds the other's Calls,
// yet the API of each answers for every call, by id (a REST API call and
// one applied with kubectl) and in lists.
func TestReplicaCachesOnlyItsOwnCalls(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	second, err := startOperator(true, func(o *app.Options) { o.Worker.ID = "shard-second" })
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(second.stop)
	first := workers.DefaultOptions().ID // the suite's operator
	o := newOrg(t)

	// Calls through the first replica's API until both workers carry some.
	carried := map[string][]string{}
	var ids []string
	for len(carried) < 2 && len(ids) < 40 {
		id := o.createCall(t, "+14155550123", nil)
		ids = append(ids, id)
		w := callResource(t, o.ns, id).Labels[switchboardv1.WorkerLabel]
		carried[w] = append(carried[w], id)
	}
	g.Expect(carried).To(HaveKey(first))
	g.Expect(carried).To(HaveKey("shard-second"))
	// A call applied with kubectl, carried by the first worker: named by
	// its author, so its call id is not its name.
	applied := &switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: "applied-by-hand",
		Labels: map[string]string{switchboardv1.WorkerLabel: first}},
		Spec: switchboardv1.CallSpec{AgentID: o.agentID, ToNumber: "+14155550124", Variables: jsonObject(`{"customer_name":"Ada"}`)}}
	g.Expect(k8s.Create(ctx, applied)).To(Succeed())
	var appliedID string
	g.Eventually(func(g Gomega) {
		var c switchboardv1.Call
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(applied), &c)).To(Succeed())
		g.Expect(c.Status.CallID).NotTo(BeEmpty())
		appliedID = c.Status.CallID
	}).Should(Succeed())
	ids = append(ids, appliedID)

	secondCache := second.Manager.GetCache()
	var cached switchboardv1.CallList
	g.Expect(secondCache.List(ctx, &cached, client.InNamespace(o.ns))).To(Succeed())
	for _, c := range cached.Items {
		g.Expect(c.Labels).To(HaveKeyWithValue(switchboardv1.WorkerLabel, "shard-second"),
			"the second replica caches %s, the first's", c.Name)
	}
	g.Expect(cached.Items).To(HaveLen(len(carried["shard-second"])))
	firsts := []client.ObjectKey{client.ObjectKeyFromObject(applied)}
	for _, id := range carried[first] {
		firsts = append(firsts, client.ObjectKey{Namespace: o.ns, Name: callName(id)})
	}
	for _, key := range firsts {
		err := secondCache.Get(ctx, key, &switchboardv1.Call{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the second replica caches the first's %s: %v", key.Name, err)
	}

	for _, baseURL := range []string{operator.baseURL, second.baseURL} {
		for _, id := range ids {
			r := doAt(t, baseURL, "GET", "/v1/calls/"+id, o.key, nil)
			g.Expect(r.status).To(Equal(http.StatusOK), "GET %s on %s: %s", id, baseURL, r.raw)
			g.Expect(r.body).To(HaveKeyWithValue("call_id", id))
		}
		g.Eventually(func(g Gomega) {
			r := doAt(t, baseURL, "GET", "/v1/calls?limit=100", o.key, nil)
			g.Expect(r.status).To(Equal(http.StatusOK), string(r.raw))
			var listed []string
			for _, item := range r.body["data"].([]any) {
				listed = append(listed, item.(map[string]any)["call_id"].(string))
			}
			g.Expect(listed).To(ConsistOf(ids), "the list on %s", baseURL)
		}).Should(Succeed())
	}
}

// The active-calls limit across two replicas: each counts its own worker's
// calls from its cache and the other's from the other's Lease. A burst on
// one replica right after a burst on the other can pass the limit by at
// most the other's burst (its Lease is at most a second behind); once the
// Leases are written, both refuse, and both report the organization's
// real count.
func TestActiveCallsLimitAcrossReplicas(t *testing.T) {
	g := NewWithT(t)
	longCalls := func(o *app.Options) { o.SimTimings = sim.Timings{Ring: 30 * time.Second, Talk: time.Minute} }
	withOperator(t, longCalls)
	second, err := startOperator(true, longCalls, func(o *app.Options) { o.Worker.ID = "quota-second" })
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(second.stop)
	o := newOrg(t)
	const limit = 4
	annotateOrg(t, o, map[string]string{quota.ActiveCallsAnnotation: strconv.Itoa(limit)})
	replicas := []string{operator.baseURL, second.baseURL}
	usage := func(g Gomega, baseURL string) (active, limit float64) {
		r := doAt(t, baseURL, "GET", "/v1/concurrency", o.key, nil)
		g.Expect(r.status).To(Equal(http.StatusOK), string(r.raw))
		return r.body["live_calls"].(float64) + r.body["queued_calls"].(float64), r.body["concurrency_limit"].(float64)
	}
	// Both replicas see the limit and what each carries.
	settled := func(want int) {
		t.Helper()
		for _, baseURL := range replicas {
			g.Eventually(func(g Gomega) {
				active, l := usage(g, baseURL)
				g.Expect(l).To(BeNumerically("==", limit))
				g.Expect(active).To(BeNumerically("==", want), "on %s", baseURL)
			}).WithTimeout(10 * time.Second).Should(Succeed())
		}
	}
	post := func(baseURL string) int {
		return doAt(t, baseURL, "POST", "/v1/calls", o.key, map[string]any{"agent_id": o.agentID,
			"to_number": "+14155550170", "variables": map[string]any{"customer_name": "Ada"}}).status
	}
	settled(0)

	const burst = 2
	for range burst {
		g.Expect(post(replicas[1])).To(Equal(http.StatusCreated))
	}
	created := burst
	for range 2 * limit {
		if post(replicas[0]) == http.StatusCreated {
			created++
		}
	}
	t.Logf("limit %d: %d created after a burst of %d on the other replica", limit, created, burst)
	g.Expect(created).To(BeNumerically(">=", limit), "the limit admits its calls")
	g.Expect(created).To(BeNumerically("<=", limit+burst), "over-admitted by more than the other replica's burst")
	g.Expect(countCalls(t, o.ns)).To(Equal(created))

	settled(created)
	for _, baseURL := range replicas {
		g.Expect(post(baseURL)).To(Equal(http.StatusTooManyRequests), "on %s once the Leases are written", baseURL)
	}
	g.Expect(countCalls(t, o.ns)).To(Equal(created))
}
