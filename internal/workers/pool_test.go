package workers_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/switchboard-dev/switchboard/internal/workers"
)

var start = time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)

// lease is a worker's Lease as its heartbeat writes it.
func lease(name string, capacity, active int, renewed time.Time, draining bool) *coordinationv1.Lease {
	now := metav1.NewMicroTime(renewed)
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "switchboard-system", Name: workers.LeaseName(name),
			Labels: map[string]string{workers.Label: "true"},
			Annotations: map[string]string{workers.CapacityAnnotation: strconv.Itoa(capacity),
				workers.ActiveAnnotation: strconv.Itoa(active), workers.DrainingAnnotation: strconv.FormatBool(draining)}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](15), RenewTime: &now},
	}
}

func pool(t *testing.T, leases ...client.Object) (*workers.Pool, *clocktesting.FakePassiveClock, client.Client) {
	return poolB(t, leases...)
}

func poolB(t testing.TB, leases ...client.Object) (*workers.Pool, *clocktesting.FakePassiveClock, client.Client) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := coordinationv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(leases...).Build()
	clk := clocktesting.NewFakePassiveClock(start.Add(time.Second))
	return &workers.Pool{Reader: c, Namespace: "switchboard-system", Clock: clk}, clk, c
}

// picks assigns n calls and counts them per worker.
func picks(t *testing.T, p *workers.Pool, n int) map[string]int {
	t.Helper()
	got := map[string]int{}
	for range n {
		w, err := p.Pick(context.Background())
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		got[w]++
	}
	return got
}

// A burst between two renewals spreads by room, as if each assignment
// were already counted: the least loaded takes calls until it is as
// loaded as the others, then they take turns; a full pool says so.
func TestPickSpreadsByLoad(t *testing.T) {
	p, _, _ := pool(t, lease("a", 10, 0, start, false), lease("b", 10, 4, start, false), lease("c", 20, 0, start, false))
	got := picks(t, p, 36)
	if got["a"] != 10 || got["b"] != 6 || got["c"] != 20 {
		t.Fatalf("36 calls went %v, want a full pool: a 10, b 6, c 20", got)
	}
	if _, err := p.Pick(context.Background()); !errors.Is(err, workers.ErrNoCapacity) {
		t.Fatalf("a full pool: %v, want ErrNoCapacity", err)
	}
}

// The halfway point of a burst is even by share of capacity: no worker
// carries more than its share.
func TestPickIsEvenByShare(t *testing.T) {
	p, _, _ := pool(t, lease("a", 100, 0, start, false), lease("b", 100, 0, start, false), lease("c", 100, 0, start, false))
	got := picks(t, p, 150)
	for _, w := range []string{"a", "b", "c"} {
		if got[w] != 50 {
			t.Fatalf("150 calls over three equal workers went %v, want 50 each", got)
		}
	}
}

// A worker that drains or whose Lease lapsed takes nothing; a renewal
// restarts the count of what was assigned since the last one (its Lease
// counts those calls now).
func TestPickSkipsDrainingAndLostWorkers(t *testing.T) {
	p, clk, c := pool(t, lease("draining", 10, 0, start, true), lease("lost", 10, 0, start.Add(-time.Minute), false),
		lease("live", 2, 0, start, false))
	if got := picks(t, p, 2); got["live"] != 2 {
		t.Fatalf("went %v, want both to live", got)
	}
	if _, err := p.Pick(context.Background()); !errors.Is(err, workers.ErrNoCapacity) {
		t.Fatalf("live full, the others draining or lost: %v, want ErrNoCapacity", err)
	}
	clk.SetTime(start.Add(5 * time.Second))
	renewed := lease("live", 2, 1, start.Add(5*time.Second), false) // one of the two calls ended
	var existing coordinationv1.Lease
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(renewed), &existing); err != nil {
		t.Fatal(err)
	}
	renewed.ResourceVersion = existing.ResourceVersion
	if err := c.Update(context.Background(), renewed); err != nil {
		t.Fatal(err)
	}
	if got := picks(t, p, 1); got["live"] != 1 {
		t.Fatalf("after the renewal: %v, want live", got)
	}
}

func TestWorkerFromLease(t *testing.T) {
	w, ok := workers.FromLease(lease("a", 10, 3, start, true))
	if !ok || w.Name != "a" || w.Capacity != 10 || w.Active != 3 || !w.Draining || w.Room() != 7 ||
		!w.Alive(start.Add(14*time.Second)) || w.Alive(start.Add(15*time.Second)) {
		t.Fatalf("read %+v (%v)", w, ok)
	}
	other := lease("a", 10, 3, start, false)
	other.Labels = nil // the leader-election Lease, say
	if _, ok := workers.FromLease(other); ok {
		t.Error("a Lease without the worker label read as a worker")
	}
	garbled := lease("a", 10, 3, start, false)
	garbled.Annotations[workers.CapacityAnnotation] = "lots"
	if _, ok := workers.FromLease(garbled); ok {
		t.Error("a Lease with an unreadable capacity read as a worker")
	}
}

// BenchmarkPick is the assignment of a call placed through the REST API:
// a pick among three workers' Leases, read from a client as the manager's
// cache serves them. It runs once per placement, inside the create.
func BenchmarkPick(b *testing.B) {
	p, _, _ := poolB(b, lease("a", 1<<30, 0, start, false), lease("b", 1<<30, 0, start, false), lease("c", 1<<30, 0, start, false))
	b.ResetTimer()
	for b.Loop() {
		if _, err := p.Pick(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}
