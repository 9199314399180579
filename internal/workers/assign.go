package workers

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrl "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

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
}

// Reconcile assigns one Call.
func (a *Assigner) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var c switchboardv1.Call
	if err := a.Client.Get(ctx, req.NamespacedName, &c); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if c.Labels[Label] != "" {
		return reconcile.Result{}, nil
	}
	to := a.Self
	if c.CurrentPhase() == switchboardv1.CallQueued {
		picked, err := a.Pool.Pick(ctx)
		if errors.Is(err, ErrNoCapacity) {
			return reconcile.Result{RequeueAfter: a.Retry}, nil
		} else if err != nil {
			return reconcile.Result{}, err
		}
		to = picked
	}
	if err := Assign(ctx, a.Client, &c, to); err != nil {
		if apierrors.IsConflict(err) {
			return reconcile.Result{}, nil // changed meanwhile: its update brings it back, if still unassigned
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if a.Assigned != nil {
		a.Assigned(a.Clock.Since(c.QueueOrder()))
	}
	return reconcile.Result{}, nil
}

// Unassigned selects the Calls that have no worker.
func Unassigned() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetLabels()[Label] == "" })
}

// SetupWithManager registers the assigner; it runs on the leader only.
func (a *Assigner) SetupWithManager(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		For(&switchboardv1.Call{}, builder.WithPredicates(Unassigned())).
		// One assignment at a time: with 16 in flight, BenchmarkAssignment
		// at 100 calls/s left most calls unassigned after a minute (not
		// explained yet, see hack/README.md); with one, every call was
		// assigned.
		WithOptions(ctrl.Options{NeedLeaderElection: ptr.To(true)}).
		Named("call-assigner").
		Complete(a)
}
