package sip_test

// Calls placed through the REST API over SIP trunks to real sipp callees.

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/app"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/siptest"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts"
)

func TestSIPCallRunsScriptAndRecordsBothParties(t *testing.T) {
	g := NewWithT(t)
	// The callee answers and talks (sipp plays a 7 s recording) until the
	// agent hangs up.
	callee := siptest.StartSipp(t, "udp", siptest.Scenario(t, ScenarioFile("callee_talks.xml"))...)
	o := SIPOrg(t, callee.Addr, nil, func(s *switchboardv1.AgentSpec) {
		s.Script = []switchboardv1.ScriptStep{
			{Say: "Hello {{customer_name}}, this is a reminder of your appointment tomorrow."},
			{Hangup: &switchboardv1.HangupStep{}},
		}
	})
	id := o.CreateCall(t, "+14155550123", nil)
	call := o.WaitAnalyzed(t, id)
	g.Expect(call).To(HaveKeyWithValue("status", "ended"))
	g.Expect(call).To(HaveKeyWithValue("disposition", "answered"))
	g.Expect(call).To(HaveKeyWithValue("disconnection_reason", "agent_hangup"))
	g.Expect(call["duration_ms"]).To(BeNumerically(">", 1000), "the greeting takes seconds to say")
	g.Expect(call["analysis"].(map[string]any)["summary"]).To(ContainSubstring("The callee answered"))

	c := CallResource(t, o.Ns, id)
	g.Expect(c.Status.Trunk).To(Equal("carrier"))
	g.Expect(c.Status.AnsweredAt).NotTo(BeNil())

	rec := Do(t, "GET", "/v1/calls/"+id+"/recording", o.Key, nil)
	g.Expect(rec.Status).To(Equal(http.StatusOK), string(rec.Raw))
	wav := Fetch(t, rec.Body["url"].(string))
	g.Expect(wav.Status).To(Equal(http.StatusOK))
	left, right := StereoEnergy(t, wav.Raw)
	g.Expect(left).To(BeNumerically(">", 100), "the agent's speech is on the left channel")
	g.Expect(right).To(BeNumerically(">", 100), "the callee's audio is on the right channel")
}

func TestSIPCallRejectedWithReason(t *testing.T) {
	g := NewWithT(t)
	callee := siptest.StartSipp(t, "udp", siptest.Scenario(t, ScenarioFile("reject_reason.xml"),
		"status", "480", "reason", "Temporarily Unavailable", "cause", "17")...)
	o := SIPOrg(t, callee.Addr, nil, nil)
	id := o.CreateCall(t, "+14155550123", nil)
	call := o.WaitAnalyzed(t, id)
	// The Q.850 cause (17, user busy) decides over the status (480).
	g.Expect(call).To(HaveKeyWithValue("disposition", "busy"))
	g.Expect(call).To(HaveKeyWithValue("disconnection_reason", "dial_busy"))
	g.Expect(call["recording_url"]).To(BeNil())
	g.Expect(call["analysis"].(map[string]any)["summary"]).To(Equal("The call was not answered: the line was busy."))
}

func TestSIPCallToMissingTrunkIsRefused(t *testing.T) {
	g := NewWithT(t)
	o := NewOrg(t)
	a := CreateAgent(t, o.Ns, "lost", func(s *switchboardv1.AgentSpec) {
		s.TrunkRef = &switchboardv1.LocalObjectReference{Name: "not-there"}
	})
	r := Do(t, "POST", "/v1/calls", o.Key, map[string]any{"agent_id": a.ResolvedID(), "to_number": "+14155550123",
		"variables": map[string]any{"customer_name": "Ada"}})
	g.Expect(r.Status).To(Equal(http.StatusBadGateway), string(r.Raw))
	d := Detail(t, r)
	g.Expect(d).To(HaveKeyWithValue("error_code", "dispatch_failed"))
	g.Expect(d["error"]).To(ContainSubstring(`SIP trunk "not-there" does not exist`))
}

func TestSIPTrunkQueueKeepsOrder(t *testing.T) {
	g := NewWithT(t)
	// Each call talks for 1.5 s and the trunk carries one at a time.
	callee := siptest.StartSipp(t, "udp", siptest.Scenario(t, ScenarioFile("callee_bye.xml"), "talk_ms", "1500")...)
	o := SIPOrg(t, callee.Addr, func(s *switchboardv1.SIPTrunkSpec) { s.MaxConcurrentCalls = ptr.To[int32](1) }, nil)
	var ids []string
	for range 3 {
		ids = append(ids, o.CreateCall(t, "+14155550123", nil))
	}
	// While the first talks, the others wait, and say why.
	g.Eventually(func() string {
		c := CallResource(t, o.Ns, ids[2])
		if cond := apimeta.FindStatusCondition(c.Status.Conditions, switchboardv1.ReadyCondition); cond != nil {
			return cond.Reason
		}
		return ""
	}, 10*time.Second, 50*time.Millisecond).Should(Equal(switchboardv1.ReasonWaitingForTrunk))
	g.Expect(o.GetCall(t, ids[2])).To(HaveKeyWithValue("status", "queued"))

	var calls []*switchboardv1.Call
	for _, id := range ids {
		call := o.WaitAnalyzed(t, id)
		g.Expect(call).To(HaveKeyWithValue("disposition", "answered"))
		g.Expect(call).To(HaveKeyWithValue("disconnection_reason", "user_hangup"))
		calls = append(calls, CallResource(t, o.Ns, id))
	}
	// They went out in the order they were placed, one after another.
	for i := 1; i < len(calls); i++ {
		g.Expect(calls[i].Status.StartedAt.Time).To(BeTemporally(">=", calls[i-1].Status.EndedAt.Time),
			"call %d started before call %d ended", i+1, i)
	}
}

func TestSIPCallCutOffByRestartEndsTruthfully(t *testing.T) {
	g := NewWithT(t)
	// The callee answers and stays on the line until hung up.
	callee := siptest.StartSipp(t, "udp", siptest.Scenario(t, ScenarioFile("uas.xml"))...)
	o := SIPOrg(t, callee.Addr, nil, nil) // no script: the agent listens
	id := o.CreateCall(t, "+14155550123", nil)
	g.Eventually(func() *metav1.MicroTime { return CallResource(t, o.Ns, id).Status.AnsweredAt },
		10*time.Second, 50*time.Millisecond).ShouldNot(BeNil())
	time.Sleep(time.Second) // some conversation

	WithOperator(t, func(*app.Options) {}) // the operator restarts mid-call

	call := o.WaitAnalyzed(t, id)
	g.Expect(call).To(HaveKeyWithValue("status", "ended"))
	g.Expect(call).To(HaveKeyWithValue("disposition", "answered"))
	g.Expect(call).To(HaveKeyWithValue("disconnection_reason", "operator_restart"))
	g.Expect(call["duration_ms"]).To(BeNumerically(">=", 900))
	g.Expect(call["analysis"].(map[string]any)["summary"]).To(ContainSubstring("cut off when Switchboard restarted"))
	// The audio recorded until the cut is kept.
	rec := Do(t, "GET", "/v1/calls/"+id+"/recording", o.Key, nil)
	g.Expect(rec.Status).To(Equal(http.StatusOK), string(rec.Raw))
	wav := Fetch(t, rec.Body["url"].(string))
	g.Expect(wav.Status).To(Equal(http.StatusOK))
	StereoEnergy(t, wav.Raw) // a well-formed stereo WAV
	g.Expect(len(wav.Raw)-44).To(BeNumerically(">=", 4*8000*900/1000), "at least the 0.9 s before the cut")
}

func TestSIPCallGathersKeyedDigitsIntoExtractedData(t *testing.T) {
	g := NewWithT(t)
	// baresip answers, stays silent for 30 s and keys what the test types.
	callee := siptest.StartBaresip(t, "+14155550123", make([]int16, 30*8000))
	o := SIPOrg(t, callee.Addr, nil, func(s *switchboardv1.AgentSpec) {
		s.Script = []switchboardv1.ScriptStep{
			{Gather: &switchboardv1.GatherStep{Field: "party_size", FinishOnKey: "#", TimeoutSeconds: 5,
				Prompt: "Hello {{customer_name}}. How many people will come? Key the number, then the pound key."}},
			{Gather: &switchboardv1.GatherStep{Field: "confirmed", NumDigits: 1, TimeoutSeconds: 5,
				Prompt: "Press 1 to confirm, or 2 to cancel."}},
			{Say: "Thank you, goodbye."},
		}
	})
	id := o.CreateCall(t, "+14155550123", nil)
	WaitAnswered(t, o.Ns, id)
	g.Expect(callee.Command("sndcode", "42#")).To(Succeed())
	time.Sleep(time.Second) // the second prompt has started
	g.Expect(callee.Command("sndcode", "1")).To(Succeed())

	call := o.WaitAnalyzed(t, id)
	g.Expect(call).To(HaveKeyWithValue("disposition", "answered"))
	g.Expect(call).To(HaveKeyWithValue("disconnection_reason", "agent_hangup"))
	analysis := call["analysis"].(map[string]any)
	g.Expect(analysis["extracted_data"]).To(Equal(map[string]any{
		"customer_name": nil, "confirmed": true, "party_size": 42.0}))
	g.Expect(analysis["summary"]).To(ContainSubstring("The callee keyed 42 for party_size, 1 for confirmed."))
}

func TestSIPCallToAnsweringMachine(t *testing.T) {
	g := NewWithT(t)
	greeting, err := (&tts.Flite{}).Speak(context.Background(), "Hi, you have reached Ada Lovelace. "+
		"I cannot take your call right now. Please leave your name, your number and a short message after the tone.")
	g.Expect(err).NotTo(HaveOccurred())
	// The machine plays its greeting, then records silence.
	callee := siptest.StartBaresip(t, "+14155550123", append(append([]int16(nil), greeting...), make([]int16, 20*8000)...))
	o := SIPOrg(t, callee.Addr, nil, func(s *switchboardv1.AgentSpec) {
		s.Script = []switchboardv1.ScriptStep{{Say: "This is only for humans."}}
		s.Voicemail = &switchboardv1.VoicemailSpec{Action: switchboardv1.VoicemailHangup}
	})
	id := o.CreateCall(t, "+14155550123", nil)
	call := o.WaitAnalyzed(t, id)
	g.Expect(call).To(HaveKeyWithValue("disposition", "answering_machine"))
	g.Expect(call).To(HaveKeyWithValue("disconnection_reason", "voicemail"))
	g.Expect(call["analysis"].(map[string]any)["summary"]).To(Equal(
		"The call reached an answering machine; the agent hung up without leaving a message."))
	g.Expect(call["recording_url"]).NotTo(BeNil())
}

func TestSIPTrunkPacesCalls(t *testing.T) {
	g := NewWithT(t)
	callee := siptest.StartSipp(t, "udp", siptest.Scenario(t, ScenarioFile("reject_reason.xml"),
		"status", "486", "reason", "Busy Here", "cause", "17")...)
	o := SIPOrg(t, callee.Addr, func(s *switchboardv1.SIPTrunkSpec) { s.CallsPerSecond = ptr.To[int32](2) }, nil)
	var ids []string
	for range 4 {
		ids = append(ids, o.CreateCall(t, "+14155550123", nil))
	}
	var started []time.Time
	for _, id := range ids {
		g.Expect(o.WaitAnalyzed(t, id)).To(HaveKeyWithValue("disposition", "busy"))
		started = append(started, CallResource(t, o.Ns, id).Status.StartedAt.Time)
	}
	// In order, and at most two per second: each half a second after the
	// one before (a millisecond of slack for the timestamps' precision).
	for i := 1; i < len(started); i++ {
		g.Expect(started[i].Sub(started[i-1])).To(BeNumerically(">=", 499*time.Millisecond),
			"call %d went out %s after call %d", i+1, started[i].Sub(started[i-1]), i)
	}
}

func TestSIPCallPlaysAudioFromConfigMap(t *testing.T) {
	g := NewWithT(t)
	callee := siptest.StartSipp(t, "udp", siptest.Scenario(t, ScenarioFile("uas.xml"))...)
	o := SIPOrg(t, callee.Addr, nil, func(s *switchboardv1.AgentSpec) {
		s.Script = []switchboardv1.ScriptStep{{Play: &switchboardv1.AudioSource{
			ConfigMapKeyRef: switchboardv1.ConfigMapKeyReference{Name: "jingles", Key: "tone.wav"}}}}
	})
	g.Expect(K8s.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: o.Ns, Name: "jingles"},
		BinaryData: map[string][]byte{"tone.wav": ToneWAV(2 * time.Second)}})).To(Succeed())
	id := o.CreateCall(t, "+14155550123", nil)
	call := o.WaitAnalyzed(t, id)
	g.Expect(call).To(HaveKeyWithValue("disposition", "answered"))
	g.Expect(call).To(HaveKeyWithValue("disconnection_reason", "agent_hangup"))
	g.Expect(call["duration_ms"]).To(BeNumerically(">=", 2000))
	rec := Do(t, "GET", "/v1/calls/"+id+"/recording", o.Key, nil)
	g.Expect(rec.Status).To(Equal(http.StatusOK), string(rec.Raw))
	left, _ := StereoEnergy(t, Fetch(t, rec.Body["url"].(string)).Raw)
	g.Expect(left).To(BeNumerically(">", 3000), "the tone is on the agent's channel")
}

func TestSIPCallWithMissingAudioFailsClearly(t *testing.T) {
	g := NewWithT(t)
	callee := siptest.StartSipp(t, "udp", siptest.Scenario(t, ScenarioFile("uas.xml"))...)
	o := SIPOrg(t, callee.Addr, nil, func(s *switchboardv1.AgentSpec) {
		s.Script = []switchboardv1.ScriptStep{{Play: &switchboardv1.AudioSource{
			ConfigMapKeyRef: switchboardv1.ConfigMapKeyReference{Name: "not-there", Key: "x.wav"}}}}
	})
	id := o.CreateCall(t, "+14155550123", nil)
	g.Eventually(func() any { return o.GetCall(t, id)["status"] }, 10*time.Second, 50*time.Millisecond).Should(Equal("failed"))
	c := CallResource(t, o.Ns, id)
	g.Expect(c.Status.Failure).NotTo(BeNil())
	g.Expect(c.Status.Failure.ErrorCode).To(Equal("dispatch_failed"))
	g.Expect(c.Status.Failure.Message).To(ContainSubstring("ConfigMap not-there"))
}

func TestAgentReadyFollowsItsTrunk(t *testing.T) {
	g := NewWithT(t)
	o := NewOrg(t)
	a := CreateAgent(t, o.Ns, "early", func(s *switchboardv1.AgentSpec) {
		s.TrunkRef = &switchboardv1.LocalObjectReference{Name: "carrier"}
	})
	ready := func() string {
		var got switchboardv1.Agent
		g.Expect(K8s.Get(context.Background(), client.ObjectKeyFromObject(a), &got)).To(Succeed())
		if c := apimeta.FindStatusCondition(got.Status.Conditions, switchboardv1.ReadyCondition); c != nil {
			return string(c.Status) + "/" + c.Reason
		}
		return ""
	}
	g.Eventually(ready, 10*time.Second, 50*time.Millisecond).Should(Equal("False/TrunkNotFound"))
	tr := ApplyTrunk(t, o.Ns, "carrier", "127.0.0.1:9", nil)
	g.Eventually(ready, 10*time.Second, 50*time.Millisecond).Should(Equal("True/Reconciled"))
	g.Expect(K8s.Delete(context.Background(), tr)).To(Succeed())
	g.Eventually(ready, 10*time.Second, 50*time.Millisecond).Should(Equal("False/TrunkNotFound"))
}

func TestSIPTrunkQueueKeepsOrderAcrossRestart(t *testing.T) {
	g := NewWithT(t)
	callee := siptest.StartSipp(t, "udp", siptest.Scenario(t, ScenarioFile("callee_bye.xml"), "talk_ms", "1000")...)
	o := SIPOrg(t, callee.Addr, func(s *switchboardv1.SIPTrunkSpec) { s.MaxConcurrentCalls = ptr.To[int32](1) }, nil)
	var ids []string
	for range 4 {
		ids = append(ids, o.CreateCall(t, "+14155550123", nil))
	}
	WaitAnswered(t, o.Ns, ids[0])
	WithOperator(t, func(*app.Options) {}) // restart while the first talks and three wait

	g.Expect(o.WaitAnalyzed(t, ids[0])).To(HaveKeyWithValue("disconnection_reason", "operator_restart"))
	var calls []*switchboardv1.Call
	for _, id := range ids[1:] {
		g.Expect(o.WaitAnalyzed(t, id)).To(HaveKeyWithValue("disconnection_reason", "user_hangup"))
		calls = append(calls, CallResource(t, o.Ns, id))
	}
	for i := 1; i < len(calls); i++ {
		g.Expect(calls[i].Status.StartedAt.Time).To(BeTemporally(">=", calls[i-1].Status.EndedAt.Time),
			"after the restart, call %d started before call %d ended", i+2, i+1)
	}
}

func TestSIPCallDispositionsFromTheWire(t *testing.T) {
	for _, tc := range []struct {
		status, reason   string
		disposition, why string
	}{
		{"486", "Busy Here", "busy", "dial_busy"},
		{"603", "Decline", "rejected", "dial_rejected"},
		{"404", "Not Found", "invalid_number", "invalid_destination"},
		{"480", "Temporarily Unavailable", "no_answer", "no_answer"},
		{"503", "Service Unavailable", "carrier_failure", "carrier_error"},
	} {
		t.Run(tc.status, func(t *testing.T) {
			g := NewWithT(t)
			callee := siptest.StartSipp(t, "udp", siptest.Scenario(t, ScenarioFile("reject.xml"),
				"status", tc.status, "reason", tc.reason)...)
			o := SIPOrg(t, callee.Addr, nil, nil)
			call := o.WaitAnalyzed(t, o.CreateCall(t, "+14155550123", nil))
			g.Expect(call).To(HaveKeyWithValue("disposition", tc.disposition))
			g.Expect(call).To(HaveKeyWithValue("disconnection_reason", tc.why))
			g.Expect(call).To(HaveKeyWithValue("duration_ms", BeNumerically("==", 0)))
		})
	}
	t.Run("ring timeout", func(t *testing.T) {
		g := NewWithT(t)
		callee := siptest.StartSipp(t, "udp", siptest.Scenario(t, ScenarioFile("ring_forever.xml"))...)
		o := SIPOrg(t, callee.Addr, func(s *switchboardv1.SIPTrunkSpec) { s.RingTimeoutSeconds = 1 }, nil)
		call := o.WaitAnalyzed(t, o.CreateCall(t, "+14155550123", nil))
		g.Expect(call).To(HaveKeyWithValue("disposition", "no_answer"))
		g.Expect(call).To(HaveKeyWithValue("disconnection_reason", "no_answer"))
	})
}

func TestSIPCallWithDigestCredentialsUntilMaxDuration(t *testing.T) {
	g := NewWithT(t)
	// The callee challenges the INVITE (401) and, once answered, never
	// hangs up: the agent's maxDurationSeconds ends the call.
	callee := siptest.StartSipp(t, "udp", siptest.Scenario(t, ScenarioFile("auth.xml"), "user", "acme", "pass", "s3cret")...)
	o := SIPOrg(t, callee.Addr, func(s *switchboardv1.SIPTrunkSpec) {
		s.CredentialsSecretRef = &switchboardv1.SecretReference{Name: "carrier-sip"}
	}, func(s *switchboardv1.AgentSpec) { s.MaxDurationSeconds = 2 })
	g.Expect(K8s.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: o.Ns, Name: "carrier-sip"},
		StringData: map[string]string{"username": "acme", "password": "s3cret"}})).To(Succeed())
	created := time.Now()
	call := o.WaitAnalyzed(t, o.CreateCall(t, "+14155550123", nil))
	analyzedSeen := time.Now()
	g.Expect(call).To(HaveKeyWithValue("disposition", "answered"))
	g.Expect(call).To(HaveKeyWithValue("disconnection_reason", "max_duration"))
	// The 2 s timer never fires early; how late it fires on a loaded
	// machine is bounded by what the test saw, not by a margin.
	g.Expect(call["duration_ms"]).To(BeNumerically(">=", 1700))
	g.Expect(call["duration_ms"]).To(BeNumerically("<=", analyzedSeen.Sub(created).Milliseconds()))
	g.Expect(call["analysis"].(map[string]any)["summary"]).To(ContainSubstring("maximum duration"))
}

func TestSIPCallAnsweredByAHumanRunsTheScript(t *testing.T) {
	g := NewWithT(t)
	hello, err := (&tts.Flite{}).Speak(context.Background(), "Hello?")
	g.Expect(err).NotTo(HaveOccurred())
	callee := siptest.StartBaresip(t, "+14155550123", append(append([]int16(nil), hello...), make([]int16, 20*8000)...))
	o := SIPOrg(t, callee.Addr, nil, func(s *switchboardv1.AgentSpec) {
		s.Script = []switchboardv1.ScriptStep{{Say: "Hello {{customer_name}}, this is Acme Dental."}}
		s.Voicemail = &switchboardv1.VoicemailSpec{Action: switchboardv1.VoicemailHangup}
	})
	call := o.WaitAnalyzed(t, o.CreateCall(t, "+14155550123", nil))
	g.Expect(call).To(HaveKeyWithValue("disposition", "answered"))
	g.Expect(call).To(HaveKeyWithValue("disconnection_reason", "agent_hangup"))
}

func TestSIPCallThroughProxyAuthentication(t *testing.T) {
	g := NewWithT(t)
	// The callee behind the proxy record-routes, so that our BYE goes
	// through the proxy too.
	callee := siptest.StartSipp(t, "udp", siptest.EditedScenario(t, ScenarioFile("uas.xml"),
		"[last_CSeq:]\n      Contact:", "[last_CSeq:]\n      [last_Record-Route:]\n      Contact:")...)
	// kamailio challenges every request with 407 until it carries these
	// credentials, then relays INVITEs to the callee.
	proxy := siptest.StartKamailio(t, filepath.Join(RepoRoot, "internal", "telephony", "sip", "engine", "testdata", "kamailio.cfg"),
		siptest.KamailioConfig{User: "acme", Password: "s3cret", Relay: callee.Addr})
	o := SIPOrg(t, proxy.Addr, func(s *switchboardv1.SIPTrunkSpec) {
		s.CredentialsSecretRef = &switchboardv1.SecretReference{Name: "carrier-sip"}
	}, func(s *switchboardv1.AgentSpec) { s.MaxDurationSeconds = 1 })
	g.Expect(K8s.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: o.Ns, Name: "carrier-sip"},
		StringData: map[string]string{"username": "acme", "password": "s3cret"}})).To(Succeed())
	// The trunk's OPTIONS probe passes the same challenge.
	WaitTrunkReady(t, o.Ns, "carrier", metav1.ConditionTrue, switchboardv1.ReasonReachable)

	call := o.WaitAnalyzed(t, o.CreateCall(t, "+14155550123", nil))
	g.Expect(call).To(HaveKeyWithValue("disposition", "answered"))
	g.Expect(call).To(HaveKeyWithValue("disconnection_reason", "max_duration"))
}
