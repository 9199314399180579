package sip_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/siptest"
)

// Issue 41 through the whole operator: an agent's script hands the callee
// (baresip) to a person by REFER through a PBX (kamailio, which routes the
// person's number +1999555... to a sipp that answers). baresip calls the
// person and reports it in NOTIFYs; the final NOTIFY's 200 is what makes
// the call transferred: call_transfer in the REST API, in the call.ended
// event and in kubectl get calls -o wide.
func TestSIPTransferByRefer(t *testing.T) {
	g := NewWithT(t)
	person := siptest.StartSipp(t, "udp", "-sf", ScenarioFile("uas.xml"), "-m", "1")
	callee := siptest.StartBaresip(t, "+14155550123", make([]int16, 4*8000))
	pbx := siptest.StartKamailio(t, ScenarioFile("kamailio_pbx.cfg"),
		siptest.KamailioConfig{Relay: callee.Addr, Target: person.Addr})
	o := SIPOrg(t, pbx.Addr, nil, func(s *switchboardv1.AgentSpec) {
		s.TransferDestinations = []string{"+1999555*"}
		s.SIPHeaders = map[string]switchboardv1.SIPHeaderValue{"X-Desk": "billing"}
		s.Script = []switchboardv1.ScriptStep{
			{Say: "Let me connect you with billing."},
			{Transfer: &switchboardv1.TransferStep{To: "+19995550199", Next: "sorry"}},
			{Hangup: &switchboardv1.HangupStep{}},
			{ID: "sorry", Say: "Nobody is free right now."},
		}
	})
	rc := NewReceiver(t, nil)
	_, secret := ApplyEndpoint(t, o.Ns, rc.URL(), nil)
	rc.Trust(secret)

	id := o.CreateCall(t, "+14155550123", nil)
	call := o.WaitAnalyzed(t, id)
	g.Expect(call).To(HaveKeyWithValue("disconnection_reason", "call_transfer"))
	x, _ := call["transfer"].(map[string]any)
	g.Expect(x).To(HaveKeyWithValue("to", "+19995550199"))
	g.Expect(x).To(HaveKeyWithValue("method", "refer"))
	g.Expect(x).To(HaveKeyWithValue("result", "transferred"))
	g.Expect(x).To(HaveKeyWithValue("sip_status", 200.0))

	g.Eventually(func() []string { return Events(rc.ForCall(id)) }, 20*time.Second, 50*time.Millisecond).
		Should(ContainElement("call.ended"))
	for _, d := range rc.ForCall(id) {
		if d.Event == "call.ended" {
			g.Expect(d.Call()["transfer"]).To(Equal(call["transfer"]))
			g.Expect(d.Call()).To(HaveKeyWithValue("disconnection_reason", "call_transfer"))
		}
	}
	r := Do(t, "GET", "/v1/calls/"+id+"/transcript", o.Key, nil)
	g.Expect(r.Status).To(Equal(http.StatusOK), string(r.Raw))
	g.Expect(r.Body["transcript"]).To(ContainSubstring("Agent: Let me connect you with billing."))
	g.Expect(r.Body["transcript"]).NotTo(ContainSubstring("Nobody is free"))

	wide := ControlPlane.Kubectl(t).MustRun(t, "get", "calls", "-n", o.Ns, "-o", "wide").Stdout
	g.Expect(strings.Fields(wide)).To(ContainElements("call_transfer", "transferred", "+19995550199"))
}
