package sip_test

// POST /v1/calls/{call_id}/stop: a call not yet dialed fails as canceled
// and is never dialed; a ringing or answered call is hung up (the
// simulator, and SIP CANCEL or BYE to real sipp callees) and ends as
// api_hangup with the disposition observed, its recording and events as
// for any ended call.

import (
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/app"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/siptest"
)

func TestStopQueuedCallIsNeverDialed(t *testing.T) {
	g := NewWithT(t)
	// A process that serves the API but runs no reconciler (a replica that
	// is not the leader): the call stays queued until the leader is back.
	WithOperatorRunning(t, false, nil)
	o := NewOrg(t)
	id := o.CreateCall(t, "+14155550150", nil)
	before := time.Now()
	r := o.StopCall(t, id)
	g.Expect(r.Status).To(Equal(http.StatusAccepted), "%s", r.Raw)
	g.Expect(r.Body).To(HaveKeyWithValue("call_id", id))
	g.Expect(r.Body).To(HaveKeyWithValue("status", "queued"))
	stopped := CallResource(t, o.Ns, id)
	g.Expect(stopped.Spec.Stop).To(BeTrue(), "the API sets spec.stop, as kubectl users can")
	requested, ok := stopped.StopRequestedAt()
	g.Expect(ok).To(BeTrue(), "the stop counts from the request: %v", stopped.Annotations)
	g.Expect(requested).To(BeTemporally(">=", before))
	g.Expect(requested).To(BeTemporally("<=", time.Now()))
	g.Expect(o.StopCall(t, id).Status).To(Equal(http.StatusAccepted), "stopping twice is no error")

	Operator.Stop()
	op, err := StartOperator(true)
	g.Expect(err).NotTo(HaveOccurred())
	Operator = op
	var call map[string]any
	g.Eventually(func() any { call = o.GetCall(t, id); return call["status"] }, 20*time.Second, 50*time.Millisecond).
		Should(Equal("failed"))
	g.Expect(call).To(HaveKeyWithValue("disconnection_reason", "canceled"))
	g.Expect(call).To(HaveKeyWithValue("started_at", BeNil()), "never dialed")
	g.Expect(call).To(HaveKeyWithValue("disposition", BeNil()))
	conflict := o.StopCall(t, id)
	g.Expect(conflict.Status).To(Equal(http.StatusConflict), "%s", conflict.Raw)
	g.Expect(Detail(t, conflict)["error_code"]).To(Equal("call_not_active"))
}

func TestStopRingingAndAnsweredSimulatedCalls(t *testing.T) {
	WithOperator(t, func(o *app.Options) { o.SimTimings = SlowCarrier })
	o := NewOrg(t)
	rc := NewReceiver(t, nil)
	ApplyEndpoint(t, o.Ns, rc.URL(), nil)

	t.Run("ringing", func(t *testing.T) {
		g := NewWithT(t)
		id := o.CreateCall(t, "+14155550151", nil)
		g.Eventually(func() any { return o.GetCall(t, id)["status"] }, 10*time.Second, 20*time.Millisecond).
			Should(Equal("in_progress"))
		r := o.StopCall(t, id)
		g.Expect(r.Status).To(Equal(http.StatusAccepted), "%s", r.Raw)
		g.Expect(r.Body).To(HaveKeyWithValue("status", "in_progress"))
		call := o.WaitAnalyzed(t, id)
		g.Expect(call).To(HaveKeyWithValue("status", "ended"))
		g.Expect(call).To(HaveKeyWithValue("disposition", "no_answer"))
		g.Expect(call).To(HaveKeyWithValue("disconnection_reason", "api_hangup"))
		g.Expect(call).To(HaveKeyWithValue("duration_ms", BeNumerically("==", 0)))
		g.Eventually(func() []string { return Events(rc.ForCall(id)) }, 10*time.Second, 20*time.Millisecond).
			Should(Equal([]string{"call.started", "call.ended", "call.analyzed"}))
	})
	t.Run("answered", func(t *testing.T) {
		g := NewWithT(t)
		id := o.CreateCall(t, "+14155550152", nil)
		time.Sleep(SlowCarrier.Ring + time.Second) // answered, talking
		g.Expect(o.StopCall(t, id).Status).To(Equal(http.StatusAccepted))
		call := o.WaitAnalyzed(t, id)
		g.Expect(call).To(HaveKeyWithValue("disposition", "answered"))
		g.Expect(call).To(HaveKeyWithValue("disconnection_reason", "api_hangup"))
		g.Expect(call["duration_ms"]).To(BeNumerically("<", SlowCarrier.Talk.Milliseconds()/2), "cut short")
		g.Expect(call["duration_ms"]).To(BeNumerically(">", 500))
		g.Expect(call["recording_url"]).NotTo(BeNil(), "recorded until the hangup")
	})
	t.Run("errors", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(o.StopCall(t, "call_0123456789abcdef0123456789abcdef").Status).To(Equal(http.StatusNotFound))
		g.Expect(o.StopCall(t, "not-a-call").Status).To(Equal(http.StatusUnprocessableEntity))
		other := NewOrg(t)
		id := other.CreateCall(t, "+14155550153", nil)
		g.Expect(o.StopCall(t, id).Status).To(Equal(http.StatusNotFound), "another organization's call")
		g.Expect(Do(t, "POST", "/v1/calls/"+id+"/stop", "", nil).Status).To(Equal(http.StatusUnauthorized))
	})
}

func TestStopSIPCalls(t *testing.T) {
	t.Run("ringing: CANCEL", func(t *testing.T) {
		g := NewWithT(t)
		callee := siptest.StartSipp(t, "udp", siptest.Scenario(t, ScenarioFile("ring_forever.xml"))...)
		o := SIPOrg(t, callee.Addr, nil, nil)
		id := o.CreateCall(t, "+14155550123", nil)
		g.Eventually(func() any { return o.GetCall(t, id)["status"] }, 10*time.Second, 20*time.Millisecond).
			Should(Equal("in_progress"))
		time.Sleep(500 * time.Millisecond) // ringing (180 received)
		g.Expect(o.StopCall(t, id).Status).To(Equal(http.StatusAccepted))
		call := o.WaitAnalyzed(t, id)
		g.Expect(call).To(HaveKeyWithValue("disposition", "no_answer"))
		g.Expect(call).To(HaveKeyWithValue("disconnection_reason", "api_hangup"))
	})
	t.Run("answered: BYE", func(t *testing.T) {
		g := NewWithT(t)
		callee := siptest.StartSipp(t, "udp", siptest.Scenario(t, ScenarioFile("uas.xml"))...)
		// No script: the agent listens until someone hangs up.
		o := SIPOrg(t, callee.Addr, nil, func(s *switchboardv1.AgentSpec) { s.Script = nil })
		created := time.Now()
		id := o.CreateCall(t, "+14155550123", nil)
		g.Eventually(func() any { return CallResource(t, o.Ns, id).Status.AnsweredAt }, 10*time.Second, 20*time.Millisecond).
			ShouldNot(BeNil())
		answeredSeen := time.Now()
		time.Sleep(time.Second)
		stopSent := time.Now()
		g.Expect(o.StopCall(t, id).Status).To(Equal(http.StatusAccepted))
		call := o.WaitAnalyzed(t, id)
		analyzedSeen := time.Now()
		g.Expect(call).To(HaveKeyWithValue("disposition", "answered"))
		g.Expect(call).To(HaveKeyWithValue("disconnection_reason", "api_hangup"))
		// Bounded by what the test saw, in order, not by a margin a loaded
		// machine can exceed: answered before the test saw it, ended after
		// the stop was sent, and before the test saw the call analyzed.
		g.Expect(call["duration_ms"]).To(BeNumerically(">=", stopSent.Sub(answeredSeen).Milliseconds()), "ended before the stop")
		g.Expect(call["duration_ms"]).To(BeNumerically("<=", analyzedSeen.Sub(created).Milliseconds()))
	})
}
