package app_test

import (
	"context"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/app"
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
