package history

import (
	"encoding/json"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The webhook delivery record. It lives here, beside the delivery log that
// stores it, and not in api/v1alpha1: deliveries are no Kubernetes kind
// (no CRD, not in the scheme) since they moved into this store, and every
// user of the record can import this package, which imports only the API
// types and callid.
//
// A Delivery is stored as JSON (deliveryRecordOf, scanDelivery) in the
// shape of the WebhookDelivery resource it was, so that the records in a
// database read the same whichever version wrote them: the json tags below
// are the stored format and must not change.

// DeliveryPhase is where a delivery stands: pending, succeeded or failed.
type DeliveryPhase string

const (
	// DeliveryPending: not yet delivered; an attempt is due at nextAttemptAt.
	DeliveryPending DeliveryPhase = "pending"
	// DeliverySucceeded: the receiver answered 2xx.
	DeliverySucceeded DeliveryPhase = "succeeded"
	// DeliveryFailed: every scheduled attempt failed, the endpoint is gone
	// or disabled, or (a test) the single attempt failed.
	DeliveryFailed DeliveryPhase = "failed"
)

// Labels on every Delivery, as the resource had them; the call's is the
// call_name the delivery log filters on (DeliveryQuery.CallName).
const (
	DeliveryEndpointLabel = "switchboard.dev/endpoint"
	DeliveryCallLabel     = "switchboard.dev/call"
	DeliveryEventLabel    = "switchboard.dev/event"
	// DeliveryRetryAnnotation (RFC 3339) asks for one more attempt now.
	DeliveryRetryAnnotation = "switchboard.dev/retry-requested-at"
)

// Attempt triggers.
const (
	TriggerScheduled = "scheduled"
	TriggerManual    = "manual"
	TriggerTest      = "test"
)

// ObjectName names a resource in the delivery's namespace.
type ObjectName struct {
	// name of the resource.
	Name string `json:"name"`
}

// DeliverySpec is one event for one endpoint. It never changes.
type DeliverySpec struct {
	// deliveryID is sent as X-Service-Delivery-Id (and webhook-id) on every
	// attempt, so that receivers can drop duplicates.
	DeliveryID string `json:"deliveryID"`
	// event is call.started, call.ended, call.analyzed, or test.
	Event string `json:"event"`
	// endpointRef is the WebhookEndpoint receiving the event.
	EndpointRef ObjectName `json:"endpointRef"`
	// endpointID is the endpoint's REST id.
	EndpointID string `json:"endpointID,omitempty"`
	// callRef is the Call the event is about (absent for test events).
	CallRef *ObjectName `json:"callRef,omitempty"`
	// callID is the call_id the event carries.
	CallID string `json:"callID,omitempty"`
	// body is the exact request body of an event about something other
	// than a call (a campaign's), taken when the event happened.
	Body json.RawMessage `json:"body,omitempty"`
}

// DeliveryAttempt is one POST to the receiver.
type DeliveryAttempt struct {
	// attemptedAt is when the request was sent.
	AttemptedAt metav1.MicroTime `json:"attemptedAt"`
	// statusCode is the receiver's HTTP status; absent when no response came.
	StatusCode int32 `json:"statusCode,omitempty"`
	// error is why no response came (DNS, TLS, refused address, timeout).
	Error string `json:"error,omitempty"`
	// durationMS is how long the receiver took.
	DurationMS int64 `json:"durationMS,omitempty"`
	// response is the start of the receiver's response body.
	Response string `json:"response,omitempty"`
	// trigger is scheduled, manual (a retry asked for) or test.
	Trigger string `json:"trigger,omitempty"`
}

// DeliveryStatus is the delivery's progress.
type DeliveryStatus struct {
	// phase is pending, succeeded or failed.
	Phase DeliveryPhase `json:"phase,omitempty"`
	// attemptCount counts every attempt made.
	AttemptCount int32 `json:"attemptCount,omitempty"`
	// scheduledAttempts counts the attempts of the retry schedule (manual
	// retries do not use it up).
	ScheduledAttempts int32 `json:"scheduledAttempts,omitempty"`
	// attempts are the latest attempts, oldest first (at most 20 kept).
	Attempts []DeliveryAttempt `json:"attempts,omitempty"`
	// nextAttemptAt is when the next scheduled attempt is due.
	NextAttemptAt *metav1.MicroTime `json:"nextAttemptAt,omitempty"`
	// lastStatusCode is the latest attempt's HTTP status.
	LastStatusCode int32 `json:"lastStatusCode,omitempty"`
	// lastError is the latest attempt's error or failure reason.
	LastError string `json:"lastError,omitempty"`
	// completedAt is when the delivery succeeded or finally failed.
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
	// retryHandled is the switchboard.dev/retry-requested-at value last
	// acted on.
	RetryHandled string `json:"retryHandled,omitempty"`
}

// Delivery is one event on its way to one endpoint: recorded once per
// (call, event, endpoint) or test event, sent by the delivery worker with
// retries, and kept in this store (the delivery queue and log), not in the
// cluster: an event costs the apiserver no write. Deleted after the
// retention period.
type Delivery struct {
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   DeliverySpec   `json:"spec"`
	Status DeliveryStatus `json:"status,omitempty"`
}

// CurrentPhase is the delivery's phase; pending until the worker first
// sets it.
func (d *Delivery) CurrentPhase() DeliveryPhase {
	if d.Status.Phase == "" {
		return DeliveryPending
	}
	return d.Status.Phase
}

// DeepCopy is a copy of d that shares no memory with it, as the generated
// copy of the resource was: the worker keeps a claimed delivery as it was
// while working on it, and the store encodes a copy without its managed
// fields. Written by hand, as controller-gen generates only for the API
// packages; a field holding a pointer, slice or map must be copied here
// (TestDeliveryDeepCopySharesNothing notices one that is not).
func (d *Delivery) DeepCopy() *Delivery {
	if d == nil {
		return nil
	}
	out := *d
	d.DeepCopyInto(&out.ObjectMeta) // ObjectMeta's own, promoted
	if d.Spec.CallRef != nil {
		ref := *d.Spec.CallRef
		out.Spec.CallRef = &ref
	}
	out.Spec.Body = slices.Clone(d.Spec.Body)
	out.Status.Attempts = slices.Clone(d.Status.Attempts) // an attempt holds only values
	out.Status.NextAttemptAt = d.Status.NextAttemptAt.DeepCopy()
	out.Status.CompletedAt = d.Status.CompletedAt.DeepCopy()
	return &out
}
