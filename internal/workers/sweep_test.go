package workers_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/workers"
)

// call is a Call of worker (none when empty) in phase.
func call(name, worker string, phase switchboardv1.CallPhase, mutate ...func(*switchboardv1.Call)) *switchboardv1.Call {
	c := &switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Namespace: "org", Name: name, Labels: map[string]string{}},
		Spec: switchboardv1.CallSpec{AgentID: "a", ToNumber: "+14155551234"}, Status: switchboardv1.CallStatus{Phase: phase}}
	if worker != "" {
		c.Labels[workers.Label] = worker
	}
	for _, m := range mutate {
		m(c)
	}
	return c
}

// cluster is a fake apiserver with leases and calls, and a pool over it.
func cluster(t *testing.T, objs ...client.Object) (client.Client, *workers.Pool, *clocktesting.FakeClock) {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{switchboardv1.AddToScheme, coordinationv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&switchboardv1.Call{}).Build()
	clk := clocktesting.NewFakeClock(start.Add(time.Second))
	return c, &workers.Pool{Reader: c, Namespace: "switchboard-system", Clock: clk}, clk
}

func get(t *testing.T, c client.Client, name string) *switchboardv1.Call {
	t.Helper()
	var got switchboardv1.Call
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "org", Name: name}, &got); err != nil {
		t.Fatal(err)
	}
	return &got
}

// A lost worker's calls move: a live one ends worker_lost (answered if
// its answer was stored), a queued one goes to the live worker with room,
// an ended one to the sweeping leader. A live worker's calls stay.
func TestSweepMovesTheCallsOfLostWorkers(t *testing.T) {
	answered := func(c *switchboardv1.Call) {
		c.Status.StartedAt = &metav1.MicroTime{Time: start.Add(-time.Minute)}
		c.Status.AnsweredAt = &metav1.MicroTime{Time: start.Add(-50 * time.Second)}
	}
	c, pool, clk := cluster(t,
		lease("live", 10, 0, start, false), lease("lost", 10, 3, start.Add(-time.Minute), false),
		call("talking", "lost", switchboardv1.CallInProgress, answered),
		call("ringing", "lost", switchboardv1.CallInProgress),
		call("queued", "lost", switchboardv1.CallQueued),
		call("ended", "lost", switchboardv1.CallEnded),
		call("gone", "stopped", switchboardv1.CallQueued), // its worker deleted its Lease
		call("mine", "live", switchboardv1.CallInProgress))
	s := &workers.Sweeper{Client: c, Live: c, Pool: pool, Self: "leader", Interval: 5 * time.Second, Clock: clk, Log: logr.Discard()}
	moved, err := s.Sweep(context.Background())
	if err != nil || moved != 5 {
		t.Fatalf("Sweep: %d moved, %v; want 5", moved, err)
	}
	for name, want := range map[string]string{"talking": "leader", "ringing": "leader", "queued": "live", "ended": "leader",
		"gone": "live", "mine": "live"} {
		if got := get(t, c, name); got.Labels[workers.Label] != want {
			t.Errorf("%s went to %q, want %q", name, got.Labels[workers.Label], want)
		}
	}
	talking := get(t, c, "talking")
	if talking.Status.Phase != switchboardv1.CallEnded || talking.Status.DisconnectionReason != "worker_lost" ||
		talking.Status.Disposition != switchboardv1.DispositionAnswered || *talking.Status.DurationMS != 51_000 {
		t.Errorf("the answered call of the lost worker: %+v", talking.Status)
	}
	ringing := get(t, c, "ringing")
	if ringing.Status.Phase != switchboardv1.CallEnded || ringing.Status.Disposition != switchboardv1.DispositionCarrierFailure ||
		ringing.Status.DisconnectionReason != "worker_lost" {
		t.Errorf("the unanswered call of the lost worker: %+v", ringing.Status)
	}
	for name, phase := range map[string]switchboardv1.CallPhase{"queued": switchboardv1.CallQueued,
		"gone": switchboardv1.CallQueued, "mine": switchboardv1.CallInProgress} {
		if got := get(t, c, name); got.Status.Phase != phase || got.Status.DisconnectionReason != "" {
			t.Errorf("%s changed: %+v", name, got.Status)
		}
	}
	if moved, err := s.Sweep(context.Background()); err != nil || moved != 0 {
		t.Fatalf("a second sweep moved %d (%v), want nothing left to move", moved, err)
	}
}

// With no live worker that has room, a lost worker's queued call waits
// unassigned; the assigner gives it to the first worker with room.
func TestQueuedCallsWaitForRoom(t *testing.T) {
	c, pool, clk := cluster(t, lease("full", 1, 1, start, false), lease("lost", 10, 0, start.Add(-time.Minute), false),
		call("queued", "lost", switchboardv1.CallQueued), call("applied", "", switchboardv1.CallQueued),
		call("refused", "", switchboardv1.CallFailed))
	s := &workers.Sweeper{Client: c, Live: c, Pool: pool, Self: "leader", Interval: 5 * time.Second, Clock: clk, Log: logr.Discard()}
	if _, err := s.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := get(t, c, "queued"); got.Labels[workers.Label] != "" {
		t.Fatalf("with no room anywhere the queued call went to %q, want it unassigned", got.Labels[workers.Label])
	}
	var waited []time.Duration
	a := &workers.Assigner{Client: c, Pool: pool, Self: "leader", Retry: time.Second, Clock: clk,
		Assigned: func(d time.Duration) { waited = append(waited, d) }}
	assign := func(name string) reconcile.Result {
		t.Helper()
		res, err := a.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "org", Name: name}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := assign("queued"); res.RequeueAfter != time.Second || get(t, c, "queued").Labels[workers.Label] != "" {
		t.Fatalf("no room: %+v, label %q; want it retried in a second, unassigned", res, get(t, c, "queued").Labels[workers.Label])
	}
	assign("refused") // nothing to dial: it goes to the leader at once
	if got := get(t, c, "refused").Labels[workers.Label]; got != "leader" {
		t.Errorf("the refused call went to %q, want the leader", got)
	}
	// Room frees: the full worker renews with a call ended.
	freed := lease("full", 1, 0, start.Add(time.Second), false)
	existing := lease("full", 1, 1, start, false)
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(existing), existing); err != nil {
		t.Fatal(err)
	}
	freed.ResourceVersion = existing.ResourceVersion
	if err := c.Update(context.Background(), freed); err != nil {
		t.Fatal(err)
	}
	assign("queued")
	if got := get(t, c, "queued").Labels[workers.Label]; got != "full" {
		t.Fatalf("after the renewal the queued call went to %q, want full", got)
	}
	if res := assign("applied"); res.RequeueAfter != time.Second {
		t.Fatalf("the worker's one free place was taken: %+v, want a retry", res)
	}
	if len(waited) != 2 {
		t.Errorf("assignments observed: %v, want 2 (refused, queued)", waited)
	}
}
