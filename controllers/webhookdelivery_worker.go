package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/recording"
	"github.com/switchboard-dev/switchboard/internal/webhook"
	"github.com/switchboard-dev/switchboard/internal/webhook/deliveries"
)

const (
	// orderingWait bounds how long a call's event waits for the first
	// attempt of the call's earlier events to the same endpoint.
	orderingWait  = 30 * time.Second
	orderingRetry = 20 * time.Millisecond
	// stateRetry is how soon a delivery looks again for its call's state.
	stateRetry = 10 * time.Millisecond
	// cacheWait bounds how long a delivery waits for the cache to show its
	// call's state before reading the call live; cachePoll is how often it
	// looks meanwhile.
	cacheWait = 2 * time.Second
	cachePoll = 20 * time.Millisecond
	// idlePoll bounds how long the worker sleeps: a retry asked on another
	// replica makes a delivery due without waking this one.
	idlePoll = time.Second
	// sweepInterval is how often finished deliveries past their retention
	// are removed.
	sweepInterval = time.Minute
	// claimInterval is the least time between two claims made for wakes:
	// every attempt that ends and every event queued wakes the worker, and
	// one claim a little later serves the whole burst (a claim costs the
	// same for one delivery as for a hundred). It is the most a delivery
	// waits for it.
	claimInterval = 20 * time.Millisecond
)

// WebhookDeliveryWorker sends the deliveries queued in the history store,
// signed, and retries each on the schedule until the receiver answers 2xx,
// the schedule runs out, or the receiver answers 410 Gone (which disables
// the endpoint). Every attempt is saved with the delivery before the next
// one is planned, so a restart resumes the schedule where it was; an
// attempt whose save was lost to a crash is made again with the same
// delivery id once its lease lapses (at least once). It runs on the leader.
type WebhookDeliveryWorker struct {
	// Client reads WebhookEndpoints and Calls (cache) and disables
	// endpoints.
	Client client.Client
	// Live reads a Call the cache has not caught up on.
	Live client.Reader
	// Secrets reads signing Secrets (deliveries.SecretReader).
	Secrets    deliveries.SecretReader
	Sender     *webhook.Sender
	Recordings recording.Store
	// Store holds the queue and log of deliveries, and the archived calls.
	Store    history.Store
	Schedule webhook.Schedule
	// Retention is how long finished deliveries are kept.
	Retention time.Duration
	Health    *deliveries.Health
	Events    events.EventRecorder
	Clock     clock.Clock
	// MaxConcurrent bounds attempts in flight (each may wait for its
	// receiver up to the timeout).
	MaxConcurrent int
	// InFlight bounds the attempts in flight of one organization and of
	// one endpoint, test sends included: the store claims due deliveries
	// round-robin across organizations within them (see
	// history.DeliveryLog.ClaimDeliveries), so a slow receiver holds only
	// its organization's share of the MaxConcurrent slots and delays only
	// that organization. Deliveries over a bound stay queued.
	InFlight history.InFlightLimits
	// Lease is how long a claimed delivery is this worker's: longer than
	// an attempt can take.
	Lease time.Duration
	Log   logr.Logger

	wakeOnce sync.Once
	wake     chan struct{}
}

// Wake makes the worker look for due deliveries now (one was queued or a
// retry was asked for).
func (w *WebhookDeliveryWorker) Wake() {
	select {
	case w.wakeChan() <- struct{}{}:
	default:
	}
}

func (w *WebhookDeliveryWorker) wakeChan() chan struct{} {
	w.wakeOnce.Do(func() { w.wake = make(chan struct{}, 1) })
	return w.wake
}

// NeedLeaderElection: one worker, on the leader, sends the deliveries.
func (w *WebhookDeliveryWorker) NeedLeaderElection() bool { return true }

// Start claims due deliveries and works on each in its own goroutine, at
// most MaxConcurrent at once, until ctx ends.
func (w *WebhookDeliveryWorker) Start(ctx context.Context) error {
	if w.Sender == nil || w.Health == nil || w.Store == nil {
		return errors.New("webhook delivery worker needs a sender, a health tracker and the history store")
	}
	slots := make(chan struct{}, max(w.MaxConcurrent, 1))
	var inFlight sync.WaitGroup
	defer inFlight.Wait()
	nextSweep := w.Clock.Now()
	for {
		if now := w.Clock.Now(); !now.Before(nextSweep) {
			w.sweep(ctx, now)
			// A short retention (a test's) is kept to the second.
			nextSweep = now.Add(min(sweepInterval, max(w.Retention, 100*time.Millisecond)))
		}
		claimedAt := w.Clock.Now()
		claimed := w.claim(ctx, claimedAt, cap(slots)-len(slots))
		for _, d := range claimed {
			slots <- struct{}{}
			inFlight.Add(1)
			go func() {
				defer inFlight.Done()
				defer func() { <-slots; w.Wake() }()
				w.work(ctx, d)
			}()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-w.wakeChan():
			if !w.coalesce(ctx, claimedAt) {
				return nil
			}
		case <-w.Clock.After(w.sleep(ctx, len(claimed) > 0, claimedAt)):
		}
	}
}

// coalesce waits, after a wake, until claimInterval has passed since the
// last claim, so that the wakes of a burst (attempts ending, events
// queued) are served by one claim; it reports false when ctx ended.
func (w *WebhookDeliveryWorker) coalesce(ctx context.Context, claimedAt time.Time) bool {
	wait := claimedAt.Add(claimInterval).Sub(w.Clock.Now())
	if wait <= 0 {
		return true
	}
	select {
	case <-ctx.Done():
		return false
	case <-w.Clock.After(wait):
	}
	// A wake that came meanwhile is served by the claim about to be made.
	select {
	case <-w.wakeChan():
	default:
	}
	return true
}

// claim leases up to free due deliveries, within the bounds per
// organization and endpoint; a store error is logged and the loop tries
// again later: deliveries wait, nothing is lost.
func (w *WebhookDeliveryWorker) claim(ctx context.Context, now time.Time, free int) []*history.Delivery {
	if free <= 0 {
		return nil
	}
	ds, err := w.Store.ClaimDeliveries(ctx, now, history.Claim{Limit: free, Lease: w.Lease, InFlight: w.InFlight})
	if err != nil && ctx.Err() == nil {
		w.Log.Error(err, "claiming webhook deliveries")
	}
	return ds
}

// sleep is how long to wait before looking again: claimInterval after a
// claim that found deliveries (there may be more); else until the next delivery
// is due or lease lapses after that claim, at most idlePoll. What was due
// and left unclaimed then waits for a bound to free up: an attempt ending
// here wakes the worker.
func (w *WebhookDeliveryWorker) sleep(ctx context.Context, busy bool, claimedAt time.Time) time.Duration {
	if busy {
		return claimInterval
	}
	next, ok, err := w.Store.NextDeliveryDue(ctx, claimedAt)
	if err != nil || !ok {
		return idlePoll
	}
	return min(max(next.Sub(w.Clock.Now()), time.Millisecond), idlePoll)
}

func (w *WebhookDeliveryWorker) sweep(ctx context.Context, now time.Time) {
	if _, err := w.Store.DeleteDeliveriesCompletedBefore(ctx, now.Add(-w.Retention)); err != nil && ctx.Err() == nil {
		w.Log.Error(err, "removing finished webhook deliveries past their retention")
	}
}

// work makes the delivery's next attempt, if it is due, and saves it with
// the time it is next due.
// The attempt is saved before what follows from it (disabling the
// endpoint, announcing the failure), so that those never tell of an attempt
// the log does not hold.
func (w *WebhookDeliveryWorker) work(ctx context.Context, d *history.Delivery) {
	log := w.Log.WithValues("namespace", d.Namespace, "deliveryID", d.Spec.DeliveryID)
	claimed := d.DeepCopy()
	due, after, err := w.process(ctx, d)
	if ctx.Err() != nil {
		// Stopping: an attempt cut short is no attempt. The delivery is
		// handed back as it was claimed, due at once, so the next leader
		// need not wait for the lease to lapse.
		d, due, after, err = claimed, w.Clock.Now(), nil, nil
	}
	if err != nil {
		log.Error(err, "webhook delivery")
		due = w.Clock.Now().Add(time.Second)
	}
	saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := w.Store.SaveDelivery(saveCtx, d, due); err != nil {
		// The lease lapses and the delivery is claimed again.
		log.Error(err, "saving webhook delivery")
		return
	}
	if after != nil {
		if err := after(ctx); err != nil {
			log.Error(err, "after a webhook delivery attempt")
		}
	}
}

// followUp is what an attempt's outcome does once the attempt is saved.
type followUp func(context.Context) error

func (w *WebhookDeliveryWorker) process(ctx context.Context, d *history.Delivery) (time.Time, followUp, error) {
	now := w.Clock.Now()
	manual := retryRequested(d)
	switch {
	case d.Spec.Event == webhook.EventTest && !manual && d.Status.AttemptCount == 0:
		// Reserved by a test send whose process died before it recorded
		// the result: its lease lapsed, and it is closed here.
		return w.abandon(d, "the test send was interrupted before its result was recorded")
	case d.Spec.Event == webhook.EventTest && !manual:
		return time.Time{}, nil, nil // sent once by the REST API
	case d.CurrentPhase() != history.DeliveryPending && !manual:
		return time.Time{}, nil, nil
	case !manual && d.Status.NextAttemptAt != nil && now.Before(d.Status.NextAttemptAt.Time):
		return d.Status.NextAttemptAt.Time, nil, nil
	}
	return w.attempt(ctx, d, manual)
}

func retryRequested(d *history.Delivery) bool {
	asked := d.Annotations[history.DeliveryRetryAnnotation]
	return asked != "" && asked != d.Status.RetryHandled
}

func (w *WebhookDeliveryWorker) attempt(ctx context.Context, d *history.Delivery, manual bool) (time.Time, followUp, error) {
	var ep switchboardv1.WebhookEndpoint
	err := w.Client.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: d.Spec.EndpointRef.Name}, &ep)
	switch {
	case apierrors.IsNotFound(err) || (err == nil && d.Spec.EndpointID != "" && ep.ResolvedID() != d.Spec.EndpointID):
		return w.abandon(d, "the webhook endpoint was deleted")
	case err != nil:
		return time.Time{}, nil, err
	case ep.Spec.Disabled && !manual:
		return w.abandon(d, "the webhook endpoint is disabled")
	}
	if d.Spec.Body != nil { // a campaign's event: its body was taken when it happened
		res, sentAt := w.sendBody(ctx, d, &ep, d.Spec.Body)
		return w.recorded(d, &ep, res, sentAt, manual)
	}
	call, err := w.call(ctx, d)
	if errors.Is(err, history.ErrNotFound) {
		// Neither in the cluster nor archived: deleted by hand before it
		// was archived. The delivery is left as it is, for the log.
		return time.Time{}, nil, nil
	} else if err != nil {
		return time.Time{}, nil, err
	}
	if !slices.Contains(deliveries.DueEvents(call), d.Spec.Event) {
		return w.waitForState(d, call)
	}
	if !manual && d.Status.ScheduledAttempts == 0 {
		if wait := w.waitForEarlier(ctx, d, call, &ep); wait > 0 {
			return w.Clock.Now().Add(wait), nil, nil
		}
	}
	res, sentAt := w.send(ctx, d, call, &ep)
	return w.recorded(d, &ep, res, sentAt, manual)
}

// recorded records an attempt's result and says what follows it.
func (w *WebhookDeliveryWorker) recorded(d *history.Delivery, ep *switchboardv1.WebhookEndpoint, res webhook.Result,
	sentAt time.Time, manual bool) (time.Time, followUp, error) {
	trigger := history.TriggerScheduled
	if manual {
		trigger = history.TriggerManual
		d.Status.RetryHandled = d.Annotations[history.DeliveryRetryAnnotation]
	}
	observeAttempt(d, res, sentAt.Add(res.Duration))
	outcome := deliveries.Record(&d.Status, res, sentAt, trigger, w.Schedule)
	w.Health.Observe(types.NamespacedName{Namespace: ep.Namespace, Name: ep.Name}, sentAt, res.Succeeded(),
		deliveries.ResultText(res))
	return nextDue(d), func(ctx context.Context) error { return w.afterAttempt(ctx, d, ep, outcome) }, nil
}

// call reads the delivery's call: the Call while it is in the cluster, its
// record in the history store after it has left. A delivery is queued just
// before its call's state is written, so the cache often lags behind it by
// a few milliseconds: a cached Call that has not reached the event is
// looked at again in the cache for a while (free) before it is read live
// (an apiserver request).
func (w *WebhookDeliveryWorker) call(ctx context.Context, d *history.Delivery) (*switchboardv1.Call, error) {
	key := client.ObjectKey{Namespace: d.Namespace, Name: d.Spec.CallRef.Name}
	var call switchboardv1.Call
	err := w.Client.Get(ctx, key, &call)
	if apierrors.IsNotFound(err) {
		// Most often the call has ended, been archived and left the
		// cluster (its retention is short beside a busy queue): the
		// store has it as it ended, without an apiserver request. The
		// worker that queued the event may also run on another replica,
		// whose cache saw the call before this one did: a call the store
		// does not have (or could not read) is read live before it is
		// taken to be gone.
		if archived, serr := w.Store.GetCall(ctx, d.Namespace, d.Spec.CallID); serr == nil {
			return archived, nil
		}
		if w.Live != nil {
			err = w.Live.Get(ctx, key, &call)
		}
	}
	if err == nil && !slices.Contains(deliveries.DueEvents(&call), d.Spec.Event) {
		err = w.awaitState(ctx, key, d.Spec.Event, &call)
	}
	if !apierrors.IsNotFound(err) {
		return &call, err
	}
	return w.Store.GetCall(ctx, d.Namespace, d.Spec.CallID)
}

// awaitState polls the cache until the call shows event, for at most
// cacheWait, then reads it live.
func (w *WebhookDeliveryWorker) awaitState(ctx context.Context, key client.ObjectKey, event string,
	call *switchboardv1.Call) error {
	deadline := w.Clock.Now().Add(cacheWait)
	for w.Clock.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-w.Clock.After(cachePoll):
		}
		err := w.Client.Get(ctx, key, call)
		if apierrors.IsNotFound(err) && w.Live != nil {
			// Another worker's call, which this replica's cache never
			// holds: read live, and looked at again soon (waitForState).
			return w.Live.Get(ctx, key, call)
		}
		if err != nil || slices.Contains(deliveries.DueEvents(call), event) {
			return err
		}
	}
	if w.Live == nil {
		return nil
	}
	return w.Live.Get(ctx, key, call)
}

// send makes one signed POST of the call as it is now. The attempt's time
// is taken when the request goes out, after the secrets and the body are
// ready, so that the retry schedule counts from the request.
func (w *WebhookDeliveryWorker) send(ctx context.Context, d *history.Delivery,
	call *switchboardv1.Call, ep *switchboardv1.WebhookEndpoint) (webhook.Result, time.Time) {
	body, err := deliveries.Body(ctx, d.Spec.Event, call, w.Recordings)
	if err != nil {
		return webhook.Result{Err: "rendering the call: " + err.Error()}, w.Clock.Now()
	}
	return w.sendBody(ctx, d, ep, body)
}

// sendBody makes one signed POST of a body taken beforehand.
func (w *WebhookDeliveryWorker) sendBody(ctx context.Context, d *history.Delivery,
	ep *switchboardv1.WebhookEndpoint, body []byte) (webhook.Result, time.Time) {
	secrets, err := w.signingSecrets(ctx, ep, w.Clock.Now())
	if err != nil {
		return webhook.Result{Err: err.Error()}, w.Clock.Now()
	}
	sentAt := w.Clock.Now()
	return w.Sender.Send(ctx, webhook.Message{URL: ep.Spec.URL, DeliveryID: d.Spec.DeliveryID,
		Event: d.Spec.Event, Timestamp: sentAt, Body: body, Secrets: secrets}), sentAt
}

func (w *WebhookDeliveryWorker) signingSecrets(ctx context.Context, ep *switchboardv1.WebhookEndpoint, now time.Time) ([]string, error) {
	var s corev1.Secret
	if err := w.Secrets.Get(ctx, client.ObjectKey{Namespace: ep.Namespace, Name: ep.SigningSecretName()}, &s); err != nil {
		return nil, fmt.Errorf("signing secret %s unavailable: %w", ep.SigningSecretName(), err)
	}
	return deliveries.SigningSecrets(&s, now)
}

// waitForState holds a delivery queued just before its call's status was
// written (see CallReconciler) until the call is seen in that state. A call
// that finished without reaching it (the write was lost, and the retry took
// another turn) never will: the delivery is abandoned.
func (w *WebhookDeliveryWorker) waitForState(d *history.Delivery, call *switchboardv1.Call) (time.Time, followUp, error) {
	if finished(call) {
		return w.abandon(d, "the call never reached "+d.Spec.Event)
	}
	if w.Clock.Since(d.CreationTimestamp.Time) < 5*time.Second {
		return w.Clock.Now().Add(stateRetry), nil, nil
	}
	return w.Clock.Now().Add(time.Second), nil, nil
}

// waitForEarlier keeps a call's first attempts in lifecycle order per
// endpoint: an event waits until the earlier events' deliveries have been
// attempted once, but never longer than orderingWait, so a failing earlier
// event does not hold later ones back.
func (w *WebhookDeliveryWorker) waitForEarlier(ctx context.Context, d *history.Delivery,
	call *switchboardv1.Call, ep *switchboardv1.WebhookEndpoint) time.Duration {
	if w.Clock.Since(d.CreationTimestamp.Time) > orderingWait {
		return 0
	}
	for _, kind := range deliveries.Earlier(d.Spec.Event) {
		earlier, err := w.Store.GetDelivery(ctx, d.Namespace, deliveries.IDFor(call, kind, ep))
		if err != nil {
			continue // none (not subscribed then, or never reached)
		}
		if earlier.Status.AttemptCount == 0 {
			return orderingRetry
		}
	}
	return 0
}

func (w *WebhookDeliveryWorker) afterAttempt(ctx context.Context, d *history.Delivery,
	ep *switchboardv1.WebhookEndpoint, outcome deliveries.Outcome) error {
	switch {
	case outcome.Gone:
		return disableEndpoint(ctx, w.Client, w.Events, ep, fmt.Sprintf(
			"The receiver answered 410 Gone to delivery %s at %s.", d.Spec.DeliveryID, w.Clock.Now().UTC().Format(time.RFC3339)))
	case outcome.Exhausted:
		w.Events.Eventf(ep, nil, corev1.EventTypeWarning, "DeliveryFailed", "Deliver",
			"Delivery %s (%s of %s) failed: %s", d.Spec.DeliveryID, d.Spec.Event, d.Spec.CallID, d.Status.LastError)
	}
	return nil
}

// abandon ends a delivery without an attempt (its endpoint is gone or
// disabled, or its call will never reach its event).
func (w *WebhookDeliveryWorker) abandon(d *history.Delivery, reason string) (time.Time, followUp, error) {
	deliveries.Abandon(&d.Status, w.Clock.Now(), reason)
	d.Status.RetryHandled = d.Annotations[history.DeliveryRetryAnnotation]
	return time.Time{}, nil, nil
}

// nextDue is when a delivery's next scheduled attempt is due; zero when
// it is finished.
func nextDue(d *history.Delivery) time.Time {
	if d.Status.Phase == history.DeliveryPending && d.Status.NextAttemptAt != nil {
		return d.Status.NextAttemptAt.Time
	}
	return time.Time{}
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
