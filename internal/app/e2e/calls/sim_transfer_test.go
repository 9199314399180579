package calls_test

import (
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
)

// Issue 41, on the embedded default: a scripted agent hands the callee to
// a person. The outcome is the call's (disconnection_reason, the transfer
// object) in the REST API and in the call.ended event; a busy person gives
// the call back to the script, which goes on at the step's next; a number
// the do-not-call list holds is never dialed.
func TestSimulatedCarrierTransfers(t *testing.T) {
	g := NewWithT(t)
	o := NewOrg(t)
	rc := NewReceiver(t, nil)
	_, secret := ApplyEndpoint(t, o.Ns, rc.URL(), nil)
	rc.Trust(secret)
	CreateNumberList(t, o.Ns, "do-not-call", switchboardv1.DoNotCall, []string{"+14155550177"}, nil)
	agent := CreateAgent(t, o.Ns, "transferring", func(s *switchboardv1.AgentSpec) {
		s.TransferDestinations = []string{"+1415555*"}
		s.Script = []switchboardv1.ScriptStep{
			{Say: "Let me get you someone who can help."},
			{Transfer: &switchboardv1.TransferStep{To: "{{desk}}", Next: "sorry",
				TransferOptions: switchboardv1.TransferOptions{Method: switchboardv1.TransferByBridge}}},
			{Hangup: &switchboardv1.HangupStep{}},
			{ID: "sorry", Say: "Nobody is free right now; we will call you back."},
		}
	})
	call := func(desk string) (map[string]any, string) {
		t.Helper()
		r := Do(t, "POST", "/v1/calls", o.Key, map[string]any{"agent_id": agent.ResolvedID(), "to_number": "+14155551234",
			"variables": map[string]any{"desk": desk, "customer_name": "Ada"}})
		g.Expect(r.Status).To(Equal(http.StatusCreated), string(r.Raw))
		id := r.Body["call_id"].(string)
		g.Eventually(func() []string { return Events(rc.ForCall(id)) }, 30*time.Second, 50*time.Millisecond).
			Should(ContainElement("call.ended"))
		var ended map[string]any
		for _, d := range rc.ForCall(id) {
			if d.Event == "call.ended" {
				ExpectSigned(g, d)
				ended = d.Call()
			}
		}
		got := Do(t, "GET", "/v1/calls/"+id, o.Key, nil)
		g.Expect(got.Status).To(Equal(http.StatusOK), string(got.Raw))
		g.Expect(ended["transfer"]).To(Equal(got.Body["transfer"]), "the event and the API agree")
		g.Expect(ended["disconnection_reason"]).To(Equal(got.Body["disconnection_reason"]))
		tr := Do(t, "GET", "/v1/calls/"+id+"/transcript", o.Key, nil)
		g.Expect(tr.Status).To(Equal(http.StatusOK), string(tr.Raw))
		return got.Body, tr.Body["transcript"].(string)
	}

	c, transcript := call("+14155550100")
	g.Expect(c["disconnection_reason"]).To(Equal("transfer_bridged"))
	x := c["transfer"].(map[string]any)
	g.Expect(x).To(HaveKeyWithValue("to", "+14155550100"))
	g.Expect(x).To(HaveKeyWithValue("method", "bridge"))
	g.Expect(x).To(HaveKeyWithValue("result", "bridged"))
	g.Expect(x["second_leg_duration_ms"]).To(BeNumerically(">", 0))
	g.Expect(transcript).To(ContainSubstring("Please hold while I connect you."))
	g.Expect(transcript).NotTo(ContainSubstring("we will call you back"))

	c, transcript = call("+14155550001")
	g.Expect(c["transfer"]).To(HaveKeyWithValue("result", "busy"))
	g.Expect(c["disconnection_reason"]).To(Equal("agent_hangup"))
	g.Expect(transcript).To(ContainSubstring("Agent: Nobody is free right now; we will call you back."))

	c, transcript = call("+14155550177")
	g.Expect(c["transfer"]).To(HaveKeyWithValue("result", "not_allowed"))
	g.Expect(c["transfer"].(map[string]any)["detail"]).To(ContainSubstring("do-not-call"))
	g.Expect(transcript).To(ContainSubstring("we will call you back"))
}
