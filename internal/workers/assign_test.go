package workers_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/workers"
)

// Assignments in flight at once never overfill a worker: each pick holds
// its place as it is made, and the pool fills exactly.
func TestConcurrentPicksNeverOverfill(t *testing.T) {
	p, _, _ := pool(t, lease("a", 30, 5, start, false), lease("b", 40, 0, start, false), lease("c", 25, 25, start, false))
	var mu sync.Mutex
	got := map[string]int{}
	full := 0
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			w, err := p.Pick(context.Background())
			mu.Lock()
			defer mu.Unlock()
			if errors.Is(err, workers.ErrNoCapacity) {
				full++
			} else if err != nil {
				t.Error(err)
			} else {
				got[w]++
			}
		})
	}
	wg.Wait()
	if got["a"] != 25 || got["b"] != 40 || got["c"] != 0 || full != 35 {
		t.Fatalf("100 concurrent picks went %v with %d refused, want a 25, b 40 and 35 refused", got, full)
	}
}

// An assignment that fails gives its place back; a pick made just before
// the worker's renewal stays counted, as the Lease may not count its call
// yet.
func TestReservationsLastUntilTheLeaseCountsThem(t *testing.T) {
	p, clk, c := pool(t, lease("a", 2, 0, start, false))
	ctx := context.Background()
	first, err := p.Reserve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	second, err := p.Reserve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Reserve(ctx); !errors.Is(err, workers.ErrNoCapacity) {
		t.Fatalf("a worker of 2 after 2 picks: %v, want ErrNoCapacity", err)
	}
	p.Release(second)
	if _, err := p.Reserve(ctx); err != nil {
		t.Fatalf("after a released pick: %v, want its place", err)
	}
	p.Release(first)
	// Renewed half a second after the picks, the Lease still says 0:
	// the remaining pick is not in its count yet, and stays counted.
	renew(t, c, lease("a", 2, 0, clk.Now().Add(500*time.Millisecond), false))
	if got := picks(t, p, 1); got["a"] != 1 {
		t.Fatalf("went %v, want a", got)
	}
	if _, err := p.Reserve(ctx); !errors.Is(err, workers.ErrNoCapacity) {
		t.Fatalf("a renewal too close to the picks forgot them: %v, want ErrNoCapacity", err)
	}
	// Renewed well after: its count is the Lease's.
	clk.SetTime(start.Add(5 * time.Second))
	renew(t, c, lease("a", 2, 1, start.Add(5*time.Second), false))
	if got := picks(t, p, 1); got["a"] != 1 {
		t.Fatalf("after a later renewal: %v, want a", got)
	}
}

// renew replaces a worker's Lease as its heartbeat does.
func renew(t *testing.T, c client.Client, l client.Object) {
	t.Helper()
	existing := l.DeepCopyObject().(client.Object)
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(l), existing); err != nil {
		t.Fatal(err)
	}
	l.SetResourceVersion(existing.GetResourceVersion())
	if err := c.Update(context.Background(), l); err != nil {
		t.Fatal(err)
	}
}

// An applied Call's wait runs from the leader's first sight of it (its
// creation timestamp counts whole seconds), a queued REST call's from its
// acceptance.
func TestAssignmentWaitRunsFromFirstSight(t *testing.T) {
	applied := call("applied", "", "", func(c *switchboardv1.Call) {
		c.UID = types.UID("applied")
		c.CreationTimestamp.Time = start.Add(time.Second) // truncated: created within that second
	})
	queued := call("queued", "", "", func(c *switchboardv1.Call) {
		c.UID = types.UID("queued")
		c.Annotations = map[string]string{switchboardv1.AcceptedAtAnnotation: start.Add(900 * time.Millisecond).Format(time.RFC3339Nano)}
	})
	c, pool, clk := cluster(t, lease("w", 10, 0, start, false), applied, queued)
	var waited []time.Duration
	a := &workers.Assigner{Client: c, Pool: pool, Self: "leader", Retry: time.Second, Clock: clk,
		Assigned: func(d time.Duration) { waited = append(waited, d) }}
	clk.SetTime(start.Add(1700 * time.Millisecond))
	for _, o := range []client.Object{applied, queued} {
		if !a.Sighted().Create(event.CreateEvent{Object: o}) {
			t.Fatalf("%s: filtered out, want it assigned", o.GetName())
		}
	}
	if a.Sighted().Create(event.CreateEvent{Object: call("born-assigned", "w", "")}) {
		t.Error("a Call created with its worker went to the assigner")
	}
	clk.SetTime(start.Add(1730 * time.Millisecond))
	for _, name := range []string{"applied", "queued"} {
		if _, err := a.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "org", Name: name}}); err != nil {
			t.Fatal(err)
		}
		if got := get(t, c, name).Labels[workers.Label]; got != "w" {
			t.Fatalf("%s went to %q, want w", name, got)
		}
	}
	if len(waited) != 2 || waited[0] != 30*time.Millisecond || waited[1] != 830*time.Millisecond {
		t.Fatalf("waits observed %v, want [30ms 830ms]", waited)
	}
}

// patchSeenAway is a client whose Patch delivers, before it returns, the
// delete event a sharded cache sends when a Call labelled for another
// worker leaves it.
type patchSeenAway struct {
	client.Client
	leave func(client.Object)
}

func (p patchSeenAway) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	err := p.Client.Patch(ctx, obj, patch, opts...)
	p.leave(obj)
	return err
}

// A Call assigned to another worker leaves the leader's cache at once;
// its wait still runs from the leader's first sight, not from its
// whole-second creation timestamp.
func TestAssignmentWaitSurvivesTheCallLeavingTheCache(t *testing.T) {
	applied := call("applied", "", "", func(c *switchboardv1.Call) {
		c.UID = types.UID("applied")
		c.CreationTimestamp.Time = start.Add(time.Second)
	})
	c, pool, clk := cluster(t, lease("w", 10, 0, start, false), applied)
	var waited []time.Duration
	a := &workers.Assigner{Pool: pool, Self: "leader", Retry: time.Second, Clock: clk,
		Assigned: func(d time.Duration) { waited = append(waited, d) }}
	a.Client = patchSeenAway{Client: c, leave: func(o client.Object) { a.Sighted().Delete(event.DeleteEvent{Object: o}) }}
	clk.SetTime(start.Add(1700 * time.Millisecond))
	a.Sighted().Create(event.CreateEvent{Object: applied})
	clk.SetTime(start.Add(1730 * time.Millisecond))
	if _, err := a.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "org", Name: "applied"}}); err != nil {
		t.Fatal(err)
	}
	if len(waited) != 1 || waited[0] != 30*time.Millisecond {
		t.Fatalf("waits observed %v, want [30ms]", waited)
	}
}
