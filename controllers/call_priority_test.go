package controllers

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/webhook/deliveries"
)

// A starting reconciler's initial list serves a live Call (queued, say,
// placed while the leader changed) before finished Calls that only wait
// for their archive, though it was listed after them; and a change to any
// Call still comes before the whole initial list.
func TestInitialListServesLiveCallsFirst(t *testing.T) {
	q := priorityqueue.New[reconcile.Request]("calls")
	t.Cleanup(q.ShutDown)
	ctx, events := context.Background(), callEvents()

	archived := []*switchboardv1.Call{finishedCall("done-1"), finishedCall("done-2")}
	live := &switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Namespace: "org", Name: "queued"}}
	for _, c := range archived {
		if !onlyArchiveLeft(c) {
			t.Fatalf("fixture %s has more left to do than its archive", c.Name)
		}
		events.Create(ctx, event.CreateEvent{Object: c, IsInInitialList: true}, q)
	}
	events.Create(ctx, event.CreateEvent{Object: live, IsInInitialList: true}, q)
	if got := next(t, q); got != "queued" {
		t.Fatalf("first served %q, want the live call", got)
	}

	changed := archived[1].DeepCopy()
	changed.ResourceVersion = "2"
	events.Update(ctx, event.UpdateEvent{ObjectOld: archived[1], ObjectNew: changed}, q)
	if got := next(t, q); got != "done-2" {
		t.Fatalf("served %q, want the changed call before the rest of the initial list", got)
	}
	if got := next(t, q); got != "done-1" {
		t.Fatalf("served %q, want the last of the initial list", got)
	}
}

func finishedCall(name string) *switchboardv1.Call {
	c := &switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Namespace: "org", Name: name, ResourceVersion: "1"}}
	c.Status.Phase = switchboardv1.CallEnded
	c.Status.Disposition = switchboardv1.DispositionAnswered
	c.Status.Analysis = &switchboardv1.CallAnalysis{Summary: "answered"}
	c.Status.EmittedEvents = deliveries.DueEvents(c)
	return c
}

func next(t *testing.T, q priorityqueue.PriorityQueue[reconcile.Request]) string {
	t.Helper()
	req, shutdown := q.Get()
	if shutdown {
		t.Fatal("queue shut down")
	}
	q.Done(req)
	return req.Name
}
