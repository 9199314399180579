package httpapi

import (
	"cmp"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/callview"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/webhook"
)

// Endpoint statuses.
const (
	endpointActive   = "active"
	endpointDegraded = "degraded"
	endpointDisabled = "disabled"
)

// endpointView is the endpoint object.
type endpointView struct {
	ID                 string   `json:"id"`
	URL                string   `json:"url"`
	Events             []string `json:"events"`
	Description        string   `json:"description"`
	Disabled           bool     `json:"disabled"`
	DisabledReason     *string  `json:"disabled_reason"`
	Status             string   `json:"status"`
	LastDeliveryAt     *string  `json:"last_delivery_at"`
	LastDeliveryResult *string  `json:"last_delivery_result"`
	CreatedAt          string   `json:"created_at"`
}

// createdEndpoint is the 201 of a create: the only other time the secret
// is shown is a rotation.
type createdEndpoint struct {
	endpointView
	Secret string `json:"secret"`
}

type rotatedEndpoint struct {
	endpointView
	Secret                  string  `json:"secret"`
	PreviousSecretExpiresAt *string `json:"previous_secret_expires_at"`
}

type endpointPage struct {
	Data       []endpointView `json:"data"`
	HasMore    bool           `json:"has_more"`
	NextCursor *string        `json:"next_cursor"`
}

func renderEndpoint(ep *switchboardv1.WebhookEndpoint) endpointView {
	v := endpointView{
		ID:          ep.ResolvedID(),
		URL:         ep.Spec.URL,
		Events:      effectiveEvents(ep),
		Description: ep.Spec.Description,
		Disabled:    ep.Spec.Disabled,
		Status:      endpointStatus(ep),
		CreatedAt:   callview.Timestamp(ep.CreationTimestamp.Time),
	}
	if reason := ep.Annotations[switchboardv1.WebhookDisabledReasonAnnotation]; ep.Spec.Disabled && reason != "" {
		v.DisabledReason = &reason
	}
	if ep.Status.LastDeliveryAt != nil {
		v.LastDeliveryAt = ptr(callview.Timestamp(ep.Status.LastDeliveryAt.Time))
	}
	if ep.Status.LastDeliveryResult != "" {
		v.LastDeliveryResult = ptr(ep.Status.LastDeliveryResult)
	}
	return v
}

// effectiveEvents lists the kinds the endpoint receives, in lifecycle
// order: the call events when spec.events is empty.
func effectiveEvents(ep *switchboardv1.WebhookEndpoint) []string {
	events := make([]string, 0, len(webhook.Kinds))
	for _, k := range webhook.Kinds {
		if ep.Subscribes(k) {
			events = append(events, k)
		}
	}
	return events
}

func endpointStatus(ep *switchboardv1.WebhookEndpoint) string {
	switch {
	case ep.Spec.Disabled:
		return endpointDisabled
	case apimeta.IsStatusConditionTrue(ep.Status.Conditions, switchboardv1.DegradedCondition):
		return endpointDegraded
	default:
		return endpointActive
	}
}

// testResult is the response of POST .../test (its result, never a retry).
type testResult struct {
	DeliveryID string  `json:"delivery_id"`
	Status     string  `json:"status"`
	StatusCode *int    `json:"status_code"`
	Error      *string `json:"error"`
}

func renderTestResult(deliveryID string, res webhook.Result) testResult {
	out := testResult{DeliveryID: deliveryID, Status: string(history.DeliveryFailed)}
	if res.Succeeded() {
		out.Status = string(history.DeliverySucceeded)
	}
	switch {
	case res.StatusCode != 0:
		out.StatusCode = ptr(res.StatusCode)
	case res.Err != "":
		out.Error = ptr(res.Err)
	default: // no response and no word why: still say it failed
		out.Error = ptr("no response from the receiver")
	}
	return out
}

// deliveryView is the delivery object.
type deliveryView struct {
	ID               string        `json:"id"`
	EndpointID       string        `json:"endpoint_id"`
	Event            string        `json:"event"`
	CallID           *string       `json:"call_id"`
	Status           string        `json:"status"`
	AttemptCount     int32         `json:"attempt_count"`
	NextAttemptAt    *string       `json:"next_attempt_at"`
	LastStatusCode   *int32        `json:"last_status_code"`
	LastError        *string       `json:"last_error"`
	CreatedAt        string        `json:"created_at"`
	CompletedAt      *string       `json:"completed_at"`
	RetryRequestedAt *string       `json:"retry_requested_at"`
	Attempts         []attemptView `json:"attempts"`
}

type attemptView struct {
	AttemptedAt string  `json:"attempted_at"`
	StatusCode  *int32  `json:"status_code"`
	Error       *string `json:"error"`
	DurationMS  int64   `json:"duration_ms"`
	Response    *string `json:"response"`
	Trigger     string  `json:"trigger"`
}

type deliveryPage struct {
	Data       []deliveryView `json:"data"`
	HasMore    bool           `json:"has_more"`
	NextCursor *string        `json:"next_cursor"`
}

// renderDelivery renders d, a delivery of the endpoint whose id is
// endpointID (deliveries made before their endpoint had an id lack it).
func renderDelivery(d *history.Delivery, endpointID string) deliveryView {
	st := &d.Status
	v := deliveryView{
		ID:             d.Spec.DeliveryID,
		EndpointID:     cmp.Or(d.Spec.EndpointID, endpointID),
		Event:          d.Spec.Event,
		CallID:         nonEmpty(d.Spec.CallID),
		Status:         string(d.CurrentPhase()),
		AttemptCount:   st.AttemptCount,
		LastStatusCode: nonZero(st.LastStatusCode),
		LastError:      nonEmpty(st.LastError),
		CreatedAt:      callview.Timestamp(d.CreationTimestamp.Time),
		Attempts:       make([]attemptView, 0, len(st.Attempts)),
	}
	if st.NextAttemptAt != nil {
		v.NextAttemptAt = ptr(callview.Timestamp(st.NextAttemptAt.Time))
	}
	if st.CompletedAt != nil {
		v.CompletedAt = ptr(callview.Timestamp(st.CompletedAt.Time))
	}
	if at, err := time.Parse(time.RFC3339Nano, d.Annotations[history.DeliveryRetryAnnotation]); err == nil {
		v.RetryRequestedAt = ptr(callview.Timestamp(at))
	}
	for _, a := range st.Attempts {
		v.Attempts = append(v.Attempts, attemptView{
			AttemptedAt: callview.Timestamp(a.AttemptedAt.Time),
			StatusCode:  nonZero(a.StatusCode),
			Error:       nonEmpty(a.Error),
			DurationMS:  a.DurationMS,
			Response:    nonEmpty(a.Response),
			Trigger:     a.Trigger,
		})
	}
	return v
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nonZero(n int32) *int32 {
	if n == 0 {
		return nil
	}
	return &n
}

// previousExpiry renders the end of a rotation overlap.
func previousExpiry(t time.Time, ok bool) *string {
	if !ok {
		return nil
	}
	return ptr(callview.Timestamp(t))
}
