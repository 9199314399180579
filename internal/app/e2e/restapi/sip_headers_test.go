package restapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
)

// custom_sip_headers (the third-party create-call field) reaches the
// Call's spec.sipHeaders, through the native endpoint and the SDK's.
func TestCreateCallCustomSIPHeaders(t *testing.T) {
	o := NewOrg(t)
	headers := map[string]any{"X-Account": "acme-42", "x-campaign-id": "spring sale"}
	want := map[string]switchboardv1.SIPHeaderValue{"X-Account": "acme-42", "x-campaign-id": "spring sale"}
	for _, tc := range []struct{ name, path, agentField string }{
		{"native", "/v1/calls", "agent_id"},
		{"SDK create-phone-call", "/v2/create-phone-call", "override_agent_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r := Do(t, "POST", tc.path, o.Key, map[string]any{tc.agentField: o.AgentID, "to_number": "+14155551234",
				"variables": map[string]any{"customer_name": "Ada"}, "custom_sip_headers": headers})
			ExpectStatusJSON(t, r, http.StatusCreated)
			var call switchboardv1.Call
			key := client.ObjectKey{Namespace: o.Ns, Name: CallName(r.Body["call_id"].(string))}
			g.Expect(K8s.Get(context.Background(), key, &call)).To(Succeed())
			g.Expect(call.Spec.SIPHeaders).To(Equal(want))
		})
	}
}

// Bad custom headers are refused with the validation array naming the
// header, on both endpoints, and leave no Call behind.
func TestCreateCallCustomSIPHeadersValidation(t *testing.T) {
	o := NewOrg(t)
	many := map[string]any{}
	for i := range switchboardv1.SIPHeadersMaxCount + 1 {
		many[fmt.Sprintf("X-H%d", i)] = "v"
	}
	field := []any{"body", "custom_sip_headers"}
	at := func(name string) []any { return append(append([]any{}, field...), name) }
	tests := []struct {
		name    string
		headers any
		want    ValidationItem
	}{
		{"not an object", []any{"X-A"}, ValidationItem{Loc: field, Typ: "dict_type"}},
		{"too many", many, ValidationItem{Loc: field, Typ: "too_long"}},
		{"a routing header", map[string]any{"Route": "<sip:elsewhere>"}, ValidationItem{Loc: at("Route"), Typ: "value_error", Input: "Route"}},
		{"an identity header", map[string]any{"P-Asserted-Identity": "<sip:+14155550000@x>"},
			ValidationItem{Loc: at("P-Asserted-Identity"), Typ: "value_error"}},
		{"Switchboard's own", map[string]any{"X-Switchboard-Call-ID": "spoof"}, ValidationItem{Loc: at("X-Switchboard-Call-ID"), Typ: "value_error"}},
		{"a line break", map[string]any{"X-A": "v\r\nVia: forged"}, ValidationItem{Loc: at("X-A"), Typ: "string_pattern_mismatch"}},
		{"too long", map[string]any{"X-A": strings.Repeat("v", 257)}, ValidationItem{Loc: at("X-A"), Typ: "string_too_long"}},
		{"not a string", map[string]any{"X-A": 1}, ValidationItem{Loc: at("X-A"), Typ: "string_type"}},
	}
	start := CountCalls(t, o.Ns)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			native := o.CallBody("+14155551234", func(b map[string]any) { b["custom_sip_headers"] = tt.headers })
			items := ExpectValidation(t, Do(t, "POST", "/v1/calls", o.Key, native), tt.want)
			NewWithT(t).Expect(items[0]["msg"]).NotTo(BeEmpty())
			sdk := map[string]any{"override_agent_id": o.AgentID, "to_number": "+14155551234", "custom_sip_headers": tt.headers}
			ExpectValidation(t, Do(t, "POST", "/v2/create-phone-call", o.Key, sdk), tt.want)
		})
	}
	NewWithT(t).Expect(CountCalls(t, o.Ns)).To(Equal(start), "an invalid request left a Call behind")
}
