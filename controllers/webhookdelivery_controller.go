package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrl "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/deliveries"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/recording"
	"github.com/switchboard-dev/switchboard/internal/webhook"
)

// orderingWait bounds how long a call's event waits for the first attempt
// of the call's earlier events to the same endpoint.
const (
	orderingWait  = 30 * time.Second
	orderingRetry = 20 * time.Millisecond
	// stateRetry is how soon a delivery looks again for its call's state.
	stateRetry = 10 * time.Millisecond
)

// WebhookDeliveryReconciler sends each WebhookDelivery to its endpoint,
// signed, and retries it on the schedule until the receiver answers 2xx,
// the schedule runs out, or the receiver answers 410 Gone (which disables
// the endpoint). Every attempt is recorded in the delivery's status before
// the next one is planned, so a restart resumes the schedule where it was;
// an attempt whose record was lost to a crash is made again with the same
// delivery id (at least once).
type WebhookDeliveryReconciler struct {
	client.Client
	// Secrets reads signing Secrets (deliveries.SecretReader).
	Secrets    deliveries.SecretReader
	Sender     *webhook.Sender
	Recordings recording.Store
	Schedule   webhook.Schedule
	// Retention is how long finished deliveries are kept.
	Retention time.Duration
	Health    *deliveries.Health
	// History holds the calls that have left the cluster.
	History history.Store
	Events  events.EventRecorder
	Clock   clock.PassiveClock
	// MaxConcurrent bounds attempts in flight (each may wait for its
	// receiver up to the timeout).
	MaxConcurrent int
	// Live reads a delivery the cache has not caught up on.
	Live client.Reader

	writes ownWrites
}

// +kubebuilder:rbac:groups=switchboard.dev,resources=webhookdeliveries,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=switchboard.dev,resources=webhookdeliveries/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=switchboard.dev,resources=webhookendpoints,verbs=get;list;watch;patch

// Reconcile makes the delivery's next attempt when it is due.
func (r *WebhookDeliveryReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var d switchboardv1.WebhookDelivery
	if err := r.Get(ctx, req.NamespacedName, &d); err != nil {
		r.writes.forget(req.NamespacedName)
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if err := r.writes.refresh(ctx, r.Live, &d); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	now := r.Clock.Now()
	manual := retryRequested(&d)
	switch {
	case d.Spec.Event == webhook.EventTest:
		// Sent once by the REST API; only retention applies.
		return r.expire(ctx, &d, now)
	case d.CurrentPhase() != switchboardv1.DeliveryPending && !manual:
		return r.expire(ctx, &d, now)
	case !manual && d.Status.NextAttemptAt != nil && now.Before(d.Status.NextAttemptAt.Time):
		return reconcile.Result{RequeueAfter: d.Status.NextAttemptAt.Sub(now)}, nil
	}
	return r.attempt(ctx, &d, manual)
}

func retryRequested(d *switchboardv1.WebhookDelivery) bool {
	asked := d.Annotations[switchboardv1.DeliveryRetryAnnotation]
	return asked != "" && asked != d.Status.RetryHandled
}

func (r *WebhookDeliveryReconciler) attempt(ctx context.Context, d *switchboardv1.WebhookDelivery, manual bool) (reconcile.Result, error) {
	patch := client.MergeFrom(d.DeepCopy())
	var ep switchboardv1.WebhookEndpoint
	if err := r.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: d.Spec.EndpointRef.Name}, &ep); apierrors.IsNotFound(err) {
		return r.abandon(ctx, d, patch, "the webhook endpoint was deleted")
	} else if err != nil {
		return reconcile.Result{}, err
	}
	if ep.Spec.Disabled && !manual {
		return r.abandon(ctx, d, patch, "the webhook endpoint is disabled")
	}
	call, err := r.call(ctx, d)
	if errors.Is(err, history.ErrNotFound) {
		// Neither in the cluster nor archived: deleted by hand before it
		// was archived. The delivery is left as it is, for the log.
		return reconcile.Result{}, nil
	} else if err != nil {
		return reconcile.Result{}, err
	}
	if !slices.Contains(deliveries.DueEvents(call), d.Spec.Event) {
		return r.waitForState(ctx, d, call, patch)
	}
	if !manual && d.Status.ScheduledAttempts == 0 {
		if wait := r.waitForEarlier(ctx, d, call, &ep); wait > 0 {
			return reconcile.Result{RequeueAfter: wait}, nil
		}
	}
	res, sentAt := r.send(ctx, d, call, &ep)
	trigger := switchboardv1.TriggerScheduled
	if manual {
		trigger = switchboardv1.TriggerManual
		d.Status.RetryHandled = d.Annotations[switchboardv1.DeliveryRetryAnnotation]
	}
	outcome := deliveries.Record(&d.Status, res, sentAt, trigger, r.Schedule)
	// Observed before the write whose watch event wakes the endpoint's
	// reconciler, so that it finds the result.
	r.Health.Observe(types.NamespacedName{Namespace: ep.Namespace, Name: ep.Name}, sentAt, res.Succeeded(),
		deliveries.ResultText(res))
	if err := r.Status().Patch(ctx, d, patch); err != nil {
		return reconcile.Result{}, fmt.Errorf("recording attempt: %w", err)
	}
	r.writes.record(d)
	if err := r.afterAttempt(ctx, d, &ep, outcome); err != nil {
		return reconcile.Result{}, err
	}
	return r.next(d, r.Clock.Now())
}

// call reads the delivery's call: the Call while it is in the cluster, its
// record in the history store after it has left.
func (r *WebhookDeliveryReconciler) call(ctx context.Context, d *switchboardv1.WebhookDelivery) (*switchboardv1.Call, error) {
	var call switchboardv1.Call
	err := r.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: d.Spec.CallRef.Name}, &call)
	if !apierrors.IsNotFound(err) {
		return &call, err
	}
	return r.History.GetCall(ctx, d.Namespace, d.Spec.CallID)
}

// send makes one signed POST of the call as it is now. The attempt's time
// is taken when the request goes out, after the secrets and the body are
// ready, so that the retry schedule counts from the request.
func (r *WebhookDeliveryReconciler) send(ctx context.Context, d *switchboardv1.WebhookDelivery,
	call *switchboardv1.Call, ep *switchboardv1.WebhookEndpoint) (webhook.Result, time.Time) {
	secrets, err := r.signingSecrets(ctx, ep, r.Clock.Now())
	if err != nil {
		return webhook.Result{Err: err.Error()}, r.Clock.Now()
	}
	body, err := deliveries.Body(ctx, d.Spec.Event, call, r.Recordings)
	if err != nil {
		return webhook.Result{Err: "rendering the call: " + err.Error()}, r.Clock.Now()
	}
	sentAt := r.Clock.Now()
	return r.Sender.Send(ctx, webhook.Message{URL: ep.Spec.URL, DeliveryID: d.Spec.DeliveryID,
		Event: d.Spec.Event, Timestamp: sentAt, Body: body, Secrets: secrets}), sentAt
}

func (r *WebhookDeliveryReconciler) signingSecrets(ctx context.Context, ep *switchboardv1.WebhookEndpoint, now time.Time) ([]string, error) {
	var s corev1.Secret
	if err := r.Secrets.Get(ctx, client.ObjectKey{Namespace: ep.Namespace, Name: ep.SigningSecretName()}, &s); err != nil {
		return nil, fmt.Errorf("signing secret %s unavailable: %w", ep.SigningSecretName(), err)
	}
	return deliveries.SigningSecrets(&s, now)
}

// waitForState holds a delivery created just before its call's status was
// written (see CallReconciler) until the call is seen in that state. A call
// that finished without reaching it (the write was lost, and the retry took
// another turn) never will: the delivery is abandoned.
func (r *WebhookDeliveryReconciler) waitForState(ctx context.Context, d *switchboardv1.WebhookDelivery,
	call *switchboardv1.Call, patch client.Patch) (reconcile.Result, error) {
	if finished(call) {
		return r.abandon(ctx, d, patch, "the call never reached "+d.Spec.Event)
	}
	if r.Clock.Since(d.CreationTimestamp.Time) < 5*time.Second {
		return reconcile.Result{RequeueAfter: stateRetry}, nil
	}
	return reconcile.Result{RequeueAfter: time.Second}, nil
}

// waitForEarlier keeps a call's first attempts in lifecycle order per
// endpoint: an event waits until the earlier events' deliveries have been
// attempted once, but never longer than orderingWait, so a failing earlier
// event does not hold later ones back.
func (r *WebhookDeliveryReconciler) waitForEarlier(ctx context.Context, d *switchboardv1.WebhookDelivery,
	call *switchboardv1.Call, ep *switchboardv1.WebhookEndpoint) time.Duration {
	if r.Clock.Since(d.CreationTimestamp.Time) > orderingWait {
		return 0
	}
	for _, kind := range deliveries.Earlier(d.Spec.Event) {
		var earlier switchboardv1.WebhookDelivery
		key := client.ObjectKey{Namespace: d.Namespace, Name: deliveries.NameFor(call, kind, ep)}
		if err := r.Get(ctx, key, &earlier); err != nil {
			continue // none (not subscribed then, or never reached)
		}
		if earlier.Status.AttemptCount == 0 {
			return orderingRetry
		}
	}
	return 0
}

func (r *WebhookDeliveryReconciler) afterAttempt(ctx context.Context, d *switchboardv1.WebhookDelivery,
	ep *switchboardv1.WebhookEndpoint, outcome deliveries.Outcome) error {
	switch {
	case outcome.Gone:
		return disableEndpoint(ctx, r.Client, r.Events, ep, fmt.Sprintf(
			"The receiver answered 410 Gone to delivery %s at %s.", d.Spec.DeliveryID, r.Clock.Now().UTC().Format(time.RFC3339)))
	case outcome.Exhausted:
		r.Events.Eventf(ep, d, corev1.EventTypeWarning, "DeliveryFailed", "Deliver",
			"Delivery %s (%s of %s) failed: %s", d.Spec.DeliveryID, d.Spec.Event, d.Spec.CallID, d.Status.LastError)
	}
	return nil
}

func (r *WebhookDeliveryReconciler) abandon(ctx context.Context, d *switchboardv1.WebhookDelivery, patch client.Patch,
	reason string) (reconcile.Result, error) {
	deliveries.Abandon(&d.Status, r.Clock.Now(), reason)
	d.Status.RetryHandled = d.Annotations[switchboardv1.DeliveryRetryAnnotation]
	if err := r.Status().Patch(ctx, d, patch); err != nil {
		return reconcile.Result{}, err
	}
	r.writes.record(d)
	return r.next(d, r.Clock.Now())
}

// next schedules the delivery's next attempt, or its deletion.
func (r *WebhookDeliveryReconciler) next(d *switchboardv1.WebhookDelivery, now time.Time) (reconcile.Result, error) {
	if d.Status.Phase == switchboardv1.DeliveryPending && d.Status.NextAttemptAt != nil {
		return reconcile.Result{RequeueAfter: max(d.Status.NextAttemptAt.Sub(now), time.Millisecond)}, nil
	}
	return reconcile.Result{RequeueAfter: max(r.expiresAt(d).Sub(now), time.Second)}, nil
}

// expire deletes a finished delivery once the retention period is over.
func (r *WebhookDeliveryReconciler) expire(ctx context.Context, d *switchboardv1.WebhookDelivery, now time.Time) (reconcile.Result, error) {
	if at := r.expiresAt(d); now.Before(at) {
		return reconcile.Result{RequeueAfter: at.Sub(now)}, nil
	}
	r.writes.forget(client.ObjectKeyFromObject(d))
	return reconcile.Result{}, client.IgnoreNotFound(r.Delete(ctx, d))
}

func (r *WebhookDeliveryReconciler) expiresAt(d *switchboardv1.WebhookDelivery) time.Time {
	from := d.CreationTimestamp.Time
	if d.Status.CompletedAt != nil {
		from = d.Status.CompletedAt.Time
	}
	return from.Add(r.Retention)
}

// disableEndpoint stops deliveries to an endpoint, saying why. It is a
// spec change (as if its owner had disabled it) so that it lasts until
// someone re-enables the endpoint.
func disableEndpoint(ctx context.Context, c client.Client, rec events.EventRecorder, ep *switchboardv1.WebhookEndpoint, reason string) error {
	if ep.Spec.Disabled {
		return nil
	}
	patch := client.MergeFrom(ep.DeepCopy())
	ep.Spec.Disabled = true
	metav1.SetMetaDataAnnotation(&ep.ObjectMeta, switchboardv1.WebhookDisabledReasonAnnotation, reason)
	if err := c.Patch(ctx, ep, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("disabling endpoint %s: %w", ep.Name, err)
	}
	rec.Eventf(ep, nil, corev1.EventTypeWarning, "Disabled", "Disable", "%s", reason)
	return nil
}

// SetupWithManager registers the reconciler. Status writes requeue the
// delivery, which then finds its next attempt not yet due and waits.
func (r *WebhookDeliveryReconciler) SetupWithManager(mgr manager.Manager) error {
	if r.Sender == nil || r.Health == nil || r.Live == nil || r.History == nil {
		return errors.New("webhook delivery reconciler needs a sender, a health tracker, a live reader and the history store")
	}
	return builder.ControllerManagedBy(mgr).
		For(&switchboardv1.WebhookDelivery{}).
		WithOptions(ctrl.Options{MaxConcurrentReconciles: max(r.MaxConcurrent, 1)}).
		Named("webhookdelivery").
		Complete(r)
}
