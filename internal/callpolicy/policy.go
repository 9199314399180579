// Package callpolicy decides whether an agent may place a call. The REST API
// runs it before accepting a call, and the call reconciler runs it again
// before dialing (for Calls applied with kubectl, and for lists that changed
// in between), so both paths refuse a call for the same reasons.
//
// Checks run in the order of the API's error table (api/README.md, "The REST API"): agent_not_outbound,
// agent_inactive, missing_variables, from_number_mismatch, dnc_blocked,
// number_blocked; spoken_text_too_long (a limit of Switchboard's, on what
// the variables make the agent say) comes after missing_variables. The
// first failing check decides.
package callpolicy

import (
	"fmt"
	"slices"
	"strings"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/numberlists"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts"
)

// Error codes of refused calls, as the REST API reports them.
const (
	CodeAgentNotFound      = "agent_not_found"
	CodeAgentNotOutbound   = "agent_not_outbound"
	CodeAgentInactive      = "agent_inactive"
	CodeMissingVariables   = "missing_variables"
	CodeSpokenTextTooLong  = "spoken_text_too_long"
	CodeFromNumberMismatch = "from_number_mismatch"
	CodeDNCBlocked         = "dnc_blocked"
	CodeNumberBlocked      = "number_blocked"
)

// Request is the part of a call the policy looks at.
type Request struct {
	Namespace  string
	ToNumber   string // E.164
	FromNumber string // E.164, or empty to use the agent's
	Variables  map[string]any
}

// Rejection says why a call may not be placed.
type Rejection struct {
	Code    string
	Message string
	// MissingVariables lists the absent required variables (missing_variables).
	MissingVariables []string
	// ExpectedFromNumber is the agent's number (from_number_mismatch).
	ExpectedFromNumber string
}

// RecordsFailedCall reports whether the API leaves a failed call record for
// this rejection: blocked numbers leave a trace, bad requests do not.
func (r *Rejection) RecordsFailedCall() bool {
	return r.Code == CodeDNCBlocked || r.Code == CodeNumberBlocked
}

// Check returns why agent may not place req, or nil when it may.
func Check(agent *switchboardv1.Agent, req Request, lists *numberlists.Index) *Rejection {
	for _, check := range []func(*switchboardv1.Agent, Request, *numberlists.Index) *Rejection{
		checkOutbound, checkActive, checkVariables, checkSpokenText, checkFromNumber, checkNumberLists,
	} {
		if r := check(agent, req, lists); r != nil {
			return r
		}
	}
	return nil
}

func checkOutbound(a *switchboardv1.Agent, _ Request, _ *numberlists.Index) *Rejection {
	if a.Spec.IsOutbound() {
		return nil
	}
	return &Rejection{Code: CodeAgentNotOutbound,
		Message: fmt.Sprintf("Agent %s cannot place outbound calls.", a.ResolvedID())}
}

func checkActive(a *switchboardv1.Agent, _ Request, _ *numberlists.Index) *Rejection {
	if a.Spec.IsActive() {
		return nil
	}
	return &Rejection{Code: CodeAgentInactive,
		Message: fmt.Sprintf("Agent %s is not active.", a.ResolvedID())}
}

func checkVariables(a *switchboardv1.Agent, req Request, _ *numberlists.Index) *Rejection {
	missing := MissingVariables(RequiredVariables(a), req.Variables)
	if len(missing) == 0 {
		return nil
	}
	return &Rejection{Code: CodeMissingVariables, MissingVariables: missing, Message: MissingVariablesMessage(missing)}
}

// RequiredVariables are the variables every call of a must provide: its
// requiredVariables, and the placeholders of its conversation's system
// prompt and begin message (a model told "the callee is {{customer_name}}"
// with no name would make one up).
func RequiredVariables(a *switchboardv1.Agent) []string {
	required := slices.Clone(a.Spec.RequiredVariables)
	if c := a.Spec.Conversation; c != nil {
		for _, text := range []string{c.SystemPrompt, c.BeginMessage} {
			for _, name := range tts.Placeholders(text) {
				if !slices.Contains(required, name) {
					required = append(required, name)
				}
			}
		}
	}
	return required
}

// MissingVariables are the names of required that vars lacks (blank
// counts as absent), sorted.
func MissingVariables(required []string, vars map[string]any) []string {
	var missing []string
	for _, name := range required {
		if blank(vars[name]) {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	return missing
}

// MissingVariablesMessage says which required variables are missing.
func MissingVariablesMessage(missing []string) string {
	return fmt.Sprintf("The agent requires variables that were not provided: %v.", missing)
}

// blank reports whether a required variable's value gives the script
// nothing to say: absent, null, or a string of nothing but spaces.
func blank(v any) bool {
	s, isString := v.(string)
	return v == nil || isString && strings.TrimSpace(s) == ""
}

func checkFromNumber(a *switchboardv1.Agent, req Request, _ *numberlists.Index) *Rejection {
	if req.FromNumber == "" || req.FromNumber == a.Spec.FromNumber {
		return nil
	}
	return &Rejection{Code: CodeFromNumberMismatch, ExpectedFromNumber: a.Spec.FromNumber,
		Message: fmt.Sprintf("from_number %s is not the agent's configured number %s.",
			req.FromNumber, a.Spec.FromNumber)}
}

func checkNumberLists(_ *switchboardv1.Agent, req Request, lists *numberlists.Index) *Rejection {
	if lists == nil {
		return nil
	}
	m, ok := lists.Match(req.Namespace, req.ToNumber)
	if !ok {
		return nil
	}
	if m.Type == switchboardv1.DoNotCall {
		return &Rejection{Code: CodeDNCBlocked,
			Message: fmt.Sprintf("%s is on the do-not-call list %q.", req.ToNumber, m.List)}
	}
	return &Rejection{Code: CodeNumberBlocked,
		Message: fmt.Sprintf("%s is blocked by the number list %q (entry %s).", req.ToNumber, m.List, m.Entry)}
}
