package calls_test

import (
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/callpolicy"
	"github.com/switchboard-dev/switchboard/internal/calls"
	"github.com/switchboard-dev/switchboard/internal/quota"
)

// Failed is the one mapping of placement errors the REST API and the
// dashboard share: each error's status, code, field and recorded call.
func TestFailed(t *testing.T) {
	cause := errors.New("etcd timed out")
	missing := &callpolicy.Rejection{Code: callpolicy.CodeMissingVariables, Message: "missing name", MissingVariables: []string{"name"}}
	for _, tc := range []struct {
		name string
		err  error
		want calls.Failure
	}{
		{"limit", &quota.Exceeded{Code: quota.CodeRateLimited, Message: "slow down", RetryAfter: 1500 * time.Millisecond},
			calls.Failure{Status: http.StatusTooManyRequests, Code: quota.CodeRateLimited, Message: "slow down", RetryAfter: 1500 * time.Millisecond}},
		{"busy replica", &calls.Busy{RetryAfter: time.Second},
			calls.Failure{Status: http.StatusServiceUnavailable, Code: calls.CodeServerBusy, Message: "This replica is placing as many calls as it can at once; nothing was created. " +
				"Retry after the Retry-After header's seconds (with the same Idempotency-Key, if you sent one).", RetryAfter: time.Second}},
		{"unknown agent", &calls.AgentUnknown{Message: "no such agent"},
			calls.Failure{Status: http.StatusNotFound, Code: callpolicy.CodeAgentNotFound, Message: "no such agent", Field: "agent_id"}},
		{"inactive agent", &calls.Refused{Rejection: &callpolicy.Rejection{Code: callpolicy.CodeAgentInactive, Message: "inactive"}},
			calls.Failure{Status: http.StatusBadRequest, Code: callpolicy.CodeAgentInactive, Message: "inactive", Field: "agent_id"}},
		{"missing variables", &calls.Refused{Rejection: missing},
			calls.Failure{Status: http.StatusUnprocessableEntity, Code: callpolicy.CodeMissingVariables, Message: "missing name",
				Field: "variables", MissingVariables: []string{"name"}}},
		{"blocked number, recorded", &calls.Refused{Rejection: &callpolicy.Rejection{Code: callpolicy.CodeDNCBlocked, Message: "blocked"}, CallID: "call_1"},
			calls.Failure{Status: http.StatusUnprocessableEntity, Code: callpolicy.CodeDNCBlocked, Message: "blocked", Field: "to_number", CallID: "call_1"}},
		{"from number", &calls.Refused{Rejection: &callpolicy.Rejection{Code: callpolicy.CodeFromNumberMismatch, Message: "use +1415", ExpectedFromNumber: "+14155550100"}},
			calls.Failure{Status: http.StatusUnprocessableEntity, Code: callpolicy.CodeFromNumberMismatch, Message: "use +1415",
				Field: "from_number", ExpectedFromNumber: "+14155550100"}},
		{"other refusal", &calls.Refused{Rejection: &callpolicy.Rejection{Code: callpolicy.CodeSpokenTextTooLong, Message: "too long"}},
			calls.Failure{Status: http.StatusUnprocessableEntity, Code: callpolicy.CodeSpokenTextTooLong, Message: "too long"}},
		{"carrier", fmt.Errorf("placing: %w", &calls.DispatchFailed{Code: "dispatch_error", Message: "carrier said no", CallID: "call_2"}),
			calls.Failure{Status: http.StatusBadGateway, Code: "dispatch_error", Message: "carrier said no", CallID: "call_2"}},
		{"unavailable", &calls.Unavailable{Message: "try again", Err: cause, Uncertain: true},
			calls.Failure{Status: http.StatusServiceUnavailable, Message: "try again", Uncertain: true, Err: cause}},
		{"unexpected", cause,
			calls.Failure{Status: http.StatusServiceUnavailable, Message: "The call could not be queued; it is safe to retry.", Err: cause}},
	} {
		if got := calls.Failed(tc.err); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: Failed = %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}
