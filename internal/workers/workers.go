// Package workers spreads calls over the replicas. Every replica is a
// call worker: it holds a coordination.k8s.io Lease that says it is alive,
// how many calls it carries and how many it can carry, and whether it is
// draining (stopping: it takes no new calls). A call is assigned to one
// worker when it is admitted, the least loaded with room, and stays with it
// for its whole life. A worker whose Lease lapses is lost: its calls end
// (disconnection_reason worker_lost) and its queued calls move.
//
// The Leases are what Kubernetes offers for this (kube-controller-manager's
// node heartbeats and leader election use them); nothing here is a cluster
// protocol of its own. The apiserver sees one small write per worker per
// renewal, never one per call.
//
// Where each part runs: every replica runs its Heartbeat (its Lease) and
// its Drainer (finishing its calls when it stops); the Assigner (a controller of unassigned Calls) and the
// Sweeper of lost workers are leader-only jobs. The Calls themselves are
// reconciled by controllers.CallReconciler on the worker they are assigned
// to.
package workers

import (
	"runtime"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

const (
	// Label marks a Lease as a worker's ("true"), and names on a Call the
	// worker it is assigned to.
	Label = switchboardv1.WorkerLabel
	// CapacityAnnotation, ActiveAnnotation and DrainingAnnotation on a
	// worker's Lease: the calls it can carry, those it carries, and
	// "true" while it drains.
	CapacityAnnotation = "switchboard.dev/capacity"
	ActiveAnnotation   = "switchboard.dev/active-calls"
	DrainingAnnotation = "switchboard.dev/draining"
)

// CallsPerCPU is the default capacity of a worker per CPU: recorded calls
// with a scripted agent use a few percent of a core each (hack/benchmarks.md,
// the SIP benchmarks: 200 concurrent recorded calls on 2 cores), with room
// left for the REST API and speech.
const CallsPerCPU = 50

// DefaultCapacity is the capacity of a worker on this machine.
func DefaultCapacity() int { return CallsPerCPU * runtime.NumCPU() }

// Worker is one replica as its Lease describes it.
type Worker struct {
	Name     string
	Capacity int
	Active   int
	Draining bool
	// RenewedAt and Lease: the worker is alive until RenewedAt+Lease.
	RenewedAt time.Time
	Lease     time.Duration
}

// Alive: the worker renewed its Lease within its duration.
func (w Worker) Alive(now time.Time) bool {
	return !w.RenewedAt.IsZero() && now.Before(w.RenewedAt.Add(w.Lease))
}

// Room is how many more calls the worker can take.
func (w Worker) Room() int { return max(0, w.Capacity-w.Active) }

// FromLease reads a worker's Lease; ok is false for a Lease that is not a
// worker's or says nothing readable.
func FromLease(l *coordinationv1.Lease) (w Worker, ok bool) {
	if l.Labels[Label] != "true" || l.Spec.HolderIdentity == nil || l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return Worker{}, false
	}
	capacity, err1 := strconv.Atoi(l.Annotations[CapacityAnnotation])
	active, err2 := strconv.Atoi(l.Annotations[ActiveAnnotation])
	if err1 != nil || err2 != nil {
		return Worker{}, false
	}
	return Worker{Name: *l.Spec.HolderIdentity, Capacity: capacity, Active: active,
		Draining:  l.Annotations[DrainingAnnotation] == "true",
		RenewedAt: l.Spec.RenewTime.Time, Lease: time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second}, true
}

// LeaseName is the name of worker's Lease.
func LeaseName(worker string) string { return "switchboard-worker-" + worker }
