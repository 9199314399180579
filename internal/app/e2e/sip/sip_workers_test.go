package sip_test

import (
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/app"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/siptest"
)

// Real SIP calls on two workers against one sipp callee: the calls spread
// over both, and each call's signalling and media stay on the worker that
// carries it. Each worker has its own SIP listener and RTP ports; a call
// whose BYE or audio went to the other would not end agent_hangup with the
// callee's audio on its recording's right channel.
func TestSIPCallsOnTwoWorkers(t *testing.T) {
	g := NewWithT(t)
	callee := siptest.StartSipp(t, "udp", siptest.Scenario(t, ScenarioFile("callee_talks.xml"))...)
	// The suite's operator is one worker; a second replica is another.
	second, err := StartOperator(true, func(o *app.Options) { o.Worker.ID = "second-worker" })
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(second.Stop)
	o := SIPOrg(t, callee.Addr, func(s *switchboardv1.SIPTrunkSpec) { s.CallsPerSecond = ptr.To[int32](20) },
		func(s *switchboardv1.AgentSpec) {
			s.Script = []switchboardv1.ScriptStep{{Say: "Hello {{customer_name}}, see you tomorrow."},
				{Hangup: &switchboardv1.HangupStep{}}}
		})
	const n = 6
	ids := make([]string, n)
	for i := range ids {
		ids[i] = o.CreateCall(t, "+14155550123", nil)
	}
	carried := map[string]int{}
	for _, id := range ids {
		call := o.WaitAnalyzed(t, id)
		g.Expect(call).To(HaveKeyWithValue("disposition", "answered"), id)
		g.Expect(call).To(HaveKeyWithValue("disconnection_reason", "agent_hangup"), id)
		rec := Do(t, "GET", "/v1/calls/"+id+"/recording", o.Key, nil)
		g.Expect(rec.Status).To(Equal(http.StatusOK), string(rec.Raw))
		left, right := StereoEnergy(t, Fetch(t, rec.Body["url"].(string)).Raw)
		g.Expect(left).To(BeNumerically(">", 100), "%s: the agent's speech on the left channel", id)
		g.Expect(right).To(BeNumerically(">", 100), "%s: the callee's audio reached its worker", id)
		carried[CallResource(t, o.Ns, id).Labels[switchboardv1.WorkerLabel]]++
	}
	t.Logf("%d SIP calls over two workers: %v", n, carried)
	g.Expect(carried).To(HaveLen(2), "both workers carry calls")
	g.Expect(carried).To(HaveKey("second-worker"))
}
