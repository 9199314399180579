package workers

import (
	"context"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Workers keep their Leases in the namespace the operator runs in, with
// the rights its leader-election Role gives there (config/rbac).

// Heartbeat keeps this replica's Lease: alive, its capacity and load, and
// whether it drains. It renews three times per lease duration, so one lost
// renewal never makes a live worker look lost.
type Heartbeat struct {
	Client    client.Client
	Namespace string
	// Name is the worker's: the pod's name, unique among the replicas.
	Name     string
	Capacity int
	// Active counts the calls the worker carries now.
	Active func() int
	// Lease is how long the Lease lasts unrenewed: how long a dead
	// worker's calls wait before they are declared lost.
	Lease time.Duration
	Clock clock.WithTicker
	Log   logr.Logger

	draining atomic.Bool
	nudge    chan struct{}
}

// NeedLeaderElection: every replica is a worker.
func (h *Heartbeat) NeedLeaderElection() bool { return false }

// Start renews the Lease until ctx ends, then deletes it: a worker that
// stops on purpose leaves at once rather than when its Lease lapses.
func (h *Heartbeat) Start(ctx context.Context) error {
	h.init()
	ticker := h.Clock.NewTicker(h.Lease / 3)
	defer ticker.Stop()
	for {
		if err := h.renew(ctx); err != nil && ctx.Err() == nil {
			h.Log.Error(err, "renewing the worker's Lease", "worker", h.Name)
		}
		select {
		case <-ctx.Done():
			return h.release()
		case <-ticker.C():
		case <-h.nudge:
		}
	}
}

func (h *Heartbeat) init() {
	if h.nudge == nil {
		h.nudge = make(chan struct{}, 1)
	}
}

// Drain marks the worker draining at once: it is assigned no new call.
func (h *Heartbeat) Drain() {
	h.draining.Store(true)
	h.Renew()
}

// Renew asks for a renewal now (the load changed a lot, say), without
// waiting for it.
func (h *Heartbeat) Renew() {
	h.init()
	select {
	case h.nudge <- struct{}{}:
	default: // one is pending already
	}
}

// renew writes the Lease: created the first time, updated after.
func (h *Heartbeat) renew(ctx context.Context) error {
	var lease coordinationv1.Lease
	err := h.Client.Get(ctx, client.ObjectKey{Namespace: h.Namespace, Name: LeaseName(h.Name)}, &lease)
	switch {
	case apierrors.IsNotFound(err):
		lease = coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: h.Namespace, Name: LeaseName(h.Name)}}
		h.describe(&lease)
		return h.Client.Create(ctx, &lease)
	case err != nil:
		return err
	}
	h.describe(&lease)
	return h.Client.Update(ctx, &lease)
}

// describe writes what the Lease says of the worker now.
func (h *Heartbeat) describe(l *coordinationv1.Lease) {
	l.Labels = map[string]string{Label: "true"}
	l.Annotations = map[string]string{
		CapacityAnnotation: strconv.Itoa(h.Capacity),
		ActiveAnnotation:   strconv.Itoa(h.Active()),
		DrainingAnnotation: strconv.FormatBool(h.draining.Load()),
	}
	now := metav1.NewMicroTime(h.Clock.Now())
	l.Spec.HolderIdentity = ptr.To(h.Name)
	l.Spec.LeaseDurationSeconds = ptr.To(leaseSeconds(h.Lease))
	l.Spec.RenewTime = &now
	if l.Spec.AcquireTime == nil {
		l.Spec.AcquireTime = &now
	}
}

// release deletes the Lease, within a bound of its own (ctx has ended).
func (h *Heartbeat) release() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: h.Namespace, Name: LeaseName(h.Name)}}
	return client.IgnoreNotFound(h.Client.Delete(ctx, lease))
}

// leaseSeconds is d in whole seconds as a Lease holds it, at least one.
func leaseSeconds(d time.Duration) int32 {
	s := d / time.Second
	switch {
	case s < 1:
		return 1
	case s > math.MaxInt32:
		return math.MaxInt32
	}
	return int32(s)
}

// Draining says whether the worker drains.
func (h *Heartbeat) Draining() bool { return h.draining.Load() }
