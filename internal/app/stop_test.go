package app_test

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
	"github.com/switchboard-dev/switchboard/internal/telephony/sim"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/siptest"
)

// slowCarrier rings for 3 s and talks for 20 s: long enough to stop a call
// in either state.
var slowCarrier = sim.Timings{Ring: 3 * time.Second, Talk: 20 * time.Second, Voicemail: 20 * time.Second}

func (o *org) stopCall(t *testing.T, id string) response {
	t.Helper()
	return do(t, "POST", "/v1/calls/"+id+"/stop", o.key, nil)
}

func TestStopQueuedCallIsNeverDialed(t *testing.T) {
	g := NewWithT(t)
	// A process that serves the API but runs no reconciler (a replica that
	// is not the leader): the call stays queued until the leader is back.
	withOperatorRunning(t, false, nil)
	o := newOrg(t)
	id := o.createCall(t, "+14155550150", nil)
	before := time.Now()
	r := o.stopCall(t, id)
	g.Expect(r.status).To(Equal(http.StatusAccepted), "%s", r.raw)
	g.Expect(r.body).To(HaveKeyWithValue("call_id", id))
	g.Expect(r.body).To(HaveKeyWithValue("status", "queued"))
	stopped := callResource(t, o.ns, id)
	g.Expect(stopped.Spec.Stop).To(BeTrue(), "the API sets spec.stop, as kubectl users can")
	requested, ok := stopped.StopRequestedAt()
	g.Expect(ok).To(BeTrue(), "the stop counts from the request: %v", stopped.Annotations)
	g.Expect(requested).To(BeTemporally(">=", before))
	g.Expect(requested).To(BeTemporally("<=", time.Now()))
	g.Expect(o.stopCall(t, id).status).To(Equal(http.StatusAccepted), "stopping twice is no error")

	operator.stop()
	op, err := startOperator(true)
	g.Expect(err).NotTo(HaveOccurred())
	operator = op
	var call map[string]any
	g.Eventually(func() any { call = o.getCall(t, id); return call["status"] }, 20*time.Second, 50*time.Millisecond).
		Should(Equal("failed"))
	g.Expect(call).To(HaveKeyWithValue("disconnection_reason", "canceled"))
	g.Expect(call).To(HaveKeyWithValue("started_at", BeNil()), "never dialed")
	g.Expect(call).To(HaveKeyWithValue("disposition", BeNil()))
	conflict := o.stopCall(t, id)
	g.Expect(conflict.status).To(Equal(http.StatusConflict), "%s", conflict.raw)
	g.Expect(detail(t, conflict)["error_code"]).To(Equal("call_not_active"))
}

func TestStopRingingAndAnsweredSimulatedCalls(t *testing.T) {
	withOperator(t, func(o *app.Options) { o.SimTimings = slowCarrier })
	o := newOrg(t)
	rc := newReceiver(t, nil)
	applyEndpoint(t, o.ns, rc.url(), nil)

	t.Run("ringing", func(t *testing.T) {
		g := NewWithT(t)
		id := o.createCall(t, "+14155550151", nil)
		g.Eventually(func() any { return o.getCall(t, id)["status"] }, 10*time.Second, 20*time.Millisecond).
			Should(Equal("in_progress"))
		r := o.stopCall(t, id)
		g.Expect(r.status).To(Equal(http.StatusAccepted), "%s", r.raw)
		g.Expect(r.body).To(HaveKeyWithValue("status", "in_progress"))
		call := o.waitAnalyzed(t, id)
		g.Expect(call).To(HaveKeyWithValue("status", "ended"))
		g.Expect(call).To(HaveKeyWithValue("disposition", "no_answer"))
		g.Expect(call).To(HaveKeyWithValue("disconnection_reason", "api_hangup"))
		g.Expect(call).To(HaveKeyWithValue("duration_ms", BeNumerically("==", 0)))
		g.Eventually(func() []string { return events(rc.forCall(id)) }, 10*time.Second, 20*time.Millisecond).
			Should(Equal([]string{"call.started", "call.ended", "call.analyzed"}))
	})
	t.Run("answered", func(t *testing.T) {
		g := NewWithT(t)
		id := o.createCall(t, "+14155550152", nil)
		time.Sleep(slowCarrier.Ring + time.Second) // answered, talking
		g.Expect(o.stopCall(t, id).status).To(Equal(http.StatusAccepted))
		call := o.waitAnalyzed(t, id)
		g.Expect(call).To(HaveKeyWithValue("disposition", "answered"))
		g.Expect(call).To(HaveKeyWithValue("disconnection_reason", "api_hangup"))
		g.Expect(call["duration_ms"]).To(BeNumerically("<", slowCarrier.Talk.Milliseconds()/2), "cut short")
		g.Expect(call["duration_ms"]).To(BeNumerically(">", 500))
		g.Expect(call["recording_url"]).NotTo(BeNil(), "recorded until the hangup")
	})
	t.Run("errors", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(o.stopCall(t, "call_0123456789abcdef0123456789abcdef").status).To(Equal(http.StatusNotFound))
		g.Expect(o.stopCall(t, "not-a-call").status).To(Equal(http.StatusUnprocessableEntity))
		other := newOrg(t)
		id := other.createCall(t, "+14155550153", nil)
		g.Expect(o.stopCall(t, id).status).To(Equal(http.StatusNotFound), "another organization's call")
		g.Expect(do(t, "POST", "/v1/calls/"+id+"/stop", "", nil).status).To(Equal(http.StatusUnauthorized))
	})
}

func TestStopSIPCalls(t *testing.T) {
	t.Run("ringing: CANCEL", func(t *testing.T) {
		g := NewWithT(t)
		callee := siptest.StartSipp(t, "udp", siptest.Scenario(t, scenarioFile("ring_forever.xml"))...)
		o := sipOrg(t, callee.Addr, nil, nil)
		id := o.createCall(t, "+14155550123", nil)
		g.Eventually(func() any { return o.getCall(t, id)["status"] }, 10*time.Second, 20*time.Millisecond).
			Should(Equal("in_progress"))
		time.Sleep(500 * time.Millisecond) // ringing (180 received)
		g.Expect(o.stopCall(t, id).status).To(Equal(http.StatusAccepted))
		call := o.waitAnalyzed(t, id)
		g.Expect(call).To(HaveKeyWithValue("disposition", "no_answer"))
		g.Expect(call).To(HaveKeyWithValue("disconnection_reason", "api_hangup"))
	})
	t.Run("answered: BYE", func(t *testing.T) {
		g := NewWithT(t)
		callee := siptest.StartSipp(t, "udp", siptest.Scenario(t, scenarioFile("uas.xml"))...)
		// No script: the agent listens until someone hangs up.
		o := sipOrg(t, callee.Addr, nil, func(s *switchboardv1.AgentSpec) { s.Script = nil })
		created := time.Now()
		id := o.createCall(t, "+14155550123", nil)
		g.Eventually(func() any { return callResource(t, o.ns, id).Status.AnsweredAt }, 10*time.Second, 20*time.Millisecond).
			ShouldNot(BeNil())
		answeredSeen := time.Now()
		time.Sleep(time.Second)
		stopSent := time.Now()
		g.Expect(o.stopCall(t, id).status).To(Equal(http.StatusAccepted))
		call := o.waitAnalyzed(t, id)
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
