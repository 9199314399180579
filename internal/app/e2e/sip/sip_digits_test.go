package sip_test

import (
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/siptest"
)

// A call placed through the REST API with custom_sip_headers, by an agent
// with sipHeaders of its own and a pressDigits step, on a trunk whose
// dtmf is info: the sipp callee refuses the call unless the INVITE
// carries both headers (the call's winning the clash), and refuses the
// keys (the press then fails) unless they come as SIP INFO, in order.
func TestSIPCallSendsHeadersAndPressesDigits(t *testing.T) {
	g := NewWithT(t)
	// The INVITE carries the headers in name order (else sipp answers 403).
	scenario := siptest.Scenario(t, ScenarioFile("info_digits.xml"),
		"invite_regexp", "x-account: acme-42[[:space:]].*X-Campaign-Id: spring sale[[:space:]]")
	callee := siptest.StartSipp(t, "udp", scenario...)
	o := SIPOrg(t, callee.Addr, func(s *switchboardv1.SIPTrunkSpec) { s.DTMF = "info" }, func(s *switchboardv1.AgentSpec) {
		s.SIPHeaders = map[string]switchboardv1.SIPHeaderValue{"X-Campaign-Id": "spring sale", "X-Account": "agent-default"}
		s.Script = []switchboardv1.ScriptStep{
			{Say: "Billing, please."},
			{PressDigits: &switchboardv1.PressDigitsStep{Digits: "1w2#", DelayMs: ptr.To[int32](200)}},
		}
	})
	id := o.CreateCall(t, "+14155550123", map[string]any{"custom_sip_headers": map[string]any{"x-account": "acme-42"}})
	call := o.WaitAnalyzed(t, id)
	g.Expect(call).To(HaveKeyWithValue("disposition", "answered"))
	g.Expect(call).To(HaveKeyWithValue("disconnection_reason", "agent_hangup"))
	r := Do(t, "GET", "/v1/calls/"+id+"/transcript", o.Key, nil)
	g.Expect(r.Status).To(Equal(http.StatusOK), string(r.Raw))
	g.Expect(r.Body["transcript"]).To(ContainSubstring("Agent: pressed 1w2#"))
	g.Expect(CallResource(t, o.Ns, id).Spec.SIPHeaders).To(Equal(map[string]switchboardv1.SIPHeaderValue{"x-account": "acme-42"}))
}
