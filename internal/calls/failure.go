package calls

import (
	"errors"
	"net/http"
	"time"

	"github.com/switchboard-dev/switchboard/internal/callpolicy"
	"github.com/switchboard-dev/switchboard/internal/quota"
)

// Failure is why a call was not placed, as every front end shows it: the
// REST API answers Status with Code and Message, the dashboard puts Message
// beside Field. Failed maps Place's errors to it once, so the two agree.
type Failure struct {
	// Status is the REST API's HTTP status: 429 for a limit, 404 for an
	// unknown agent, 400 or 422 for the call policy, 502 for the carrier,
	// 503 for anything else (which may be retried).
	Status int
	// Code is the error body's error_code; "" on a 503 of something the
	// placement depends on, whose body is a bare detail (server_busy, the
	// replica's own refusal, has one).
	Code    string
	Message string
	// Field is the request field the failure is about: "agent_id",
	// "to_number", "from_number" or "variables"; "" for the request as a
	// whole.
	Field string
	// MissingVariables and ExpectedFromNumber are a refusal's details.
	MissingVariables   []string
	ExpectedFromNumber string
	// CallID names the failed call that was recorded, if any; such a
	// refusal counts as a placement (idempotency, metrics).
	CallID string
	// RetryAfter is how long a limit or a busy replica asks the caller
	// to wait.
	RetryAfter time.Duration
	// Uncertain: the Call's create was sent and may have been applied
	// (Unavailable.Uncertain).
	Uncertain bool
	// Err, when set, is an unexpected cause for the operator's log.
	Err error
}

// CodeServerBusy is the error_code of a placement the replica had no room
// for (package placementgate).
const CodeServerBusy = "server_busy"

// busyMessage is what a placement the replica had no room for says.
const busyMessage = "This replica is placing as many calls as it can at once; nothing was created. Retry after the " +
	"Retry-After header's seconds (with the same Idempotency-Key, if you sent one)."

// unavailableMessage is what an error Place does not describe says.
const unavailableMessage = "The call could not be queued; it is safe to retry."

// Failed is the Failure of an error of Place.
func Failed(err error) Failure {
	var (
		exceeded    *quota.Exceeded
		busy        *Busy
		unknown     *AgentUnknown
		refused     *Refused
		dispatch    *DispatchFailed
		unavailable *Unavailable
	)
	switch {
	case errors.As(err, &exceeded):
		return Failure{Status: http.StatusTooManyRequests, Code: exceeded.Code, Message: exceeded.Message,
			RetryAfter: exceeded.RetryAfter}
	case errors.As(err, &busy):
		return Failure{Status: http.StatusServiceUnavailable, Code: CodeServerBusy, Message: busyMessage,
			RetryAfter: busy.RetryAfter}
	case errors.As(err, &unknown):
		return Failure{Status: http.StatusNotFound, Code: callpolicy.CodeAgentNotFound, Message: unknown.Message,
			Field: "agent_id"}
	case errors.As(err, &refused):
		return refusal(refused)
	case errors.As(err, &dispatch):
		return Failure{Status: http.StatusBadGateway, Code: dispatch.Code, Message: dispatch.Message,
			CallID: dispatch.CallID}
	case errors.As(err, &unavailable):
		return Failure{Status: http.StatusServiceUnavailable, Message: unavailable.Message,
			Uncertain: unavailable.Uncertain, Err: unavailable.Err}
	}
	return Failure{Status: http.StatusServiceUnavailable, Message: unavailableMessage, Err: err}
}

func refusal(refused *Refused) Failure {
	rej := refused.Rejection
	f := Failure{Status: http.StatusUnprocessableEntity, Code: rej.Code, Message: rej.Message,
		MissingVariables: rej.MissingVariables, ExpectedFromNumber: rej.ExpectedFromNumber, CallID: refused.CallID}
	switch rej.Code {
	case callpolicy.CodeAgentNotOutbound, callpolicy.CodeAgentInactive:
		f.Status, f.Field = http.StatusBadRequest, "agent_id"
	case callpolicy.CodeMissingVariables:
		f.Field = "variables"
	case callpolicy.CodeDNCBlocked, callpolicy.CodeNumberBlocked:
		f.Field = "to_number"
	case callpolicy.CodeFromNumberMismatch:
		f.Field = "from_number"
	}
	return f
}
