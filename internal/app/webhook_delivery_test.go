package app_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/app"
	"github.com/switchboard-dev/switchboard/internal/history"
)

// TestWebhookEventsOfAnsweredCall follows an answered call: the receiver
// gets call.started, call.ended and call.analyzed, in that order, each
// signed, each with its own delivery id, each carrying the call as it was.
func TestWebhookEventsOfAnsweredCall(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	o := newOrg(t)
	rc := newReceiver(t, nil)
	ep, secret := applyEndpoint(t, o.ns, rc.url(), nil)
	rc.trust(secret)

	id := o.createCall(t, "+14155551234", map[string]any{"metadata": map[string]any{"order": 7}})
	g.Eventually(func() []string { return events(rc.forCall(id)) }, 20*time.Second, 20*time.Millisecond).
		Should(Equal([]string{"call.started", "call.ended", "call.analyzed"}))

	got := rc.forCall(id)
	ids := map[string]bool{}
	for _, d := range got {
		expectSigned(g, d)
		ids[d.id] = true
		g.Expect(d.call()).To(HaveKeyWithValue("metadata", map[string]any{"order": 7.0}))
		g.Expect(d.call()).To(HaveKeyWithValue("agent_id", o.agentID))
		g.Expect(d.call()).NotTo(HaveKey("transcript"))
		g.Expect(d.header.Get("X-Service-Event")).To(Equal(d.event))
	}
	g.Expect(ids).To(HaveLen(3), "each event has its own delivery id")
	started, ended, analyzed := got[0].call(), got[1].call(), got[2].call()
	g.Expect(started["started_at"]).NotTo(BeNil())
	g.Expect(ended).To(HaveKeyWithValue("status", "ended"))
	g.Expect(ended).To(HaveKeyWithValue("disposition", "answered"))
	g.Expect(ended["ended_at"]).NotTo(BeNil())
	g.Expect(ended).To(HaveKeyWithValue("duration_ms", BeNumerically("==", testTimings.Talk.Milliseconds())))
	g.Expect(analyzed["analysis"]).To(HaveKeyWithValue("summary", ContainSubstring("answered")))

	// The analyzed event's recording link is fresh and works.
	link, _ := analyzed["recording_url"].(string)
	g.Expect(link).To(HavePrefix(operator.baseURL + "/recordings/"))
	resp, err := http.Get(link) //nolint:noctx // test
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))

	// Durable records: one succeeded delivery per event. They are not owned
	// by the call: they outlive it in the cluster (--call-retention).
	g.Eventually(func() []string {
		var phases []string
		for _, d := range deliveriesOf(t, o.ns, callName(id)) {
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
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(ep), ep)).To(Succeed())
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
	o := newOrg(t)
	rc := newReceiver(t, nil)
	_, secret := applyEndpoint(t, o.ns, rc.url(), nil)
	rc.trust(secret)

	busy := o.createCall(t, "+14155550001", nil)
	g.Eventually(func() []string { return events(rc.forCall(busy)) }, 20*time.Second, 20*time.Millisecond).
		Should(Equal([]string{"call.started", "call.ended", "call.analyzed"}))
	g.Expect(rc.forCall(busy)[1].call()).To(HaveKeyWithValue("disposition", "busy"))
	g.Expect(rc.forCall(busy)[1].call()["recording_url"]).To(BeNil())

	orphan := &switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: "no-such-agent"},
		Spec: switchboardv1.CallSpec{AgentID: "00000000-0000-4000-8000-000000000000", ToNumber: "+14155551234"}}
	g.Expect(k8s.Create(context.Background(), orphan)).To(Succeed())
	var failed []delivery
	g.Eventually(func() []string {
		failed = nil
		for _, d := range rc.deliveries() {
			if d.call()["to_number"] == "+14155551234" && d.call()["status"] == "failed" {
				failed = append(failed, d)
			}
		}
		return events(failed)
	}, 20*time.Second, 20*time.Millisecond).Should(Equal([]string{"call.ended"}))
	expectSigned(g, failed[0])

	// Refused calls (the create answered 422) announce nothing.
	blocked := &switchboardv1.NumberList{ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: "dnc"},
		Spec: switchboardv1.NumberListSpec{Type: switchboardv1.DoNotCall, Numbers: []string{"+14155557777"}}}
	g.Expect(k8s.Create(context.Background(), blocked)).To(Succeed())
	var refusedID string
	g.Eventually(func() int {
		r := do(t, "POST", "/v1/calls", o.key, map[string]any{"agent_id": o.agentID, "to_number": "+14155557777",
			"variables": map[string]any{"customer_name": "Ada"}})
		if r.status == http.StatusUnprocessableEntity {
			refusedID, _ = detail(t, r)["call_id"].(string)
		}
		return r.status
	}, 5*time.Second, 50*time.Millisecond).Should(Equal(http.StatusUnprocessableEntity))
	g.Consistently(func() []delivery { return rc.forCall(refusedID) }, time.Second, 50*time.Millisecond).Should(BeEmpty())
}

// TestWebhookSubscriptions: an endpoint gets only the kinds it subscribes
// to; a disabled one gets nothing.
func TestWebhookSubscriptions(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	o := newOrg(t)
	endedOnly, disabled := newReceiver(t, nil), newReceiver(t, nil)
	_, secret := applyEndpoint(t, o.ns, endedOnly.url(), func(s *switchboardv1.WebhookEndpointSpec) {
		s.Events = []switchboardv1.WebhookEventType{"call.ended"}
	})
	endedOnly.trust(secret)
	applyEndpoint(t, o.ns, disabled.url(), func(s *switchboardv1.WebhookEndpointSpec) { s.Disabled = true })

	id := o.createCall(t, "+14155551234", nil)
	o.waitAnalyzed(t, id)
	g.Eventually(func() []string { return events(endedOnly.forCall(id)) }, 10*time.Second, 20*time.Millisecond).
		Should(Equal([]string{"call.ended"}))
	g.Consistently(func() []string { return events(endedOnly.forCall(id)) }, time.Second, 50*time.Millisecond).
		Should(Equal([]string{"call.ended"}))
	g.Expect(disabled.deliveries()).To(BeEmpty())
}

// TestWebhookRetriesUntilSuccess: a receiver failing with 500 gets the
// same delivery again, same id, until it answers 200.
func TestWebhookRetriesUntilSuccess(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	o := newOrg(t)
	rc := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n < 2 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	_, secret := applyEndpoint(t, o.ns, rc.url(), onlyCallStarted)
	rc.trust(secret)
	id := o.createCall(t, "+14155551234", nil)
	g.Eventually(func() int { return len(rc.forCall(id)) }, 10*time.Second, 20*time.Millisecond).Should(Equal(3))
	got := rc.forCall(id)
	for _, d := range got {
		expectSigned(g, d)
		g.Expect(d.id).To(Equal(got[0].id), "every attempt carries the same delivery id")
	}
	// The schedule's delays are kept between attempts.
	g.Expect(got[1].at.Sub(got[0].at)).To(BeNumerically(">=", testSchedule[1]-50*time.Millisecond))
	g.Expect(got[2].at.Sub(got[1].at)).To(BeNumerically(">=", testSchedule[2]-50*time.Millisecond))

	var d history.Delivery
	g.Eventually(func() history.DeliveryPhase {
		d = deliveriesOf(t, o.ns, callName(id))[0]
		return d.Status.Phase
	}, 5*time.Second, 20*time.Millisecond).Should(Equal(history.DeliverySucceeded))
	g.Expect(d.Status.AttemptCount).To(BeEquivalentTo(3))
	g.Expect(d.Status.Attempts).To(HaveLen(3))
	g.Expect(d.Status.Attempts[0].StatusCode).To(BeEquivalentTo(500))
	g.Expect(d.Status.Attempts[2].StatusCode).To(BeEquivalentTo(204))
	g.Consistently(func() int { return len(rc.forCall(id)) }, 1500*time.Millisecond, 100*time.Millisecond).Should(Equal(3))
}

// TestWebhookGivesUp: a receiver that cannot be reached gets every
// scheduled attempt, then the delivery fails, a Kubernetes Event says so,
// and the endpoint is Degraded.
func TestWebhookGivesUp(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	o := newOrg(t)
	rc := newReceiver(t, nil)
	url := rc.url()
	rc.srv.Close() // connection refused from now on
	ep, _ := applyEndpoint(t, o.ns, url, onlyCallStarted)
	id := o.createCall(t, "+14155551234", nil)

	var d history.Delivery
	g.Eventually(func() history.DeliveryPhase {
		if ds := deliveriesOf(t, o.ns, callName(id)); len(ds) == 1 {
			d = ds[0]
		}
		return d.Status.Phase
	}, 15*time.Second, 50*time.Millisecond).Should(Equal(history.DeliveryFailed))
	g.Expect(d.Status.AttemptCount).To(BeEquivalentTo(len(testSchedule)))
	g.Expect(d.Status.Attempts[0].StatusCode).To(BeZero())
	g.Expect(d.Status.Attempts[0].Error).To(ContainSubstring("refused"))
	g.Expect(d.Status.LastError).To(HavePrefix("gave up after 4 attempts"))
	g.Expect(d.Status.NextAttemptAt).To(BeNil())

	g.Eventually(func() bool {
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(ep), ep)).To(Succeed())
		return apimeta.IsStatusConditionTrue(ep.Status.Conditions, switchboardv1.DegradedCondition)
	}, 10*time.Second, 50*time.Millisecond).Should(BeTrue())
	g.Expect(ep.Status.FailingSince).NotTo(BeNil())
	g.Eventually(func() []string { return eventReasons(t, o.ns, ep.Name) }, 5*time.Second, 50*time.Millisecond).
		Should(ContainElement("DeliveryFailed"))
}

// TestWebhookGoneDisablesEndpoint: 410 Gone ends the delivery at once and
// disables the endpoint, saying why; no further events go there.
func TestWebhookGoneDisablesEndpoint(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	o := newOrg(t)
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusGone) })
	ep, secret := applyEndpoint(t, o.ns, rc.url(), nil)
	rc.trust(secret)
	id := o.createCall(t, "+14155551234", nil)
	g.Eventually(func() bool {
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(ep), ep)).To(Succeed())
		return ep.Spec.Disabled
	}, 10*time.Second, 20*time.Millisecond).Should(BeTrue())
	g.Expect(ep.Annotations[switchboardv1.WebhookDisabledReasonAnnotation]).To(ContainSubstring("410 Gone"))
	g.Eventually(func() string {
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(ep), ep)).To(Succeed())
		c := apimeta.FindStatusCondition(ep.Status.Conditions, switchboardv1.DisabledCondition)
		if c == nil || c.Status != metav1.ConditionTrue {
			return ""
		}
		return c.Reason
	}, 5*time.Second, 20*time.Millisecond).Should(Equal(switchboardv1.ReasonDisabledBySystem))

	o.waitAnalyzed(t, id)
	time.Sleep(500 * time.Millisecond)
	g.Expect(events(rc.forCall(id))).To(Equal([]string{"call.started"}), "nothing after the 410")
	for _, d := range deliveriesOf(t, o.ns, callName(id)) {
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
	o := newOrg(t)
	rc := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 0 {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	_, secret := applyEndpoint(t, o.ns, rc.url(), onlyCallStarted)
	rc.trust(secret)
	id := o.createCall(t, "+14155551234", nil)
	g.Eventually(func() int { return len(rc.forCall(id)) }, 10*time.Second, 20*time.Millisecond).Should(Equal(2))
	got := rc.forCall(id)
	g.Expect(got[1].at.Sub(got[0].at)).To(BeNumerically(">=", 2*time.Second-50*time.Millisecond),
		"%+v", deliveriesOf(t, o.ns, callName(id))[0].Status)
}

// TestWebhookReceiverThatHangs: an attempt gets 10 seconds, then counts as
// failed with a timeout, and the next attempt goes out.
func TestWebhookReceiverThatHangs(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	o := newOrg(t)
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 0 {
			select {
			case <-r.Context().Done():
			case <-time.After(15 * time.Second):
			}
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	_, secret := applyEndpoint(t, o.ns, rc.url(), onlyCallStarted)
	rc.trust(secret)
	id := o.createCall(t, "+14155551234", nil)
	g.Eventually(func() int { return len(rc.forCall(id)) }, 20*time.Second, 50*time.Millisecond).Should(Equal(2))
	got := rc.forCall(id)
	g.Expect(got[1].at.Sub(got[0].at)).To(BeNumerically("~", 10*time.Second, 2*time.Second))
	g.Eventually(func() []history.DeliveryAttempt {
		return deliveriesOf(t, o.ns, callName(id))[0].Status.Attempts
	}, 5*time.Second, 50*time.Millisecond).Should(HaveLen(2))
	attempts := deliveriesOf(t, o.ns, callName(id))[0].Status.Attempts
	g.Expect(attempts[0].Error).To(Equal("timed out after 10s"))
	g.Expect(attempts[0].StatusCode).To(BeZero())
	g.Expect(attempts[1].StatusCode).To(BeEquivalentTo(200))
}

// TestWebhookSecretInCustomSecret: an endpoint may name its own Secret.
func TestWebhookSecretInCustomSecret(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	o := newOrg(t)
	rc := newReceiver(t, nil)
	own := "whsec_QUJDRA==" // 4 bytes: too short, Ready=False
	secret := newSecretObject(o.ns, "my-secret", own)
	g.Expect(k8s.Create(context.Background(), secret)).To(Succeed())
	ep := &switchboardv1.WebhookEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: "own-secret"},
		Spec: switchboardv1.WebhookEndpointSpec{URL: rc.url(), SecretRef: &switchboardv1.SecretReference{Name: "my-secret"}}}
	g.Expect(k8s.Create(context.Background(), ep)).To(Succeed())
	g.Eventually(func() string {
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(ep), ep)).To(Succeed())
		c := apimeta.FindStatusCondition(ep.Status.Conditions, switchboardv1.ReadyCondition)
		if c == nil {
			return ""
		}
		return c.Reason
	}, 10*time.Second, 20*time.Millisecond).Should(Equal(switchboardv1.ReasonSecretMissing))

	good := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	secret.Data[switchboardv1.WebhookSecretKey] = []byte(good)
	g.Expect(k8s.Update(context.Background(), secret)).To(Succeed())
	rc.trust(good)
	// The recheck happens on the next spec change or within minutes; a
	// spec change is what a platform team's apply would be.
	// The endpoint's status may have moved on since it was read (the
	// Secret change wakes its reconciler): update the latest version.
	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(ep), ep); err != nil {
			return err
		}
		ep.Spec.Description = "uses its own secret"
		return k8s.Update(context.Background(), ep)
	})).To(Succeed())
	g.Eventually(func() bool {
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(ep), ep)).To(Succeed())
		return apimeta.IsStatusConditionTrue(ep.Status.Conditions, switchboardv1.ReadyCondition)
	}, 10*time.Second, 20*time.Millisecond).Should(BeTrue())
	id := o.createCall(t, "+14155551234", nil)
	g.Eventually(func() int { return len(rc.forCall(id)) }, 20*time.Second, 20*time.Millisecond).Should(Equal(3))
	for _, d := range rc.forCall(id) {
		expectSigned(g, d)
	}
}

// eventReasons lists the reasons of the Kubernetes Events about an object.
func eventReasons(t testing.TB, ns, name string) []string {
	t.Helper()
	var list eventsv1.EventList
	NewWithT(t).Expect(k8s.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Name == name {
			out = append(out, e.Reason)
		}
	}
	return out
}

// TestWebhookRestartLosesNothing stops the operator while deliveries wait
// for a retry and calls are still ringing; the calls end while it is down.
// The new operator delivers every event of every call exactly once
// successfully, each under the delivery id of its first attempt.
func TestWebhookRestartLosesNothing(t *testing.T) {
	g := NewWithT(t)
	o := newOrg(t)
	var down atomic.Bool
	down.Store(true)
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		if down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	_, secret := applyEndpoint(t, o.ns, rc.url(), nil)
	rc.trust(secret)
	ids := []string{o.createCall(t, "+14155551234", nil), o.createCall(t, "+14155550001", nil)}
	g.Eventually(func() int { return len(rc.deliveries()) }, 10*time.Second, 5*time.Millisecond).
		Should(BeNumerically(">=", 1), "no attempt before the restart")

	operator.stop()
	down.Store(false)
	time.Sleep(testTimings.Ring + testTimings.Talk) // the calls end while the operator is down
	restarted, err := startOperator(true)
	g.Expect(err).NotTo(HaveOccurred())
	operator = restarted

	for _, id := range ids {
		g.Eventually(func() []string {
			var ok []string
			for _, d := range rc.forCall(id) {
				if succeededAt(t, o.ns, d.id) {
					ok = append(ok, d.event)
				}
			}
			return ok
		}, 20*time.Second, 50*time.Millisecond).Should(ContainElements("call.started", "call.ended", "call.analyzed"), id)
		byEvent := map[string]map[string]bool{}
		for _, d := range rc.forCall(id) {
			expectSigned(g, d)
			if byEvent[d.event] == nil {
				byEvent[d.event] = map[string]bool{}
			}
			byEvent[d.event][d.id] = true
		}
		for event, deliveryIDs := range byEvent {
			g.Expect(deliveryIDs).To(HaveLen(1), "%s of %s went out under several ids", event, id)
		}
		g.Eventually(func() []string {
			var phases []string
			for _, d := range deliveriesOf(t, o.ns, callName(id)) {
				phases = append(phases, string(d.Status.Phase))
			}
			return phases
		}, 10*time.Second, 50*time.Millisecond).Should(Equal([]string{"succeeded", "succeeded", "succeeded"}))
	}
}

// succeededAt reports whether the delivery with id is recorded as succeeded.
func succeededAt(t testing.TB, ns, id string) bool {
	d, err := historyStore.GetDelivery(context.Background(), ns, id)
	return err == nil && d.Status.Phase == history.DeliverySucceeded
}

// TestWebhookRotationSignsWithBoth: after rotate-secret, deliveries carry
// two signatures, so a receiver verifies with the old secret until it has
// switched, and with the new one from the moment it has.
func TestWebhookRotationSignsWithBoth(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	o := newOrg(t)
	rc := newReceiver(t, nil)
	ep, old := applyEndpoint(t, o.ns, rc.url(), onlyCallStarted)
	r := do(t, "POST", "/v1/webhook-endpoints/"+ep.ResolvedID()+"/rotate-secret", o.key, nil)
	g.Expect(r.status).To(Equal(http.StatusOK), string(r.raw))
	fresh, _ := r.body["secret"].(string)
	g.Expect(fresh).To(HavePrefix("whsec_"))
	g.Expect(fresh).NotTo(Equal(old))
	rc.trust(old, fresh)

	id := o.createCall(t, "+14155551234", nil)
	g.Eventually(func() int { return len(rc.forCall(id)) }, 10*time.Second, 20*time.Millisecond).Should(Equal(1))
	d := rc.forCall(id)[0]
	expectSigned(g, d) // verifies with each secret alone
	g.Expect(strings.Fields(d.header.Get("webhook-signature"))).To(HaveLen(2))
}

// TestWebhookManualRetry: a delivery that gave up is sent again when asked,
// under the same id, and succeeds once the receiver is back.
func TestWebhookManualRetry(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	o := newOrg(t)
	var down atomic.Bool
	down.Store(true)
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		if down.Load() {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	ep, secret := applyEndpoint(t, o.ns, rc.url(), onlyCallStarted)
	rc.trust(secret)
	id := o.createCall(t, "+14155551234", nil)
	var failed history.Delivery
	g.Eventually(func() history.DeliveryPhase {
		if ds := deliveriesOf(t, o.ns, callName(id)); len(ds) == 1 {
			failed = ds[0]
		}
		return failed.Status.Phase
	}, 15*time.Second, 50*time.Millisecond).Should(Equal(history.DeliveryFailed))

	down.Store(false)
	path := "/v1/webhook-endpoints/" + ep.ResolvedID() + "/deliveries/" + failed.Spec.DeliveryID
	r := do(t, "POST", path+"/retry", o.key, nil)
	g.Expect(r.status).To(Equal(http.StatusAccepted), string(r.raw))
	g.Eventually(func() any { return do(t, "GET", path, o.key, nil).body["status"] }, 10*time.Second, 50*time.Millisecond).
		Should(Equal("succeeded"))
	got := do(t, "GET", path, o.key, nil).body
	attempts := got["attempts"].([]any)
	g.Expect(attempts).To(HaveLen(len(testSchedule) + 1))
	g.Expect(attempts[len(attempts)-1]).To(HaveKeyWithValue("trigger", "manual"))
	g.Expect(attempts[len(attempts)-1]).To(HaveKeyWithValue("status_code", 200.0))
	last := rc.forCall(id)[len(rc.forCall(id))-1]
	g.Expect(last.id).To(Equal(failed.Spec.DeliveryID))
	expectSigned(g, last)
}

// TestWebhookDeliveryRetention: finished deliveries are deleted once the
// retention period is over. It runs its own operator with a retention of
// one second (the default is seven days).
func TestWebhookDeliveryRetention(t *testing.T) {
	g := NewWithT(t)
	withOperator(t, func(o *app.Options) { o.Webhooks.Retention = time.Second })
	o := newOrg(t)
	rc := newReceiver(t, nil)
	applyEndpoint(t, o.ns, rc.url(), onlyCallStarted)
	id := o.createCall(t, "+14155551234", nil)
	g.Eventually(func() int { return len(rc.forCall(id)) }, 10*time.Second, 20*time.Millisecond).Should(Equal(1))
	g.Eventually(func() []history.Delivery { return deliveriesOf(t, o.ns, callName(id)) },
		10*time.Second, 100*time.Millisecond).Should(BeEmpty())
	g.Expect(o.getCall(t, id)["status"]).NotTo(BeEmpty(), "the call itself stays")
}

// TestWebhookEndpointDisabledAfterLongFailure: an endpoint whose every
// delivery has failed for longer than --webhook-disable-after is disabled,
// with the reason. It runs its own operator with that set to one second.
func TestWebhookEndpointDisabledAfterLongFailure(t *testing.T) {
	g := NewWithT(t)
	withOperator(t, func(o *app.Options) { o.Webhooks.DisableAfter = time.Second })
	o := newOrg(t)
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
	ep, _ := applyEndpoint(t, o.ns, rc.url(), nil)
	o.createCall(t, "+14155551234", nil)
	g.Eventually(func() bool {
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(ep), ep)).To(Succeed())
		return ep.Spec.Disabled
	}, 15*time.Second, 50*time.Millisecond).Should(BeTrue())
	g.Expect(ep.Annotations[switchboardv1.WebhookDisabledReasonAnnotation]).To(HavePrefix("Every delivery has failed since"))
	g.Eventually(func() []string { return eventReasons(t, o.ns, ep.Name) }, 5*time.Second, 50*time.Millisecond).
		Should(ContainElement("Disabled"))

	// Re-enabling over REST clears the reason.
	r := do(t, "PATCH", "/v1/webhook-endpoints/"+ep.ResolvedID(), o.key, map[string]any{"disabled": false})
	g.Expect(r.status).To(Equal(http.StatusOK), string(r.raw))
	g.Expect(r.body).To(HaveKeyWithValue("disabled", false))
	g.Expect(r.body).To(HaveKeyWithValue("disabled_reason", BeNil()))
}

// TestWebhookURLSafetyInProduction: outside development mode, a receiver
// on loopback, a private network or the cloud metadata address, or over
// plain http, is refused when saved and when tested. It runs an API-only
// replica (as every replica serves the REST API) without the development
// switch.
func TestWebhookURLSafetyInProduction(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	strict, err := startOperator(false, func(o *app.Options) { o.Webhooks.AllowInsecure = false })
	g.Expect(err).NotTo(HaveOccurred())
	defer strict.stop()
	o := newOrg(t)
	post := func(path string, body any) response {
		t.Helper()
		return doAt(t, strict.baseURL, "POST", path, o.key, body)
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
		g.Expect(r.status).To(Equal(http.StatusUnprocessableEntity), "%s: %s", url, r.raw)
		items, _ := r.body["detail"].([]any)
		g.Expect(items).To(HaveLen(1), string(r.raw))
		item := items[0].(map[string]any)
		g.Expect(item).To(HaveKeyWithValue("type", "url_not_allowed"), url)
		g.Expect(item["msg"]).To(ContainSubstring(reason), url)
	}
	// A public https URL is accepted (nothing listens there; it is not called).
	r := post("/v1/webhook-endpoints", map[string]any{"url": "https://93.184.216.34/hook"})
	g.Expect(r.status).To(Equal(http.StatusCreated), string(r.raw))

	// An endpoint saved by a development-mode replica is refused at test time.
	rc := newReceiver(t, nil)
	ep, _ := applyEndpoint(t, o.ns, rc.url(), nil)
	r = post("/v1/webhook-endpoints/"+ep.ResolvedID()+"/test", nil)
	g.Expect(r.status).To(Equal(http.StatusUnprocessableEntity), string(r.raw))
	g.Expect(detail(t, r)).To(HaveKeyWithValue("error_code", "url_not_allowed"))
	g.Expect(rc.deliveries()).To(BeEmpty())
}
