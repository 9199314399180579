package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeliveryPhase is where a delivery stands.
// +kubebuilder:validation:Enum=pending;succeeded;failed
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

// Labels on every WebhookDelivery record; the history store indexes them.
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

// ObjectName names a resource in the same namespace.
type ObjectName struct {
	// name of the resource.
	// +required
	Name string `json:"name"`
}

// WebhookDeliverySpec is one event for one endpoint. It never changes.
type WebhookDeliverySpec struct {
	// deliveryID is sent as X-Service-Delivery-Id (and webhook-id) on every
	// attempt, so that receivers can drop duplicates.
	// +required
	DeliveryID string `json:"deliveryID"`
	// event is call.started, call.ended, call.analyzed, or test.
	// +required
	// +kubebuilder:validation:Enum=call.started;call.ended;call.analyzed;test
	Event string `json:"event"`
	// endpointRef is the WebhookEndpoint receiving the event.
	// +required
	EndpointRef ObjectName `json:"endpointRef"`
	// endpointID is the endpoint's REST id.
	// +optional
	EndpointID string `json:"endpointID,omitempty"`
	// callRef is the Call the event is about (absent for test events).
	// +optional
	CallRef *ObjectName `json:"callRef,omitempty"`
	// callID is the call_id the event carries.
	// +optional
	CallID string `json:"callID,omitempty"`
}

// DeliveryAttempt is one POST to the receiver.
type DeliveryAttempt struct {
	// attemptedAt is when the request was sent.
	// +required
	AttemptedAt metav1.MicroTime `json:"attemptedAt"`
	// statusCode is the receiver's HTTP status; absent when no response came.
	// +optional
	StatusCode int32 `json:"statusCode,omitempty"`
	// error is why no response came (DNS, TLS, refused address, timeout).
	// +optional
	Error string `json:"error,omitempty"`
	// durationMS is how long the receiver took.
	// +optional
	DurationMS int64 `json:"durationMS,omitempty"`
	// response is the start of the receiver's response body.
	// +optional
	Response string `json:"response,omitempty"`
	// trigger is scheduled, manual (a retry asked for) or test.
	// +optional
	Trigger string `json:"trigger,omitempty"`
}

// WebhookDeliveryStatus is the delivery's progress.
type WebhookDeliveryStatus struct {
	// phase is pending, succeeded or failed.
	// +optional
	Phase DeliveryPhase `json:"phase,omitempty"`
	// attemptCount counts every attempt made.
	// +optional
	AttemptCount int32 `json:"attemptCount,omitempty"`
	// scheduledAttempts counts the attempts of the retry schedule (manual
	// retries do not use it up).
	// +optional
	ScheduledAttempts int32 `json:"scheduledAttempts,omitempty"`
	// attempts are the latest attempts, oldest first (at most 20 kept).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	Attempts []DeliveryAttempt `json:"attempts,omitempty"`
	// nextAttemptAt is when the next scheduled attempt is due.
	// +optional
	NextAttemptAt *metav1.MicroTime `json:"nextAttemptAt,omitempty"`
	// lastStatusCode is the latest attempt's HTTP status.
	// +optional
	LastStatusCode int32 `json:"lastStatusCode,omitempty"`
	// lastError is the latest attempt's error or failure reason.
	// +optional
	LastError string `json:"lastError,omitempty"`
	// completedAt is when the delivery succeeded or finally failed.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
	// retryHandled is the switchboard.dev/retry-requested-at value last
	// acted on.
	// +optional
	RetryHandled string `json:"retryHandled,omitempty"`
}

// WebhookDelivery is one event on its way to one endpoint: recorded once
// per (call, event, endpoint) or test event, sent by the delivery worker
// with retries, and kept in the history store (the delivery queue and
// log), not in the cluster: an event costs the apiserver no write. It keeps
// the shape of the resource it was until v1alpha1's history store, so the
// record reads the same; deleted after the retention period.
type WebhookDelivery struct {
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec WebhookDeliverySpec `json:"spec"`
	// +optional
	Status WebhookDeliveryStatus `json:"status,omitempty"`
}

// CurrentPhase is the delivery's phase; pending until first reconciled.
func (d *WebhookDelivery) CurrentPhase() DeliveryPhase {
	if d.Status.Phase == "" {
		return DeliveryPending
	}
	return d.Status.Phase
}
