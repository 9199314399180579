package deliveries

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/webhook"
)

// maxAttemptsKept bounds the attempt history stored in a delivery.
const maxAttemptsKept = 20

// Outcome is what an attempt did to a delivery, beyond its own status.
type Outcome struct {
	// Gone: the receiver answered 410; the endpoint is to be disabled.
	Gone bool
	// Exhausted: the last scheduled attempt failed.
	Exhausted bool
}

// Record applies one attempt's result to a delivery's status. A scheduled
// attempt uses up one step of the schedule; a manual one does not, and
// leaves a pending delivery's schedule as it was. Success is final; so is
// 410 Gone, and a test's single attempt.
func Record(st *switchboardv1.WebhookDeliveryStatus, res webhook.Result, at time.Time, trigger string,
	schedule webhook.Schedule) Outcome {
	appendAttempt(st, res, at, trigger)
	st.LastStatusCode, st.LastError = statusCode(res), FailureText(res)
	if trigger == switchboardv1.TriggerScheduled {
		st.ScheduledAttempts++
	}
	switch {
	case res.Succeeded():
		finish(st, switchboardv1.DeliverySucceeded, at)
		return Outcome{}
	case res.StatusCode == http.StatusGone:
		finish(st, switchboardv1.DeliveryFailed, at)
		return Outcome{Gone: true}
	case trigger == switchboardv1.TriggerTest:
		finish(st, switchboardv1.DeliveryFailed, at)
		return Outcome{}
	case trigger == switchboardv1.TriggerManual:
		if st.Phase == "" {
			st.Phase = switchboardv1.DeliveryPending
		}
		return Outcome{}
	}
	delay, ok := schedule.Next(int(st.ScheduledAttempts), res.RetryAfter)
	if !ok {
		finish(st, switchboardv1.DeliveryFailed, at)
		st.LastError = fmt.Sprintf("gave up after %d attempts: %s", st.ScheduledAttempts, FailureText(res))
		return Outcome{Exhausted: true}
	}
	// Delays count from the answer (Retry-After means "after this
	// response"), not from when the request went out.
	st.Phase = switchboardv1.DeliveryPending
	st.NextAttemptAt = &metav1.MicroTime{Time: at.Add(res.Duration + delay)}
	return Outcome{}
}

// Abandon ends a delivery without an attempt (its endpoint is gone or
// disabled).
func Abandon(st *switchboardv1.WebhookDeliveryStatus, at time.Time, reason string) {
	finish(st, switchboardv1.DeliveryFailed, at)
	st.LastError = reason
}

func finish(st *switchboardv1.WebhookDeliveryStatus, phase switchboardv1.DeliveryPhase, at time.Time) {
	st.Phase = phase
	st.NextAttemptAt = nil
	st.CompletedAt = &metav1.Time{Time: at}
}

func appendAttempt(st *switchboardv1.WebhookDeliveryStatus, res webhook.Result, at time.Time, trigger string) {
	st.AttemptCount++
	st.Attempts = append(st.Attempts, switchboardv1.DeliveryAttempt{
		AttemptedAt: metav1.MicroTime{Time: at}, StatusCode: statusCode(res), Error: res.Err,
		DurationMS: res.Duration.Milliseconds(), Response: res.Response, Trigger: trigger,
	})
	if n := len(st.Attempts); n > maxAttemptsKept {
		st.Attempts = append([]switchboardv1.DeliveryAttempt(nil), st.Attempts[n-maxAttemptsKept:]...)
	}
}

// FailureText is a failed attempt's outcome in a few words; empty on success.
func FailureText(res webhook.Result) string {
	switch {
	case res.Succeeded():
		return ""
	case res.StatusCode != 0:
		return "receiver answered " + strconv.Itoa(res.StatusCode)
	default:
		return res.Err
	}
}

// ResultText is an attempt's outcome for an endpoint's status: the HTTP
// status code, or the connection error.
func ResultText(res webhook.Result) string {
	if res.StatusCode != 0 {
		return strconv.Itoa(res.StatusCode)
	}
	return res.Err
}

// statusCode is the HTTP status as stored; net/http only yields 100-999.
func statusCode(res webhook.Result) int32 {
	if res.StatusCode < 0 || res.StatusCode > 999 {
		return 0
	}
	return int32(res.StatusCode) //nolint:gosec // bounded above
}
