package callpolicy

import (
	"testing"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/numberlists"
)

func TestCheckOrderAndCodes(t *testing.T) {
	no := false
	lists := numberlists.NewIndex()
	lists.Set("org", "dnc", switchboardv1.DoNotCall, []string{"+14155550199"}, nil)
	lists.Set("org", "blocked", switchboardv1.Blocked, []string{"+14155550199", "+14155550198"}, []string{"+1900"})
	agent := func(mutate func(*switchboardv1.AgentSpec)) *switchboardv1.Agent {
		a := &switchboardv1.Agent{Spec: switchboardv1.AgentSpec{FromNumber: "+14155550100",
			RequiredVariables: []string{"b", "a"}}}
		mutate(&a.Spec)
		return a
	}
	ok := Request{Namespace: "org", ToNumber: "+14155551234", Variables: map[string]any{"a": 1, "b": "x"}}
	tests := []struct {
		name  string
		agent *switchboardv1.Agent
		req   Request
		want  string
	}{
		{"allowed", agent(func(*switchboardv1.AgentSpec) {}), ok, ""},
		{"not outbound before inactive", agent(func(s *switchboardv1.AgentSpec) { s.Outbound, s.Active = &no, &no }), ok, CodeAgentNotOutbound},
		{"inactive", agent(func(s *switchboardv1.AgentSpec) { s.Active = &no }), ok, CodeAgentInactive},
		{"missing variables before number checks", agent(func(*switchboardv1.AgentSpec) {}),
			Request{Namespace: "org", ToNumber: "+14155550199"}, CodeMissingVariables},
		{"from mismatch", agent(func(*switchboardv1.AgentSpec) {}),
			Request{Namespace: "org", ToNumber: "+14155551234", FromNumber: "+14155550111", Variables: ok.Variables}, CodeFromNumberMismatch},
		{"same from is fine", agent(func(*switchboardv1.AgentSpec) {}),
			Request{Namespace: "org", ToNumber: "+14155551234", FromNumber: "+14155550100", Variables: ok.Variables}, ""},
		{"dnc wins over blocked", agent(func(*switchboardv1.AgentSpec) {}),
			Request{Namespace: "org", ToNumber: "+14155550199", Variables: ok.Variables}, CodeDNCBlocked},
		{"blocked number", agent(func(*switchboardv1.AgentSpec) {}),
			Request{Namespace: "org", ToNumber: "+14155550198", Variables: ok.Variables}, CodeNumberBlocked},
		{"blocked prefix", agent(func(*switchboardv1.AgentSpec) {}),
			Request{Namespace: "org", ToNumber: "+19005550123", Variables: ok.Variables}, CodeNumberBlocked},
		{"other org's lists do not apply", agent(func(*switchboardv1.AgentSpec) {}),
			Request{Namespace: "other", ToNumber: "+14155550199", Variables: ok.Variables}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rej := Check(tt.agent, tt.req, lists)
			got := ""
			if rej != nil {
				got = rej.Code
				if rej.Message == "" {
					t.Error("rejection without a message")
				}
			}
			if got != tt.want {
				t.Fatalf("Check() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestMissingVariablesListsSortedKeys(t *testing.T) {
	a := &switchboardv1.Agent{Spec: switchboardv1.AgentSpec{RequiredVariables: []string{"zip", "name", "age"}}}
	rej := Check(a, Request{Variables: map[string]any{"age": 3}}, nil)
	if rej == nil || len(rej.MissingVariables) != 2 || rej.MissingVariables[0] != "name" || rej.MissingVariables[1] != "zip" {
		t.Fatalf("Check() = %+v, want missing [name zip]", rej)
	}
	if rej.RecordsFailedCall() {
		t.Fatal("missing_variables must not leave a call record")
	}
}

// TestBlankRequiredVariablesAreMissing: a required variable sent as null or
// as an empty (or all-space) string gives the script nothing to say, so it
// is as missing as an absent one; any other value, 0 and false included,
// is present.
func TestBlankRequiredVariablesAreMissing(t *testing.T) {
	a := &switchboardv1.Agent{Spec: switchboardv1.AgentSpec{RequiredVariables: []string{"v"}}}
	for _, tt := range []struct {
		name    string
		value   any
		missing bool
	}{
		{"null", nil, true},
		{"empty string", "", true},
		{"spaces", " \t ", true},
		{"text", "Ada", false},
		{"text with spaces", " Ada ", false},
		{"zero", 0.0, false},
		{"false", false, false},
		{"empty object", map[string]any{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rej := Check(a, Request{Variables: map[string]any{"v": tt.value}}, nil)
			if got := rej != nil && rej.Code == CodeMissingVariables; got != tt.missing {
				t.Fatalf("Check() = %+v, want missing %v", rej, tt.missing)
			}
			if tt.missing && (len(rej.MissingVariables) != 1 || rej.MissingVariables[0] != "v") {
				t.Fatalf("missing_variables = %v, want [v]", rej.MissingVariables)
			}
		})
	}
}

func TestFromMismatchNamesExpectedNumber(t *testing.T) {
	a := &switchboardv1.Agent{Spec: switchboardv1.AgentSpec{FromNumber: "+14155550100"}}
	rej := Check(a, Request{FromNumber: "+14155550111"}, nil)
	if rej == nil || rej.ExpectedFromNumber != "+14155550100" {
		t.Fatalf("Check() = %+v, want expected_from_number +14155550100", rej)
	}
}

// A conversation's prompt and begin message name variables the model
// would otherwise make up: a call without them is refused at create.
func TestConversationPlaceholdersAreRequired(t *testing.T) {
	a := &switchboardv1.Agent{Spec: switchboardv1.AgentSpec{RequiredVariables: []string{"clinic"},
		Conversation: &switchboardv1.Conversation{SystemPrompt: "You call {{customer_name}} for {{clinic}}.",
			BeginMessage: "Hi {{customer_name}}, about {{appointment_day}}."}}}
	rej := Check(a, Request{Variables: map[string]any{"clinic": "Northside"}}, nil)
	if rej == nil || rej.Code != CodeMissingVariables {
		t.Fatalf("Check() = %+v, want missing_variables", rej)
	}
	if got := rej.MissingVariables; len(got) != 2 || got[0] != "appointment_day" || got[1] != "customer_name" {
		t.Fatalf("missing_variables = %v, want [appointment_day customer_name]", got)
	}
}
