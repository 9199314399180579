package workers_test

import (
	"context"
	"errors"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-dev/switchboard/internal/testsupport"
	"github.com/switchboard-dev/switchboard/internal/workers"
)

// A worker's heartbeat, against a real apiserver: its Lease appears with
// its capacity, follows its load, says when it drains (and the pool then
// assigns it nothing), and goes when the worker stops.
func TestHeartbeat(t *testing.T) {
	testsupport.Needs(t, "a control plane (kube-apiserver and etcd)")
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	cp, err := testsupport.StartControlPlane("../..", scheme)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	ns := cp.NewNamespace(t, "switchboard-system-")
	var active atomic.Int64
	hb := &workers.Heartbeat{Client: cp.Client, Namespace: ns, Name: "switchboard-7d9f-abcde", Capacity: 8,
		Load: func() workers.Load {
			n := int(active.Load())
			return workers.Load{Live: n, AsOf: uint64(40 + n),
				Organizations: map[string]workers.OrganizationCalls{"acme": {Queued: 1, Live: max(n-1, 0)}}}
		}, Lease: 3 * time.Second, Clock: clock.RealClock{}, Log: logr.Discard()}
	p := &workers.Pool{Reader: cp.Client, Namespace: ns, Clock: clock.RealClock{}}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- hb.Start(ctx) }()
	t.Cleanup(stop)

	waitFor(t, p, "alive with room for 8", func(w workers.Worker) bool { return w.Alive(time.Now()) && w.Capacity == 8 && w.Active == 0 })
	if w, err := p.Pick(context.Background()); err != nil || w != hb.Name {
		t.Fatalf("Pick: %q, %v; want the worker", w, err)
	}
	active.Store(5)
	hb.Renew()
	waitFor(t, p, "carrying 5", func(w workers.Worker) bool { return w.Active == 5 })
	// Another replica reads what the worker carries per organization; the
	// worker itself, and an organization it carries nothing of, read as
	// nothing.
	others := &workers.Elsewhere{Reader: cp.Client, Namespace: ns, Self: "another", Clock: clock.RealClock{}}
	published, err := others.Calls(context.Background(), "acme")
	want := []workers.Published{{Worker: hb.Name, OrganizationCalls: workers.OrganizationCalls{Queued: 1, Live: 4}, AsOf: 45}}
	if err != nil || !reflect.DeepEqual(published, want) {
		t.Fatalf("the Lease of a worker carrying 5 says %+v, %v; want %+v", published, err, want)
	}
	if published, _ := others.Calls(context.Background(), "globex"); len(published) != 1 || published[0].Queued+published[0].Live != 0 {
		t.Fatalf("an organization the worker carries nothing of: %+v", published)
	}
	self := &workers.Elsewhere{Reader: cp.Client, Namespace: ns, Self: hb.Name, Clock: clock.RealClock{}}
	if published, _ := self.Calls(context.Background(), "acme"); len(published) != 0 {
		t.Fatalf("the worker itself reads its own Lease: %+v", published)
	}
	hb.Drain()
	waitFor(t, p, "draining", func(w workers.Worker) bool { return w.Draining })
	if _, err := p.Pick(context.Background()); !errors.Is(err, workers.ErrNoCapacity) {
		t.Fatalf("Pick with the only worker draining: %v, want ErrNoCapacity", err)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Start: %v", err)
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: workers.LeaseName(hb.Name)}}
	if err := cp.Client.Get(context.Background(), client.ObjectKeyFromObject(lease), lease); !apierrors.IsNotFound(err) {
		t.Fatalf("a stopped worker's Lease: %v, want it deleted", err)
	}

	// A change of the worker's calls is written without waiting for the
	// next renewal (here 40 s away, past waitFor's 30 s).
	ns = cp.NewNamespace(t, "switchboard-system-")
	hb = &workers.Heartbeat{Client: cp.Client, Namespace: ns, Name: "switchboard-7d9f-fghij", Capacity: 8,
		Load: func() workers.Load { return workers.Load{Live: int(active.Load())} }, Lease: 2 * time.Minute,
		Clock: clock.RealClock{}, Log: logr.Discard()}
	p = &workers.Pool{Reader: cp.Client, Namespace: ns, Clock: clock.RealClock{}}
	ctx, stop = context.WithCancel(context.Background())
	t.Cleanup(stop)
	go func() { done <- hb.Start(ctx) }()
	waitFor(t, p, "carrying 5", func(w workers.Worker) bool { return w.Active == 5 })
	active.Store(3)
	hb.Changed()
	waitFor(t, p, "carrying 3 after a change", func(w workers.Worker) bool { return w.Active == 3 })
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Start: %v", err)
	}
}

// waitFor waits until the pool's only worker is as described.
func waitFor(t *testing.T, p *workers.Pool, what string, ok func(workers.Worker) bool) {
	t.Helper()
	var last []workers.Worker
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		ws, err := p.Workers(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(ws) == 1 && ok(ws[0]) {
			return
		}
		last = ws
	}
	t.Fatalf("the worker never was %s: %+v", what, last)
}
