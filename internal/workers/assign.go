package workers

import (
	"context"
	"errors"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrl "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// Assigners is how many calls the leader assigns at once. Each assignment
// is one patch, a few ms on an idle apiserver and far more on a loaded
// one: at 100 calls/s with every call's life on the same two cores, one at
// a time fell 5 s behind at p99 and 16 at once 1.7 s (hack/benchmarks.md,
// "Assigning calls to workers"). The Pool reserves each worker's room as
// it picks, so they never overfill one.
const Assigners = 16

// Assigner runs on the leader: it assigns the Calls that have no worker,
// those applied with kubectl (or by a campaign) and those the REST API
// queued while no worker had room. A queued one goes to the least-loaded
// live worker with room, and waits while none has; any other (a refused
// call to record, one from before workers existed) goes to this replica,
// as what is left of it is cheap.
type Assigner struct {
	Client client.Client
	Pool   *Pool
	Self   string
	// Retry is how soon a call is tried again when no worker has room.
	Retry time.Duration
	Clock clock.PassiveClock
	// Assigned observes how long each call waited for its worker.
	Assigned func(time.Duration)

	// seen is when the leader first saw each unassigned Call applied
	// without an acceptance time: its creation timestamp counts whole
	// seconds only, too coarse for a wait of milliseconds.
	seen sync.Map // the Call's UID → time.Time
}

// Reconcile assigns one Call.
func (a *Assigner) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var c switchboardv1.Call
	if err := a.Client.Get(ctx, req.NamespacedName, &c); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if c.Labels[Label] != "" {
		a.seen.Delete(c.UID)
		return reconcile.Result{}, nil
	}
	r := Reservation{Worker: a.Self}
	if c.CurrentPhase() == switchboardv1.CallQueued {
		picked, err := a.Pool.Reserve(ctx)
		if errors.Is(err, ErrNoCapacity) {
			return reconcile.Result{RequeueAfter: a.Retry}, nil
		} else if err != nil {
			return reconcile.Result{}, err
		}
		r = picked
	}
	// Read before the patch: once labelled for another worker, the Call
	// leaves this replica's cache, and that delete event may forget its
	// first sight before the patch returns.
	since := a.waitingSince(&c)
	if err := Assign(ctx, a.Client, &c, r.Worker); err != nil {
		a.Pool.Release(r)
		if apierrors.IsConflict(err) {
			return reconcile.Result{}, nil // changed meanwhile: its update brings it back, if still unassigned
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if a.Assigned != nil {
		a.Assigned(a.Clock.Since(since))
	}
	a.seen.Delete(c.UID)
	return reconcile.Result{}, nil
}

// seenLag is how much later than its creation timestamp the leader may
// first see a Call and still count its wait from that sight: more, and it
// was there before this leader (or its watch), and the timestamp, at most
// a second short, is the better measure.
const seenLag = 2 * time.Second

// waitingSince is when c started waiting for its worker: the REST API's
// acceptance time, else when the leader first saw it.
func (a *Assigner) waitingSince(c *switchboardv1.Call) time.Time {
	if _, ok := c.Annotations[switchboardv1.AcceptedAtAnnotation]; ok {
		return c.QueueOrder()
	}
	if v, ok := a.seen.Load(c.UID); ok {
		if at := v.(time.Time); at.Sub(c.CreationTimestamp.Time) <= seenLag {
			return at
		}
	}
	return c.CreationTimestamp.Time
}

// sighted selects the Calls that have no worker, and notes when each was
// first seen (in the informer's handler, before it waits in the queue).
func (a *Assigner) sighted() predicate.Predicate {
	unassigned := func(o client.Object) bool { return o.GetLabels()[Label] == "" }
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool {
			if !unassigned(e.Object) {
				return false
			}
			a.seen.LoadOrStore(e.Object.GetUID(), a.Clock.Now())
			return true
		},
		UpdateFunc: func(e event.UpdateEvent) bool { return unassigned(e.ObjectNew) },
		DeleteFunc: func(e event.DeleteEvent) bool {
			a.seen.Delete(e.Object.GetUID())
			return false
		},
		GenericFunc: func(e event.GenericEvent) bool { return unassigned(e.Object) },
	}
}

// SetupWithManager registers the assigner; it runs on the leader only.
func (a *Assigner) SetupWithManager(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		For(&switchboardv1.Call{}, builder.WithPredicates(a.sighted())).
		WithOptions(ctrl.Options{NeedLeaderElection: ptr.To(true), MaxConcurrentReconciles: Assigners}).
		Named("call-assigner").
		Complete(a)
}
