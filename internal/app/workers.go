package app

import (
	"cmp"
	"context"
	"os"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/workers"
)

// Every replica is a call worker (package workers): it carries the calls
// assigned to it. The leader assigns the calls that came without a worker
// and moves those of lost workers.

// withDefaults fills what a program (a test, say) left zero. A program
// that leaves DrainTimeout zero stops at once, as before workers drained.
func workerDefaults(o workers.Options) workers.Options {
	d := workers.DefaultOptions()
	o.ID = cmp.Or(o.ID, d.ID)
	o.Capacity = cmp.Or(o.Capacity, d.Capacity)
	o.Lease = cmp.Or(o.Lease, d.Lease)
	return o
}

// workerNamespace holds the workers' Leases: the leader election's, else
// the pod's own, else the namespace the manifests install into (a process
// outside a cluster: the leader-election Role is there).
func workerNamespace(opts Options) string {
	if opts.LeaderElection.Namespace != "" {
		return opts.LeaderElection.Namespace
	}
	if ns, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
		return strings.TrimSpace(string(ns))
	}
	return DefaultNamespace
}

// DefaultNamespace is where config/default installs Switchboard.
const DefaultNamespace = "switchboard-system"

// callWorker is this replica's part: its Lease and its drain.
type callWorker struct {
	heartbeat *workers.Heartbeat
	drainer   *workers.Drainer
}

// setupWorkers returns the pool placements assign from, and, when this
// process runs reconcilers, registers it as a worker: its heartbeat on
// every replica, the assigner and the sweep of lost workers on the leader.
func setupWorkers(ctx context.Context, mgr manager.Manager, opts Options) (*workers.Pool, *callWorker, error) {
	ns := workerNamespace(opts)
	// The Leases are read from the cache; it watches them in this one
	// namespace (cacheOptions), the one the leader-election Role covers.
	leases, err := mgr.GetCache().GetInformer(ctx, &coordinationv1.Lease{})
	if err != nil {
		return nil, nil, err
	}
	pool := &workers.Pool{Reader: mgr.GetClient(), Namespace: ns, Clock: clock.RealClock{}}
	if !opts.Reconcilers {
		return pool, nil, nil
	}
	o, log := opts.Worker, opts.Log.WithName("workers")
	load := func(ctx context.Context) (workers.Load, error) { return workers.Count(ctx, mgr.GetClient(), o.ID) }
	hb := &workers.Heartbeat{Client: mgr.GetClient(), Namespace: ns, Name: o.ID, Capacity: o.Capacity, Lease: o.Lease,
		Load: func() workers.Load {
			l, err := load(context.Background())
			if err != nil {
				log.Error(err, "counting this worker's calls")
			}
			return l
		},
		Clock: clock.RealClock{}, Log: log}
	if err := mgr.Add(hb); err != nil {
		return nil, nil, err
	}
	// The Lease says what the worker carries per organization, for the
	// other replicas' active-calls limits: rewritten when its calls change
	// (at most once a second), not only at each renewal.
	calls, err := mgr.GetCache().GetInformer(ctx, &switchboardv1.Call{})
	if err != nil {
		return nil, nil, err
	}
	changed := func(obj any) {
		if c, ok := obj.(*switchboardv1.Call); ok && c.Labels[workers.Label] == o.ID {
			hb.Changed()
		}
	}
	if _, err := calls.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: changed,
		UpdateFunc: func(_, obj any) { changed(obj) },
		DeleteFunc: func(obj any) {
			if gone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = gone.Obj
			}
			changed(obj)
		}}); err != nil {
		return nil, nil, err
	}
	registerCollector("worker", hb.Collector())
	sweeper := &workers.Sweeper{Client: mgr.GetClient(), Live: mgr.GetAPIReader(), Pool: pool, Self: o.ID, Interval: o.Lease / 3,
		Clock: clock.RealClock{}, Log: log}
	if err := mgr.Add(sweeper); err != nil {
		return nil, nil, err
	}
	// A worker that stopped deleted its Lease: its calls move at once,
	// not at the next sweep.
	if _, err := leases.AddEventHandler(toolscache.ResourceEventHandlerFuncs{DeleteFunc: func(any) { sweeper.Nudge() }}); err != nil {
		return nil, nil, err
	}
	assigner := &workers.Assigner{Client: mgr.GetClient(), Pool: pool, Self: o.ID, Retry: time.Second,
		Clock: clock.RealClock{}, Assigned: workers.ObserveAssignment}
	if err := assigner.SetupWithManager(mgr); err != nil {
		return nil, nil, err
	}
	drainer := &workers.Drainer{Heartbeat: hb, Timeout: o.DrainTimeout, Poll: 250 * time.Millisecond,
		Clock: clock.RealClock{}, Log: log,
		Unprocessed: func(ctx context.Context) (int, error) {
			l, err := load(ctx)
			return l.Unprocessed, err
		}}
	return pool, &callWorker{heartbeat: hb, drainer: drainer}, nil
}

// newWorkerManager builds the manager, and makes this process a worker
// when it runs reconcilers (setupWorkers).
func newWorkerManager(ctx context.Context, cfg *rest.Config, opts Options) (manager.Manager, *workers.Pool, *callWorker, error) {
	mgr, err := newManager(cfg, opts)
	if err != nil {
		return nil, nil, nil, err
	}
	pool, worker, err := setupWorkers(ctx, mgr, opts)
	return mgr, pool, worker, err
}

// drained is mgr, draining on stop when this process is a worker that
// drains.
func (w *callWorker) drained(mgr manager.Manager, o workers.Options) manager.Manager {
	if w == nil || o.DrainTimeout <= 0 {
		return mgr
	}
	return &drainingManager{Manager: mgr, drainer: w.drainer}
}

// drainingManager is the manager of a worker that drains: when its
// context ends (SIGTERM), the replica first stops taking calls and lets
// its calls finish, bounded by the drain timeout, and only then stops the
// manager, which hangs up what is left.
type drainingManager struct {
	manager.Manager
	drainer *workers.Drainer
}

// Start runs the manager until ctx ends and the drain is over.
func (m *drainingManager) Start(ctx context.Context) error {
	inner, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- m.Manager.Start(inner) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	m.drainer.Drain(inner)
	stop()
	return <-errc
}
