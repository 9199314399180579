package deliveries

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/switchboard-dev/switchboard/internal/history"
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
func Record(st *history.DeliveryStatus, res webhook.Result, at time.Time, trigger string,
	schedule webhook.Schedule) Outcome {
	appendAttempt(st, res, at, trigger)
	st.LastStatusCode, st.LastError = statusCode(res), FailureText(res)
	if trigger == history.TriggerScheduled {
		st.ScheduledAttempts++
	}
	switch {
	case res.Succeeded():
		finish(st, history.DeliverySucceeded, at)
		return Outcome{}
	case res.StatusCode == http.StatusGone:
		finish(st, history.DeliveryFailed, at)
		return Outcome{Gone: true}
	case trigger == history.TriggerTest:
		finish(st, history.DeliveryFailed, at)
		return Outcome{}
	case trigger == history.TriggerManual:
		if st.Phase == "" {
			st.Phase = history.DeliveryPending
		}
		return Outcome{}
	}
	delay, ok := schedule.Next(int(st.ScheduledAttempts), res.RetryAfter)
	if !ok {
		finish(st, history.DeliveryFailed, at)
		st.LastError = fmt.Sprintf("gave up after %d attempts: %s", st.ScheduledAttempts, FailureText(res))
		return Outcome{Exhausted: true}
	}
	// Delays count from the answer (Retry-After means "after this
	// response"), not from when the request went out.
	st.Phase = history.DeliveryPending
	st.NextAttemptAt = &metav1.MicroTime{Time: at.Add(res.Duration + delay)}
	return Outcome{}
}

// Abandon ends a delivery without an attempt (its endpoint is gone or
// disabled).
func Abandon(st *history.DeliveryStatus, at time.Time, reason string) {
	finish(st, history.DeliveryFailed, at)
	st.LastError = reason
}

func finish(st *history.DeliveryStatus, phase history.DeliveryPhase, at time.Time) {
	st.Phase = phase
	st.NextAttemptAt = nil
	st.CompletedAt = &metav1.Time{Time: at}
}

func appendAttempt(st *history.DeliveryStatus, res webhook.Result, at time.Time, trigger string) {
	st.AttemptCount++
	st.Attempts = append(st.Attempts, history.DeliveryAttempt{
		AttemptedAt: metav1.MicroTime{Time: at}, StatusCode: statusCode(res), Error: res.Err,
		DurationMS: res.Duration.Milliseconds(), Response: res.Response, Trigger: trigger,
	})
	if n := len(st.Attempts); n > maxAttemptsKept {
		st.Attempts = append([]history.DeliveryAttempt(nil), st.Attempts[n-maxAttemptsKept:]...)
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
