package app

import (
	"cmp"
	"context"
	"os"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/manager"

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
