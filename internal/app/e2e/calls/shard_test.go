package calls_test

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
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
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
	second, err := StartOperator(true, func(o *app.Options) { o.Worker.ID = "shard-second" })
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(second.Stop)
	first := workers.DefaultOptions().ID // the suite's operator
	o := NewOrg(t)

	// Calls through the first replica's API until both workers carry some.
	carried := map[string][]string{}
	var ids []string
	for len(carried) < 2 && len(ids) < 40 {
		id := o.CreateCall(t, "+14155550123", nil)
		ids = append(ids, id)
		w := CallResource(t, o.Ns, id).Labels[switchboardv1.WorkerLabel]
		carried[w] = append(carried[w], id)
	}
	g.Expect(carried).To(HaveKey(first))
	g.Expect(carried).To(HaveKey("shard-second"))
	// A call applied with kubectl, carried by the first worker: named by
	// its author, so its call id is not its name.
	applied := &switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Namespace: o.Ns, Name: "applied-by-hand",
		Labels: map[string]string{switchboardv1.WorkerLabel: first}},
		Spec: switchboardv1.CallSpec{AgentID: o.AgentID, ToNumber: "+14155550124", Variables: JSONObject(`{"customer_name":"Ada"}`)}}
	g.Expect(K8s.Create(ctx, applied)).To(Succeed())
	var appliedID string
	g.Eventually(func(g Gomega) {
		var c switchboardv1.Call
		g.Expect(K8s.Get(ctx, client.ObjectKeyFromObject(applied), &c)).To(Succeed())
		g.Expect(c.Status.CallID).NotTo(BeEmpty())
		appliedID = c.Status.CallID
	}).Should(Succeed())
	ids = append(ids, appliedID)

	secondCache := second.Manager.GetCache()
	var cached switchboardv1.CallList
	g.Expect(secondCache.List(ctx, &cached, client.InNamespace(o.Ns))).To(Succeed())
	for _, c := range cached.Items {
		g.Expect(c.Labels).To(HaveKeyWithValue(switchboardv1.WorkerLabel, "shard-second"),
			"the second replica caches %s, the first's", c.Name)
	}
	g.Expect(cached.Items).To(HaveLen(len(carried["shard-second"])))
	firsts := []client.ObjectKey{client.ObjectKeyFromObject(applied)}
	for _, id := range carried[first] {
		firsts = append(firsts, client.ObjectKey{Namespace: o.Ns, Name: CallName(id)})
	}
	for _, key := range firsts {
		err := secondCache.Get(ctx, key, &switchboardv1.Call{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the second replica caches the first's %s: %v", key.Name, err)
	}

	for _, baseURL := range []string{Operator.BaseURL, second.BaseURL} {
		for _, id := range ids {
			r := DoAt(t, baseURL, "GET", "/v1/calls/"+id, o.Key, nil)
			g.Expect(r.Status).To(Equal(http.StatusOK), "GET %s on %s: %s", id, baseURL, r.Raw)
			g.Expect(r.Body).To(HaveKeyWithValue("call_id", id))
		}
		g.Eventually(func(g Gomega) {
			r := DoAt(t, baseURL, "GET", "/v1/calls?limit=100", o.Key, nil)
			g.Expect(r.Status).To(Equal(http.StatusOK), string(r.Raw))
			var listed []string
			for _, item := range r.Body["data"].([]any) {
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
	WithOperator(t, longCalls)
	second, err := StartOperator(true, longCalls, func(o *app.Options) { o.Worker.ID = "quota-second" })
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(second.Stop)
	o := NewOrg(t)
	const limit = 4
	AnnotateOrg(t, o, map[string]string{quota.ActiveCallsAnnotation: strconv.Itoa(limit)})
	replicas := []string{Operator.BaseURL, second.BaseURL}
	usage := func(g Gomega, baseURL string) (active, limit float64) {
		r := DoAt(t, baseURL, "GET", "/v1/concurrency", o.Key, nil)
		g.Expect(r.Status).To(Equal(http.StatusOK), string(r.Raw))
		return r.Body["live_calls"].(float64) + r.Body["queued_calls"].(float64), r.Body["concurrency_limit"].(float64)
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
		return DoAt(t, baseURL, "POST", "/v1/calls", o.Key, map[string]any{"agent_id": o.AgentID,
			"to_number": "+14155550170", "variables": map[string]any{"customer_name": "Ada"}}).Status
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
	g.Expect(CountCalls(t, o.Ns)).To(Equal(created))

	settled(created)
	for _, baseURL := range replicas {
		g.Expect(post(baseURL)).To(Equal(http.StatusTooManyRequests), "on %s once the Leases are written", baseURL)
	}
	g.Expect(CountCalls(t, o.Ns)).To(Equal(created))
}
