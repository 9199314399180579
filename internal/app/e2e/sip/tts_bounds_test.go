package sip_test

// Text-to-speech is bounded: what a call's variables make an agent say,
// and how long synthesis may take, away from the reconcile workers every
// call shares.

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/app"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
	"github.com/switchboard-dev/switchboard/internal/callid"
)

func TestTooLongSpokenTextIsRefusedAtCreate(t *testing.T) {
	g := NewWithT(t)
	o := NewOrg(t)
	agentID := NoteAgent(t, o)
	post := func(note string) Response {
		return Do(t, "POST", "/v1/calls", o.Key, map[string]any{"agent_id": agentID, "to_number": "+14155550123",
			"variables": map[string]any{"customer_name": "Ada", "note": note}})
	}
	// Five notes of 818 characters and the 4 spaces between them: 4094.
	fits := post(strings.Repeat("n", 818))
	g.Expect(fits.Status).To(Equal(http.StatusCreated), string(fits.Raw))

	// One variable within its own limit (1,024 bytes), said five times: 5124.
	r := post(strings.Repeat("n", 1024))
	g.Expect(r.Status).To(Equal(http.StatusUnprocessableEntity), string(r.Raw))
	d := Detail(t, r)
	g.Expect(d["error_code"]).To(Equal("spoken_text_too_long"))
	g.Expect(d["error"]).To(And(ContainSubstring("script step 1 would be 5124 characters long"),
		ContainSubstring("over the 4096"), ContainSubstring("shorten note")))
	g.Expect(d["call_id"]).To(BeNil(), "no call record is left")
	var calls switchboardv1.CallList
	g.Expect(K8s.List(context.Background(), &calls, client.InNamespace(o.Ns))).To(Succeed())
	g.Expect(calls.Items).To(HaveLen(1), "only the call that fits was created")
}

// A Call applied with kubectl never met the REST API's check: the
// reconciler fails it with the same code before any text-to-speech.
func TestTooLongSpokenTextFailsAnAppliedCall(t *testing.T) {
	g := NewWithT(t)
	o := NewOrg(t)
	agentID := NoteAgent(t, o)
	c := &switchboardv1.Call{
		ObjectMeta: metav1.ObjectMeta{Namespace: o.Ns, Name: callid.ResourceName(callid.New())},
		Spec: switchboardv1.CallSpec{AgentID: agentID, ToNumber: "+14155550123",
			Variables: JSONObject(`{"customer_name":"Ada","note":"` + strings.Repeat("n", 1024) + `"}`)},
	}
	g.Expect(K8s.Create(context.Background(), c)).To(Succeed())
	g.Eventually(func() *switchboardv1.CallFailure {
		g.Expect(K8s.Get(context.Background(), client.ObjectKeyFromObject(c), c)).To(Succeed())
		return c.Status.Failure
	}, 10*time.Second, 50*time.Millisecond).ShouldNot(BeNil())
	g.Expect(c.Status.Phase).To(Equal(switchboardv1.CallFailed))
	g.Expect(c.Status.Failure.ErrorCode).To(Equal("spoken_text_too_long"))
	g.Expect(c.Status.Failure.Message).To(ContainSubstring("5124 characters"))
}

// A synthesis that hangs holds neither the call reconciler's workers (here
// only one) nor the call forever: another call goes through meanwhile, and
// the SIP call fails once flite has had its time, saying so.
func TestHangingSynthesisIsKilledOutsideTheSharedWorkers(t *testing.T) {
	g := NewWithT(t)
	const ttsTimeout = 4 * time.Second
	WithOperator(t, func(o *app.Options) {
		o.SIP.Flite = HangingFlite(t)
		o.SIP.TTSTimeout = ttsTimeout
		o.MaxConcurrentCalls = 1
	})
	// No INVITE is ever sent: nothing needs to listen on the trunk.
	o := SIPOrg(t, "127.0.0.1:9", nil, func(s *switchboardv1.AgentSpec) {
		s.Script = []switchboardv1.ScriptStep{{Say: "Hello {{customer_name}}, about your appointment."}}
	})
	sim := CreateAgent(t, o.Ns, "simulated", func(*switchboardv1.AgentSpec) {})
	start := time.Now()
	sipCall := o.CreateCall(t, "+14155550123", nil)
	simCall := o.CreateCall(t, "+14155550124", map[string]any{"agent_id": sim.ResolvedID()})

	g.Eventually(func() any { return o.GetCall(t, simCall)["status"] }, ttsTimeout-time.Second, 50*time.Millisecond).
		Should(Equal("ended"), "the simulated call waited for the SIP call's text-to-speech")
	c := CallResource(t, o.Ns, sipCall)
	g.Expect(c.CurrentPhase()).To(Equal(switchboardv1.CallQueued), "the SIP call is still being prepared")
	ready := apimeta.FindStatusCondition(c.Status.Conditions, switchboardv1.ReadyCondition)
	g.Expect(ready).NotTo(BeNil())
	g.Expect(ready.Reason).To(Equal(switchboardv1.ReasonPreparingScript))

	g.Eventually(func() any { return o.GetCall(t, sipCall)["status"] }, 2*ttsTimeout, 50*time.Millisecond).Should(Equal("failed"))
	g.Expect(time.Since(start)).To(BeNumerically(">=", ttsTimeout))
	c = CallResource(t, o.Ns, sipCall)
	g.Expect(c.Status.Failure.ErrorCode).To(Equal("dispatch_failed"))
	g.Expect(c.Status.Failure.Message).To(ContainSubstring(
		"the agent's script could not be prepared: step 1: text-to-speech: flite did not finish within 4s and was stopped"))
}
