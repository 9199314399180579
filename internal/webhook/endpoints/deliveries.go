package endpoints

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/webhook"
	"github.com/switchboard-dev/switchboard/internal/webhook/deliveries"
)

// Tested is the result of a test event: its delivery id and what the
// receiver answered.
type Tested struct {
	DeliveryID string
	Result     webhook.Result
}

// Test sends one sample event of kind to ep, signed with its real
// secrets, and records it in the delivery log as a test delivery. It waits
// for the receiver: at most the sender's timeout. Disabled endpoints can be
// tested too (before re-enabling them, say). A refused URL is a
// *egress.URLError: nothing is sent or recorded.
func (s *Service) Test(ctx context.Context, cached *switchboardv1.WebhookEndpoint, kind string) (*Tested, error) {
	ep, err := s.live(ctx, cached)
	if err != nil {
		return nil, err
	}
	if err := s.CheckURL(ctx, ep.Spec.URL); err != nil {
		return nil, err
	}
	now := s.now()
	secrets, err := s.signingSecrets(ctx, ep, now)
	if err != nil {
		return nil, err
	}
	payload, err := deliveries.SampleBody(kind, now)
	if err != nil {
		return nil, &Unavailable{What: "The test event could not be built", Err: err}
	}
	d := deliveries.ForTest(ep)
	if err := s.reserveTestSend(ctx, d, now); err != nil {
		return nil, err
	}
	res := s.Sender.Send(ctx, webhook.Message{URL: ep.Spec.URL, DeliveryID: d.Spec.DeliveryID,
		Event: kind, Timestamp: now, Body: payload, Secrets: secrets})
	// The event has been sent: the caller gets its result even if the
	// record of it cannot be written, or the caller has gone.
	s.recordTest(context.WithoutCancel(ctx), d, res, now)
	return &Tested{DeliveryID: d.Spec.DeliveryID, Result: res}, nil
}

// CodeDeliveryConcurrencyLimit refuses a test send over the bounds on
// attempts in flight of its endpoint or organization.
const CodeDeliveryConcurrencyLimit = "delivery_concurrency_limit_reached"

// testSendRetryAfter: a slot frees when an attempt in flight ends, within
// the receiver's timeout.
const testSendRetryAfter = 5 * time.Second

// reserveTestSend takes a slot for test delivery d under the bounds on
// attempts in flight per organization and endpoint, which test sends share
// with the delivery worker, so that sending tests is no way around them.
func (s *Service) reserveTestSend(ctx context.Context, d *history.Delivery, now time.Time) error {
	d.CreationTimestamp = metav1.NewTime(now)
	reserved, err := s.DeliveryLog.ReserveDelivery(ctx, d, now, s.Lease, s.InFlight)
	switch {
	case err != nil:
		return &Unavailable{What: "The test event could not be queued", Err: err}
	case !reserved:
		return &Refused{Code: CodeDeliveryConcurrencyLimit, RetryAfter: testSendRetryAfter, Message: fmt.Sprintf(
			"This endpoint or its organization has as many webhook attempts in flight as it may "+
				"(%s); retry after Retry-After seconds.", inFlightBounds(s.InFlight))}
	}
	return nil
}

// inFlightBounds says the bounds in words.
func inFlightBounds(b history.InFlightLimits) string {
	bound := func(n int, of string) string {
		if n <= 0 {
			return "no bound per " + of
		}
		return strconv.Itoa(n) + " per " + of
	}
	return bound(b.PerEndpoint, "endpoint") + ", " + bound(b.PerOrganization, "organization")
}

// signingSecrets reads the secrets that sign ep's deliveries now.
func (s *Service) signingSecrets(ctx context.Context, ep *switchboardv1.WebhookEndpoint, now time.Time) ([]string, error) {
	var secret corev1.Secret
	err := s.Live.Get(ctx, client.ObjectKey{Namespace: ep.Namespace, Name: ep.SigningSecretName()}, &secret)
	switch {
	case apierrors.IsNotFound(err):
		return nil, &Refused{Code: CodeSecretMissing, Message: secretMissing(ep)}
	case err != nil:
		return nil, &Unavailable{What: "The signing secret could not be read", Err: err}
	}
	secrets, err := deliveries.SigningSecrets(&secret, now)
	if err != nil {
		return nil, &Refused{Code: CodeSecretMissing, Message: "The endpoint has no usable signing secret: " + err.Error() + "."}
	}
	return secrets, nil
}

// recordTest writes a sent test event to the delivery log.
func (s *Service) recordTest(ctx context.Context, d *history.Delivery, res webhook.Result, sentAt time.Time) {
	d.CreationTimestamp = metav1.NewTime(sentAt)
	deliveries.Record(&d.Status, res, sentAt, history.TriggerTest, nil)
	if err := s.DeliveryLog.SaveDelivery(ctx, d, time.Time{}); err != nil {
		s.Log.Error(err, "recording test delivery", "namespace", d.Namespace, "deliveryID", d.Spec.DeliveryID)
		return
	}
	if s.Wake != nil {
		s.Wake() // the test send's slot is free for a delivery waiting on it
	}
}

// ErrUnknownCursor: a page's cursor names no endpoint of the organization,
// or no delivery of the endpoint.
var ErrUnknownCursor = errors.New("unknown cursor")

// DeliveryFilter selects a page of an endpoint's delivery log.
type DeliveryFilter struct {
	Event  string // a call event kind or "test"
	Status string // pending, succeeded, failed
	// Cursor is the id of the last delivery of the previous page.
	Cursor string
	Limit  int
}

// Deliveries returns a page of ep's delivery log, newest first, and
// whether more follow.
func (s *Service) Deliveries(ctx context.Context, ep *switchboardv1.WebhookEndpoint, f DeliveryFilter) (
	[]history.Delivery, bool, error) {
	query := history.DeliveryQuery{Endpoint: ep.Name, EndpointID: ep.ResolvedID(), Event: f.Event, Phase: f.Status,
		Limit: f.Limit + 1}
	if f.Cursor != "" {
		c, err := s.Delivery(ctx, ep, f.Cursor)
		switch {
		case errors.Is(err, ErrDeliveryNotFound):
			return nil, false, ErrUnknownCursor
		case err != nil:
			return nil, false, &Unavailable{What: "The deliveries could not be listed", Err: err}
		}
		after := history.DeliveryKeyOf(c)
		query.After = &after
	}
	items, err := s.DeliveryLog.ListDeliveries(ctx, ep.Namespace, query)
	if err != nil {
		return nil, false, &Unavailable{What: "The deliveries could not be listed", Err: err}
	}
	if len(items) > f.Limit {
		return items[:f.Limit], true, nil
	}
	return items, false, nil
}

// Outcomes counts the deliveries of namespace's events created after
// since that are settled or waiting for a retry; test sends do not count.
// The store counts them: a day's deliveries carry a day's call objects.
func (s *Service) Outcomes(ctx context.Context, namespace string, since time.Time) (Outcomes, error) {
	counts, err := s.DeliveryLog.CountDeliveryPhases(ctx, namespace, since, webhook.EventTest)
	if err != nil {
		return Outcomes{}, err
	}
	return Outcomes{Succeeded: counts.ByPhase[history.DeliverySucceeded], Failed: counts.ByPhase[history.DeliveryFailed],
		Retrying: counts.Retrying}, nil
}

// Outcomes are deliveries by how they went.
type Outcomes struct {
	Succeeded, Failed int
	// Retrying failed an attempt and waits for the next: not a success
	// (yet).
	Retrying int
}

// Counted is how many deliveries the outcomes count.
func (o Outcomes) Counted() int { return o.Succeeded + o.Failed + o.Retrying }

// CallDeliveries returns the newest deliveries (at most limit) of the
// events of the call whose resource name is callName, to any endpoint.
func (s *Service) CallDeliveries(ctx context.Context, namespace, callName string, limit int) (
	[]history.Delivery, error) {
	items, err := s.DeliveryLog.ListDeliveries(ctx, namespace, history.DeliveryQuery{CallName: callName, Limit: limit})
	if err != nil {
		return nil, &Unavailable{What: "The deliveries could not be listed", Err: err}
	}
	return items, nil
}

// ofEndpoint reports whether d is a delivery to ep, and not to an earlier
// endpoint of the same name.
func ofEndpoint(d *history.Delivery, ep *switchboardv1.WebhookEndpoint) bool {
	return d.Spec.EndpointRef.Name == ep.Name && (d.Spec.EndpointID == "" || d.Spec.EndpointID == ep.ResolvedID())
}

// Delivery returns ep's delivery whose id is id.
func (s *Service) Delivery(ctx context.Context, ep *switchboardv1.WebhookEndpoint, id string) (*history.Delivery, error) {
	if !deliveries.ValidID(id) {
		return nil, ErrDeliveryNotFound
	}
	d, err := s.DeliveryLog.GetDelivery(ctx, ep.Namespace, id)
	switch {
	case errors.Is(err, history.ErrNotFound) || (err == nil && !ofEndpoint(d, ep)):
		return nil, ErrDeliveryNotFound
	case err != nil:
		return nil, &Unavailable{What: "The delivery could not be read", Err: err}
	}
	return d, nil
}

// Retry asks the delivery worker for one more attempt of ep's delivery id
// now; it does not use up the retry schedule. Test deliveries are not
// retried.
func (s *Service) Retry(ctx context.Context, ep *switchboardv1.WebhookEndpoint, id string) (*history.Delivery, error) {
	d, err := s.Delivery(ctx, ep, id)
	if err != nil {
		return nil, err
	}
	if d.Spec.Event == webhook.EventTest {
		return nil, &Refused{Code: CodeTestNotRetried, Message: "Test deliveries are sent once and not retried; send a new test event."}
	}
	d, err = s.DeliveryLog.RequestDeliveryRetry(ctx, d.Namespace, d.Spec.DeliveryID, s.now())
	switch {
	case errors.Is(err, history.ErrNotFound):
		return nil, ErrDeliveryNotFound
	case err != nil:
		return nil, &Unavailable{What: "The retry could not be requested", Err: err}
	}
	if s.Wake != nil {
		s.Wake()
	}
	return d, nil
}
