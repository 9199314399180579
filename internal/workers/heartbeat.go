package workers

import (
	"context"
	"maps"
	"math"
	"strconv"
	"sync"
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
	// Load counts the calls the worker carries now (Count).
	Load func() Load
	// Lease is how long the Lease lasts unrenewed: how long a dead
	// worker's calls wait before they are declared lost.
	Lease time.Duration
	Clock clock.WithTicker
	Log   logr.Logger

	once     sync.Once
	draining atomic.Bool
	nudge    chan struct{}
	changed  chan struct{}
}

// MinRefresh is the shortest time between two writes of the Lease for a
// change of the worker's calls (Changed): the other replicas' view of its
// calls lags by at most that, at one small write a second under load.
const MinRefresh = time.Second

// NeedLeaderElection: every replica is a worker.
func (h *Heartbeat) NeedLeaderElection() bool { return false }

// Start renews the Lease until ctx ends, then deletes it: a worker that
// stops on purpose leaves at once rather than when its Lease lapses.
func (h *Heartbeat) Start(ctx context.Context) error {
	h.init()
	ticker := h.Clock.NewTicker(h.Lease / 3)
	defer ticker.Stop()
	renewal := true
	for {
		if err := h.renew(ctx, renewal); err != nil && ctx.Err() == nil {
			h.Log.Error(err, "renewing the worker's Lease", "worker", h.Name)
		}
		written := h.Clock.Now()
		select {
		case <-ctx.Done():
			return h.release()
		case <-ticker.C():
			renewal = true
		case <-h.nudge:
			renewal = true
		case <-h.changed:
			renewal = false
			select {
			case <-ctx.Done():
				return h.release()
			case <-h.Clock.After(written.Add(MinRefresh).Sub(h.Clock.Now())):
			}
		}
	}
}

func (h *Heartbeat) init() {
	h.once.Do(func() {
		h.nudge = make(chan struct{}, 1)
		h.changed = make(chan struct{}, 1)
	})
}

// Changed says the worker's calls changed: the Lease is written again,
// at most once a MinRefresh, if what it says of them changed.
func (h *Heartbeat) Changed() {
	h.init()
	select {
	case h.changed <- struct{}{}:
	default: // one is pending already
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

// renew writes the Lease: created the first time, updated after. Unless
// it is a renewal, it is written only if what it says changed.
func (h *Heartbeat) renew(ctx context.Context, renewal bool) error {
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
	said := lease.Annotations
	h.describe(&lease)
	if !renewal && maps.Equal(said, lease.Annotations) {
		return nil
	}
	return h.Client.Update(ctx, &lease)
}

// describe writes what the Lease says of the worker now.
func (h *Heartbeat) describe(l *coordinationv1.Lease) {
	load := h.Load()
	l.Labels = map[string]string{Label: "true"}
	l.Annotations = map[string]string{
		CapacityAnnotation:      strconv.Itoa(h.Capacity),
		ActiveAnnotation:        strconv.Itoa(load.Live),
		DrainingAnnotation:      strconv.FormatBool(h.draining.Load()),
		OrganizationsAnnotation: encodeOrganizations(load.Organizations),
		AsOfAnnotation:          strconv.FormatUint(load.AsOf, 10),
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
