package webhooks_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/app"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
	"github.com/switchboard-dev/switchboard/internal/history"
)

// TestWebhookEventsOfAnsweredCall follows an answered call: the receiver
// gets call.started, call.ended and call.analyzed, in that order, each
// signed, each with its own delivery id, each carrying the call as it was.
func TestWebhookEventsOfAnsweredCall(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	o := NewOrg(t)
	rc := NewReceiver(t, nil)
	ep, secret := ApplyEndpoint(t, o.Ns, rc.URL(), nil)
	rc.Trust(secret)

	id := o.CreateCall(t, "+14155551234", map[string]any{"metadata": map[string]any{"order": 7}})
	g.Eventually(func() []string { return Events(rc.ForCall(id)) }, 20*time.Second, 20*time.Millisecond).
		Should(Equal([]string{"call.started", "call.ended", "call.analyzed"}))

	got := rc.ForCall(id)
	ids := map[string]bool{}
	for _, d := range got {
		ExpectSigned(g, d)
		ids[d.ID] = true
		g.Expect(d.Call()).To(HaveKeyWithValue("metadata", map[string]any{"order": 7.0}))
		g.Expect(d.Call()).To(HaveKeyWithValue("agent_id", o.AgentID))
		g.Expect(d.Call()).NotTo(HaveKey("transcript"))
		g.Expect(d.Header.Get("X-Service-Event")).To(Equal(d.Event))
	}
	g.Expect(ids).To(HaveLen(3), "each event has its own delivery id")
	started, ended, analyzed := got[0].Call(), got[1].Call(), got[2].Call()
	g.Expect(started["started_at"]).NotTo(BeNil())
	g.Expect(ended).To(HaveKeyWithValue("status", "ended"))
	g.Expect(ended).To(HaveKeyWithValue("disposition", "answered"))
	g.Expect(ended["ended_at"]).NotTo(BeNil())
	g.Expect(ended).To(HaveKeyWithValue("duration_ms", BeNumerically("==", TestTimings.Talk.Milliseconds())))
	g.Expect(analyzed["analysis"]).To(HaveKeyWithValue("summary", ContainSubstring("answered")))

	// The analyzed event's recording link is fresh and works.
	link, _ := analyzed["recording_url"].(string)
	g.Expect(link).To(HavePrefix(Operator.BaseURL + "/recordings/"))
	resp, err := http.Get(link) //nolint:noctx // test
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))

	// Durable records: one succeeded delivery per event. They are not owned
	// by the call: they outlive it in the cluster (--call-retention).
	g.Eventually(func() []string {
		var phases []string
		for _, d := range DeliveriesOf(t, o.Ns, CallName(id)) {
			phases = append(phases, d.Spec.Event+"="+string(d.Status.Phase))
			g.Expect(d.OwnerReferences).To(BeEmpty())
			g.Expect(d.Spec.EndpointID).To(Equal(ep.ResolvedID()))
			g.Expect(ids).To(HaveKey(d.Spec.DeliveryID))
		}
		return phases
	}, 5*time.Second, 20*time.Millisecond).Should(ConsistOf(
		"call.started=succeeded", "call.ended=succeeded", "call.analyzed=succeeded"))

	// The endpoint reports the latest result.
	g.Eventually(func() string {
		g.Expect(K8s.Get(context.Background(), client.ObjectKeyFromObject(ep), ep)).To(Succeed())
		return ep.Status.LastDeliveryResult
	}, 5*time.Second, 20*time.Millisecond).Should(Equal("200"))
	g.Expect(apimeta.IsStatusConditionFalse(ep.Status.Conditions, switchboardv1.DegradedCondition)).To(BeTrue())
}

// TestWebhookEventsOfUnansweredAndFailedCalls: a busy call still starts,
// ends and is analyzed; a call that fails after being accepted (a Call
// applied for an agent that does not exist) is announced as ended.
func TestWebhookEventsOfUnansweredAndFailedCalls(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	o := NewOrg(t)
	rc := NewReceiver(t, nil)
	_, secret := ApplyEndpoint(t, o.Ns, rc.URL(), nil)
	rc.Trust(secret)

	busy := o.CreateCall(t, "+14155550001", nil)
	g.Eventually(func() []string { return Events(rc.ForCall(busy)) }, 20*time.Second, 20*time.Millisecond).
		Should(Equal([]string{"call.started", "call.ended", "call.analyzed"}))
	g.Expect(rc.ForCall(busy)[1].Call()).To(HaveKeyWithValue("disposition", "busy"))
	g.Expect(rc.ForCall(busy)[1].Call()["recording_url"]).To(BeNil())

	orphan := &switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Namespace: o.Ns, Name: "no-such-agent"},
		Spec: switchboardv1.CallSpec{AgentID: "00000000-0000-4000-8000-000000000000", ToNumber: "+14155551234"}}
	g.Expect(K8s.Create(context.Background(), orphan)).To(Succeed())
	var failed []Delivery
	g.Eventually(func() []string {
		failed = nil
		for _, d := range rc.Deliveries() {
			if d.Call()["to_number"] == "+14155551234" && d.Call()["status"] == "failed" {
				failed = append(failed, d)
			}
		}
		return Events(failed)
	}, 20*time.Second, 20*time.Millisecond).Should(Equal([]string{"call.ended"}))
	ExpectSigned(g, failed[0])

	// Refused calls (the create answered 422) announce nothing.
	blocked := &switchboardv1.NumberList{ObjectMeta: metav1.ObjectMeta{Namespace: o.Ns, Name: "dnc"},
		Spec: switchboardv1.NumberListSpec{Type: switchboardv1.DoNotCall, Numbers: []string{"+14155557777"}}}
	g.Expect(K8s.Create(context.Background(), blocked)).To(Succeed())
	var refusedID string
	g.Eventually(func() int {
		r := Do(t, "POST", "/v1/calls", o.Key, map[string]any{"agent_id": o.AgentID, "to_number": "+14155557777",
			"variables": map[string]any{"customer_name": "Ada"}})
		if r.Status == http.StatusUnprocessableEntity {
			refusedID, _ = Detail(t, r)["call_id"].(string)
		}
		return r.Status
	}, 5*time.Second, 50*time.Millisecond).Should(Equal(http.StatusUnprocessableEntity))
	g.Consistently(func() []Delivery { return rc.ForCall(refusedID) }, time.Second, 50*time.Millisecond).Should(BeEmpty())
}

// TestWebhookSubscriptions: an endpoint gets only the kinds it subscribes
// to; a disabled one gets nothing.
func TestWebhookSubscriptions(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	o := NewOrg(t)
	endedOnly, disabled := NewReceiver(t, nil), NewReceiver(t, nil)
	_, secret := ApplyEndpoint(t, o.Ns, endedOnly.URL(), func(s *switchboardv1.WebhookEndpointSpec) {
		s.Events = []switchboardv1.WebhookEventType{"call.ended"}
	})
	endedOnly.Trust(secret)
	ApplyEndpoint(t, o.Ns, disabled.URL(), func(s *switchboardv1.WebhookEndpointSpec) { s.Disabled = true })

	id := o.CreateCall(t, "+14155551234", nil)
	o.WaitAnalyzed(t, id)
	g.Eventually(func() []string { return Events(endedOnly.ForCall(id)) }, 10*time.Second, 20*time.Millisecond).
		Should(Equal([]string{"call.ended"}))
	g.Consistently(func() []string { return Events(endedOnly.ForCall(id)) }, time.Second, 50*time.Millisecond).
		Should(Equal([]string{"call.ended"}))
	g.Expect(disabled.Deliveries()).To(BeEmpty())
}

// TestWebhookRetriesUntilSuccess: a receiver failing with 500 gets the
// same delivery again, same id, until it answers 200.
func TestWebhookRetriesUntilSuccess(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	o := NewOrg(t)
	rc := NewReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n < 2 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	_, secret := ApplyEndpoint(t, o.Ns, rc.URL(), OnlyCallStarted)
	rc.Trust(secret)
	id := o.CreateCall(t, "+14155551234", nil)
	g.Eventually(func() int { return len(rc.ForCall(id)) }, 10*time.Second, 20*time.Millisecond).Should(Equal(3))
	got := rc.ForCall(id)
	for _, d := range got {
		ExpectSigned(g, d)
		g.Expect(d.ID).To(Equal(got[0].ID), "every attempt carries the same delivery id")
	}
	// The schedule's delays are kept between attempts.
	g.Expect(got[1].At.Sub(got[0].At)).To(BeNumerically(">=", TestSchedule[1]-50*time.Millisecond))
	g.Expect(got[2].At.Sub(got[1].At)).To(BeNumerically(">=", TestSchedule[2]-50*time.Millisecond))

	var d history.Delivery
	g.Eventually(func() history.DeliveryPhase {
		d = DeliveriesOf(t, o.Ns, CallName(id))[0]
		return d.Status.Phase
	}, 5*time.Second, 20*time.Millisecond).Should(Equal(history.DeliverySucceeded))
	g.Expect(d.Status.AttemptCount).To(BeEquivalentTo(3))
	g.Expect(d.Status.Attempts).To(HaveLen(3))
	g.Expect(d.Status.Attempts[0].StatusCode).To(BeEquivalentTo(500))
	g.Expect(d.Status.Attempts[2].StatusCode).To(BeEquivalentTo(204))
	g.Consistently(func() int { return len(rc.ForCall(id)) }, 1500*time.Millisecond, 100*time.Millisecond).Should(Equal(3))
}

// TestWebhookGivesUp: a receiver that cannot be reached gets every
// scheduled attempt, then the delivery fails, a Kubernetes Event says so,
// and the endpoint is Degraded.
func TestWebhookGivesUp(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	o := NewOrg(t)
	rc := NewReceiver(t, nil)
	url := rc.URL()
	rc.Srv.Close() // connection refused from now on
	ep, _ := ApplyEndpoint(t, o.Ns, url, OnlyCallStarted)
	id := o.CreateCall(t, "+14155551234", nil)

	var d history.Delivery
	g.Eventually(func() history.DeliveryPhase {
		if ds := DeliveriesOf(t, o.Ns, CallName(id)); len(ds) == 1 {
			d = ds[0]
		}
		return d.Status.Phase
	}, 15*time.Second, 50*time.Millisecond).Should(Equal(history.DeliveryFailed))
	g.Expect(d.Status.AttemptCount).To(BeEquivalentTo(len(TestSchedule)))
	g.Expect(d.Status.Attempts[0].StatusCode).To(BeZero())
	g.Expect(d.Status.Attempts[0].Error).To(ContainSubstring("refused"))
	g.Expect(d.Status.LastError).To(HavePrefix("gave up after 4 attempts"))
	g.Expect(d.Status.NextAttemptAt).To(BeNil())

	g.Eventually(func() bool {
		g.Expect(K8s.Get(context.Background(), client.ObjectKeyFromObject(ep), ep)).To(Succeed())
		return apimeta.IsStatusConditionTrue(ep.Status.Conditions, switchboardv1.DegradedCondition)
	}, 10*time.Second, 50*time.Millisecond).Should(BeTrue())
	g.Expect(ep.Status.FailingSince).NotTo(BeNil())
	g.Eventually(func() []string { return EventReasons(t, o.Ns, ep.Name) }, 5*time.Second, 50*time.Millisecond).
		Should(ContainElement("DeliveryFailed"))
}

// TestWebhookGoneDisablesEndpoint: 410 Gone ends the delivery at once and
// disables the endpoint, saying why; no further events go there.
func TestWebhookGoneDisablesEndpoint(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	o := NewOrg(t)
	rc := NewReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusGone) })
	ep, secret := ApplyEndpoint(t, o.Ns, rc.URL(), nil)
	rc.Trust(secret)
	id := o.CreateCall(t, "+14155551234", nil)
	g.Eventually(func() bool {
		g.Expect(K8s.Get(context.Background(), client.ObjectKeyFromObject(ep), ep)).To(Succeed())
		return ep.Spec.Disabled
	}, 10*time.Second, 20*time.Millisecond).Should(BeTrue())
	g.Expect(ep.Annotations[switchboardv1.WebhookDisabledReasonAnnotation]).To(ContainSubstring("410 Gone"))
	g.Eventually(func() string {
		g.Expect(K8s.Get(context.Background(), client.ObjectKeyFromObject(ep), ep)).To(Succeed())
		c := apimeta.FindStatusCondition(ep.Status.Conditions, switchboardv1.DisabledCondition)
		if c == nil || c.Status != metav1.ConditionTrue {
			return ""
		}
		return c.Reason
	}, 5*time.Second, 20*time.Millisecond).Should(Equal(switchboardv1.ReasonDisabledBySystem))

	o.WaitAnalyzed(t, id)
	time.Sleep(500 * time.Millisecond)
	g.Expect(Events(rc.ForCall(id))).To(Equal([]string{"call.started"}), "nothing after the 410")
	for _, d := range DeliveriesOf(t, o.Ns, CallName(id)) {
		g.Expect(d.Status.Phase).To(Equal(history.DeliveryFailed), d.Spec.Event)
		if d.Spec.Event == "call.started" {
			g.Expect(d.Status.AttemptCount).To(BeEquivalentTo(1))
		}
	}
}

// TestWebhookHonoursRetryAfter: a 429 with Retry-After waits that long,
// not the schedule's 300 ms.
func TestWebhookHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	o := NewOrg(t)
	rc := NewReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 0 {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	_, secret := ApplyEndpoint(t, o.Ns, rc.URL(), OnlyCallStarted)
	rc.Trust(secret)
	id := o.CreateCall(t, "+14155551234", nil)
	g.Eventually(func() int { return len(rc.ForCall(id)) }, 10*time.Second, 20*time.Millisecond).Should(Equal(2))
	got := rc.ForCall(id)
	g.Expect(got[1].At.Sub(got[0].At)).To(BeNumerically(">=", 2*time.Second-50*time.Millisecond),
		"%+v", DeliveriesOf(t, o.Ns, CallName(id))[0].Status)
}

// TestWebhookReceiverThatHangs: an attempt gets 10 seconds, then counts as
// failed with a timeout, and the next attempt goes out.
func TestWebhookReceiverThatHangs(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	o := NewOrg(t)
	var abandoned atomic.Bool // the first attempt was given up before its 15 s answer
	rc := NewReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 0 {
			select {
			case <-r.Context().Done():
				abandoned.Store(true)
			case <-time.After(15 * time.Second):
			}
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	_, secret := ApplyEndpoint(t, o.Ns, rc.URL(), OnlyCallStarted)
	rc.Trust(secret)
	id := o.CreateCall(t, "+14155551234", nil)
	g.Eventually(func() int { return len(rc.ForCall(id)) }, 20*time.Second, 50*time.Millisecond).Should(Equal(2))
	got := rc.ForCall(id)
	// The timeout never fires early; that it fired at all, not the
	// receiver's answer, is in the order of events, which a loaded
	// machine cannot change: the receiver saw the attempt abandoned.
	g.Expect(got[1].At.Sub(got[0].At)).To(BeNumerically(">=", 10*time.Second-100*time.Millisecond))
	g.Eventually(abandoned.Load, 3*time.Second, 20*time.Millisecond).Should(BeTrue(),
		"the first attempt was not given up before the receiver's answer")
	g.Eventually(func() []history.DeliveryAttempt {
		return DeliveriesOf(t, o.Ns, CallName(id))[0].Status.Attempts
	}, 5*time.Second, 50*time.Millisecond).Should(HaveLen(2))
	attempts := DeliveriesOf(t, o.Ns, CallName(id))[0].Status.Attempts
	g.Expect(attempts[0].Error).To(Equal("timed out after 10s"))
	g.Expect(attempts[0].StatusCode).To(BeZero())
	g.Expect(attempts[1].StatusCode).To(BeEquivalentTo(200))
}

// TestWebhookSecretInCustomSecret: an endpoint may name its own Secret.
func TestWebhookSecretInCustomSecret(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	o := NewOrg(t)
	rc := NewReceiver(t, nil)
	own := "whsec_QUJDRA==" // 4 bytes: too short, Ready=False
	secret := NewSecretObject(o.Ns, "my-secret", own)
	g.Expect(K8s.Create(context.Background(), secret)).To(Succeed())
	ep := &switchboardv1.WebhookEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: o.Ns, Name: "own-secret"},
		Spec: switchboardv1.WebhookEndpointSpec{URL: rc.URL(), SecretRef: &switchboardv1.SecretReference{Name: "my-secret"}}}
	g.Expect(K8s.Create(context.Background(), ep)).To(Succeed())
	g.Eventually(func() string {
		g.Expect(K8s.Get(context.Background(), client.ObjectKeyFromObject(ep), ep)).To(Succeed())
		c := apimeta.FindStatusCondition(ep.Status.Conditions, switchboardv1.ReadyCondition)
		if c == nil {
			return ""
		}
		return c.Reason
	}, 10*time.Second, 20*time.Millisecond).Should(Equal(switchboardv1.ReasonSecretMissing))

	good := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	secret.Data[switchboardv1.WebhookSecretKey] = []byte(good)
	g.Expect(K8s.Update(context.Background(), secret)).To(Succeed())
	rc.Trust(good)
	// The recheck happens on the next spec change or within minutes; a
	// spec change is what a platform team's apply would be.
	// The endpoint's status may have moved on since it was read (the
	// Secret change wakes its reconciler): update the latest version.
	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := K8s.Get(context.Background(), client.ObjectKeyFromObject(ep), ep); err != nil {
			return err
		}
		ep.Spec.Description = "uses its own secret"
		return K8s.Update(context.Background(), ep)
	})).To(Succeed())
	g.Eventually(func() bool {
		g.Expect(K8s.Get(context.Background(), client.ObjectKeyFromObject(ep), ep)).To(Succeed())
		return apimeta.IsStatusConditionTrue(ep.Status.Conditions, switchboardv1.ReadyCondition)
	}, 10*time.Second, 20*time.Millisecond).Should(BeTrue())
	id := o.CreateCall(t, "+14155551234", nil)
	g.Eventually(func() int { return len(rc.ForCall(id)) }, 20*time.Second, 20*time.Millisecond).Should(Equal(3))
	for _, d := range rc.ForCall(id) {
		ExpectSigned(g, d)
	}
}

// TestWebhookRestartLosesNothing stops the operator while deliveries wait
// for a retry and calls are still ringing; the calls end while it is down.
// The new operator delivers every event of every call exactly once
// successfully, each under the delivery id of its first attempt.
func TestWebhookRestartLosesNothing(t *testing.T) {
	g := NewWithT(t)
	o := NewOrg(t)
	var down atomic.Bool
	down.Store(true)
	rc := NewReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		if down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	_, secret := ApplyEndpoint(t, o.Ns, rc.URL(), nil)
	rc.Trust(secret)
	ids := []string{o.CreateCall(t, "+14155551234", nil), o.CreateCall(t, "+14155550001", nil)}
	g.Eventually(func() int { return len(rc.Deliveries()) }, 10*time.Second, 5*time.Millisecond).
		Should(BeNumerically(">=", 1), "no attempt before the restart")

	Operator.Stop()
	down.Store(false)
	time.Sleep(TestTimings.Ring + TestTimings.Talk) // the calls end while the operator is down
	restarted, err := StartOperator(true)
	g.Expect(err).NotTo(HaveOccurred())
	Operator = restarted

	for _, id := range ids {
		g.Eventually(func() []string {
			var ok []string
			for _, d := range rc.ForCall(id) {
				if SucceededAt(t, o.Ns, d.ID) {
					ok = append(ok, d.Event)
				}
			}
			return ok
		}, 20*time.Second, 50*time.Millisecond).Should(ContainElements("call.started", "call.ended", "call.analyzed"), id)
		byEvent := map[string]map[string]bool{}
		for _, d := range rc.ForCall(id) {
			ExpectSigned(g, d)
			if byEvent[d.Event] == nil {
				byEvent[d.Event] = map[string]bool{}
			}
			byEvent[d.Event][d.ID] = true
		}
		for event, deliveryIDs := range byEvent {
			g.Expect(deliveryIDs).To(HaveLen(1), "%s of %s went out under several ids", event, id)
		}
		g.Eventually(func() []string {
			var phases []string
			for _, d := range DeliveriesOf(t, o.Ns, CallName(id)) {
				phases = append(phases, string(d.Status.Phase))
			}
			return phases
		}, 10*time.Second, 50*time.Millisecond).Should(Equal([]string{"succeeded", "succeeded", "succeeded"}))
	}
}

// TestWebhookRotationSignsWithBoth: after rotate-secret, deliveries carry
// two signatures, so a receiver verifies with the old secret until it has
// switched, and with the new one from the moment it has.
func TestWebhookRotationSignsWithBoth(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	o := NewOrg(t)
	rc := NewReceiver(t, nil)
	ep, old := ApplyEndpoint(t, o.Ns, rc.URL(), OnlyCallStarted)
	r := Do(t, "POST", "/v1/webhook-endpoints/"+ep.ResolvedID()+"/rotate-secret", o.Key, nil)
	g.Expect(r.Status).To(Equal(http.StatusOK), string(r.Raw))
	fresh, _ := r.Body["secret"].(string)
	g.Expect(fresh).To(HavePrefix("whsec_"))
	g.Expect(fresh).NotTo(Equal(old))
	rc.Trust(old, fresh)

	id := o.CreateCall(t, "+14155551234", nil)
	g.Eventually(func() int { return len(rc.ForCall(id)) }, 10*time.Second, 20*time.Millisecond).Should(Equal(1))
	d := rc.ForCall(id)[0]
	ExpectSigned(g, d) // verifies with each secret alone
	g.Expect(strings.Fields(d.Header.Get("webhook-signature"))).To(HaveLen(2))
}

// TestWebhookManualRetry: a delivery that gave up is sent again when asked,
// under the same id, and succeeds once the receiver is back.
func TestWebhookManualRetry(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	o := NewOrg(t)
	var down atomic.Bool
	down.Store(true)
	rc := NewReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		if down.Load() {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	ep, secret := ApplyEndpoint(t, o.Ns, rc.URL(), OnlyCallStarted)
	rc.Trust(secret)
	id := o.CreateCall(t, "+14155551234", nil)
	var failed history.Delivery
	g.Eventually(func() history.DeliveryPhase {
		if ds := DeliveriesOf(t, o.Ns, CallName(id)); len(ds) == 1 {
			failed = ds[0]
		}
		return failed.Status.Phase
	}, 15*time.Second, 50*time.Millisecond).Should(Equal(history.DeliveryFailed))

	down.Store(false)
	path := "/v1/webhook-endpoints/" + ep.ResolvedID() + "/deliveries/" + failed.Spec.DeliveryID
	r := Do(t, "POST", path+"/retry", o.Key, nil)
	g.Expect(r.Status).To(Equal(http.StatusAccepted), string(r.Raw))
	g.Eventually(func() any { return Do(t, "GET", path, o.Key, nil).Body["status"] }, 10*time.Second, 50*time.Millisecond).
		Should(Equal("succeeded"))
	got := Do(t, "GET", path, o.Key, nil).Body
	attempts := got["attempts"].([]any)
	g.Expect(attempts).To(HaveLen(len(TestSchedule) + 1))
	g.Expect(attempts[len(attempts)-1]).To(HaveKeyWithValue("trigger", "manual"))
	g.Expect(attempts[len(attempts)-1]).To(HaveKeyWithValue("status_code", 200.0))
	last := rc.ForCall(id)[len(rc.ForCall(id))-1]
	g.Expect(last.ID).To(Equal(failed.Spec.DeliveryID))
	ExpectSigned(g, last)
}

// TestWebhookDeliveryRetention: finished deliveries are deleted once the
// retention period is over. It runs its own operator with a retention of
// one second (the default is seven days).
func TestWebhookDeliveryRetention(t *testing.T) {
	g := NewWithT(t)
	WithOperator(t, func(o *app.Options) { o.Webhooks.Retention = time.Second })
	o := NewOrg(t)
	rc := NewReceiver(t, nil)
	ApplyEndpoint(t, o.Ns, rc.URL(), OnlyCallStarted)
	id := o.CreateCall(t, "+14155551234", nil)
	g.Eventually(func() int { return len(rc.ForCall(id)) }, 10*time.Second, 20*time.Millisecond).Should(Equal(1))
	g.Eventually(func() []history.Delivery { return DeliveriesOf(t, o.Ns, CallName(id)) },
		10*time.Second, 100*time.Millisecond).Should(BeEmpty())
	g.Expect(o.GetCall(t, id)["status"]).NotTo(BeEmpty(), "the call itself stays")
}

// TestWebhookEndpointDisabledAfterLongFailure: an endpoint whose every
// delivery has failed for longer than --webhook-disable-after is disabled,
// with the reason. It runs its own operator with that set to one second.
func TestWebhookEndpointDisabledAfterLongFailure(t *testing.T) {
	g := NewWithT(t)
	WithOperator(t, func(o *app.Options) { o.Webhooks.DisableAfter = time.Second })
	o := NewOrg(t)
	rc := NewReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
	ep, _ := ApplyEndpoint(t, o.Ns, rc.URL(), nil)
	o.CreateCall(t, "+14155551234", nil)
	g.Eventually(func() bool {
		g.Expect(K8s.Get(context.Background(), client.ObjectKeyFromObject(ep), ep)).To(Succeed())
		return ep.Spec.Disabled
	}, 15*time.Second, 50*time.Millisecond).Should(BeTrue())
	g.Expect(ep.Annotations[switchboardv1.WebhookDisabledReasonAnnotation]).To(HavePrefix("Every delivery has failed since"))
	g.Eventually(func() []string { return EventReasons(t, o.Ns, ep.Name) }, 5*time.Second, 50*time.Millisecond).
		Should(ContainElement("Disabled"))

	// Re-enabling over REST clears the reason.
	r := Do(t, "PATCH", "/v1/webhook-endpoints/"+ep.ResolvedID(), o.Key, map[string]any{"disabled": false})
	g.Expect(r.Status).To(Equal(http.StatusOK), string(r.Raw))
	g.Expect(r.Body).To(HaveKeyWithValue("disabled", false))
	g.Expect(r.Body).To(HaveKeyWithValue("disabled_reason", BeNil()))
}

// TestWebhookURLSafetyInProduction: outside development mode, a receiver
// on loopback, a private network or the cloud metadata address, or over
// plain http, is refused when saved and when tested. It runs an API-only
// replica (as every replica serves the REST API) without the development
// switch.
func TestWebhookURLSafetyInProduction(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	strict, err := StartOperator(false, func(o *app.Options) { o.Webhooks.AllowInsecure = false })
	g.Expect(err).NotTo(HaveOccurred())
	defer strict.Stop()
	o := NewOrg(t)
	post := func(path string, body any) Response {
		t.Helper()
		return DoAt(t, strict.BaseURL, "POST", path, o.Key, body)
	}
	for url, reason := range map[string]string{
		"https://localhost/hook":                   "loopback",
		"https://127.0.0.1/hook":                   "loopback",
		"https://[::1]/hook":                       "loopback",
		"https://10.0.0.7/hook":                    "private",
		"https://192.168.1.20/hook":                "private",
		"https://169.254.169.254/latest/meta-data": "metadata",
		"https://100.64.0.1/hook":                  "",
		"http://93.184.216.34/hook":                "https",
		"https://user:pass@93.184.216.34/hook":     "",
	} {
		r := post("/v1/webhook-endpoints", map[string]any{"url": url})
		g.Expect(r.Status).To(Equal(http.StatusUnprocessableEntity), "%s: %s", url, r.Raw)
		items, _ := r.Body["detail"].([]any)
		g.Expect(items).To(HaveLen(1), string(r.Raw))
		item := items[0].(map[string]any)
		g.Expect(item).To(HaveKeyWithValue("type", "url_not_allowed"), url)
		g.Expect(item["msg"]).To(ContainSubstring(reason), url)
	}
	// A public https URL is accepted (nothing listens there; it is not called).
	r := post("/v1/webhook-endpoints", map[string]any{"url": "https://93.184.216.34/hook"})
	g.Expect(r.Status).To(Equal(http.StatusCreated), string(r.Raw))

	// An endpoint saved by a development-mode replica is refused at test time.
	rc := NewReceiver(t, nil)
	ep, _ := ApplyEndpoint(t, o.Ns, rc.URL(), nil)
	r = post("/v1/webhook-endpoints/"+ep.ResolvedID()+"/test", nil)
	g.Expect(r.Status).To(Equal(http.StatusUnprocessableEntity), string(r.Raw))
	g.Expect(Detail(t, r)).To(HaveKeyWithValue("error_code", "url_not_allowed"))
	g.Expect(rc.Deliveries()).To(BeEmpty())
}
