package deliveries

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/webhook"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func TestDueEvents(t *testing.T) {
	started := &metav1.MicroTime{Time: t0}
	cases := []struct {
		name string
		call switchboardv1.Call
		want []string
	}{
		{"queued", switchboardv1.Call{}, nil},
		{"in progress", switchboardv1.Call{Status: switchboardv1.CallStatus{Phase: switchboardv1.CallInProgress, StartedAt: started}},
			[]string{webhook.EventCallStarted}},
		{"ended", switchboardv1.Call{Status: switchboardv1.CallStatus{Phase: switchboardv1.CallEnded, StartedAt: started}},
			[]string{webhook.EventCallStarted, webhook.EventCallEnded}},
		{"analyzed", switchboardv1.Call{Status: switchboardv1.CallStatus{Phase: switchboardv1.CallEnded, StartedAt: started,
			Analysis: &switchboardv1.CallAnalysis{Summary: "s"}}},
			[]string{webhook.EventCallStarted, webhook.EventCallEnded, webhook.EventCallAnalyzed}},
		{"failed after acceptance", switchboardv1.Call{Status: switchboardv1.CallStatus{Phase: switchboardv1.CallFailed}},
			[]string{webhook.EventCallEnded}},
		{"refused by the API", switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
			switchboardv1.RefusalCodeAnnotation: "dnc_blocked"}}, Status: switchboardv1.CallStatus{Phase: switchboardv1.CallFailed}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := DueEvents(&tc.call); !equal(got, tc.want) {
				t.Fatalf("DueEvents = %v, want %v", got, tc.want)
			}
		})
	}
	c := cases[3].call
	c.Status.EmittedEvents = []string{webhook.EventCallStarted}
	if got := Unemitted(&c); !equal(got, []string{webhook.EventCallEnded, webhook.EventCallAnalyzed}) {
		t.Fatalf("Unemitted = %v", got)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestForCallIsStableAndDistinct(t *testing.T) {
	call := &switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Namespace: "acme", Name: "call-1", UID: "u-call"}}
	ep := &switchboardv1.WebhookEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "acme", Name: "hooks", UID: "u-ep"}}
	other := &switchboardv1.WebhookEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "acme", Name: "audit", UID: "u-ep2"}}
	a, b := ForCall(call, webhook.EventCallEnded, ep, "call_1"), ForCall(call, webhook.EventCallEnded, ep, "call_1")
	if a.Name != b.Name || a.Spec.DeliveryID != b.Spec.DeliveryID {
		t.Fatal("the same (call, event, endpoint) must give the same delivery")
	}
	if !ValidID(a.Spec.DeliveryID) || ResourceName(a.Spec.DeliveryID) != a.Name {
		t.Fatalf("id %q and name %q do not match", a.Spec.DeliveryID, a.Name)
	}
	seen := map[string]bool{a.Name: true}
	for _, d := range []*history.Delivery{
		ForCall(call, webhook.EventCallStarted, ep, "call_1"), ForCall(call, webhook.EventCallEnded, other, "call_1"),
	} {
		if seen[d.Name] {
			t.Fatalf("delivery name %s reused", d.Name)
		}
		seen[d.Name] = true
	}
	// Not owned by the call: deliveries outlive its retention in the cluster.
	if len(a.OwnerReferences) != 0 || a.Labels[history.DeliveryEndpointLabel] != "hooks" {
		t.Fatalf("owner or labels wrong: %+v %v", a.OwnerReferences, a.Labels)
	}
}

func TestRecord(t *testing.T) {
	schedule := webhook.Schedule{0, 5 * time.Second, time.Minute}
	fail := webhook.Result{StatusCode: 500}
	var st history.DeliveryStatus

	Record(&st, fail, t0, history.TriggerScheduled, schedule)
	if st.Phase != history.DeliveryPending || !st.NextAttemptAt.Time.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("after the first failure: %s next %v", st.Phase, st.NextAttemptAt)
	}
	// A manual retry does not use up the schedule.
	Record(&st, fail, t0.Add(time.Second), history.TriggerManual, schedule)
	if st.ScheduledAttempts != 1 || st.AttemptCount != 2 || !st.NextAttemptAt.Time.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("manual retry changed the schedule: %+v", st)
	}
	// Retry-After raises the delay.
	Record(&st, webhook.Result{StatusCode: 429, RetryAfter: 10 * time.Minute}, t0.Add(5*time.Second),
		history.TriggerScheduled, schedule)
	if !st.NextAttemptAt.Time.Equal(t0.Add(5*time.Second + 10*time.Minute)) {
		t.Fatalf("Retry-After ignored: next %v", st.NextAttemptAt)
	}
	out := Record(&st, webhook.Result{Err: "timed out after 10s"}, t0.Add(time.Hour), history.TriggerScheduled, schedule)
	if !out.Exhausted || st.Phase != history.DeliveryFailed || st.NextAttemptAt != nil || st.CompletedAt == nil {
		t.Fatalf("not exhausted after the schedule: %+v", st)
	}
	if st.LastError != "gave up after 3 attempts: timed out after 10s" {
		t.Fatalf("last error %q", st.LastError)
	}
	// A manual retry of a failed delivery can still succeed.
	Record(&st, webhook.Result{StatusCode: 200}, t0.Add(2*time.Hour), history.TriggerManual, schedule)
	if st.Phase != history.DeliverySucceeded || st.LastError != "" || len(st.Attempts) != 5 {
		t.Fatalf("manual success: %+v", st)
	}
}

func TestRecordGoneAndTest(t *testing.T) {
	var st history.DeliveryStatus
	if out := Record(&st, webhook.Result{StatusCode: http.StatusGone}, t0, history.TriggerScheduled,
		webhook.DefaultSchedule); !out.Gone || st.Phase != history.DeliveryFailed {
		t.Fatalf("410: %+v %+v", out, st)
	}
	var test history.DeliveryStatus
	Record(&test, webhook.Result{StatusCode: 503}, t0, history.TriggerTest, nil)
	if test.Phase != history.DeliveryFailed || test.NextAttemptAt != nil || test.AttemptCount != 1 {
		t.Fatalf("a test is one attempt: %+v", test)
	}
}

func TestRecordKeepsTheLatestAttempts(t *testing.T) {
	var st history.DeliveryStatus
	for i := range 25 {
		Record(&st, webhook.Result{StatusCode: 500}, t0.Add(time.Duration(i)*time.Second), history.TriggerManual, nil)
	}
	if st.AttemptCount != 25 || len(st.Attempts) != maxAttemptsKept ||
		!st.Attempts[maxAttemptsKept-1].AttemptedAt.Time.Equal(t0.Add(24*time.Second)) {
		t.Fatalf("count %d kept %d", st.AttemptCount, len(st.Attempts))
	}
}

func TestRotationSignsWithBothSecretsDuringTheOverlap(t *testing.T) {
	ep := &switchboardv1.WebhookEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "acme", Name: "hooks"}}
	s, first, err := NewSecret(ep)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := SigningSecrets(s, t0); !equal(got, []string{first}) {
		t.Fatalf("before rotation: %v", got)
	}
	second, err := Rotate(s, t0, time.Hour)
	if err != nil || second == first {
		t.Fatalf("rotate: %v", err)
	}
	if got, _ := SigningSecrets(s, t0.Add(59*time.Minute)); !equal(got, []string{second, first}) {
		t.Fatalf("during the overlap: %v", got)
	}
	if got, _ := SigningSecrets(s, t0.Add(time.Hour)); !equal(got, []string{second}) {
		t.Fatalf("after the overlap: %v", got)
	}
	if _, err := SigningSecrets(&corev1.Secret{}, t0); err == nil {
		t.Fatal("a Secret without a secret must be refused")
	}
}

func TestSampleBody(t *testing.T) {
	for _, kind := range webhook.Kinds {
		body, err := SampleBody(kind, t0)
		if err != nil {
			t.Fatal(err)
		}
		var env struct {
			Event string         `json:"event"`
			Call  map[string]any `json:"call"`
		}
		if err := json.Unmarshal(body, &env); err != nil {
			t.Fatal(err)
		}
		if env.Event != kind || env.Call["call_id"] != SampleCallID {
			t.Fatalf("%s: %s", kind, body)
		}
		if m, _ := env.Call["metadata"].(map[string]any); m["test"] != true {
			t.Fatalf("%s: metadata %v", kind, env.Call["metadata"])
		}
		if (kind == webhook.EventCallAnalyzed) != (env.Call["analysis"] != nil) {
			t.Fatalf("%s: analysis %v", kind, env.Call["analysis"])
		}
	}
}

func TestHealth(t *testing.T) {
	h, key := NewHealth(), types.NamespacedName{Namespace: "acme", Name: "hooks"}
	h.Observe(key, t0, false, "500")
	h.Observe(key, t0.Add(time.Minute), false, "timed out after 10s")
	h.Observe(key, t0.Add(-time.Minute), true, "200") // older, arrives late: ignored
	obs, _ := h.Latest(key)
	if obs.OK || !obs.FailingSince.Equal(t0) || obs.Result != "timed out after 10s" {
		t.Fatalf("failing streak: %+v", obs)
	}
	h.Observe(key, t0.Add(2*time.Minute), true, "200")
	if obs, _ := h.Latest(key); !obs.OK || !obs.FailingSince.IsZero() {
		t.Fatalf("after success: %+v", obs)
	}
}

// The call.ended and call.analyzed events of a transferred call carry the
// transfer (target, method, result, the second leg's length) beside its
// disconnection reason.
func TestBodyCarriesTheTransfer(t *testing.T) {
	leg := int64(42000)
	requested := metav1.NewMicroTime(t0)
	c := &switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Namespace: "org", Name: "call-0abc"},
		Status: switchboardv1.CallStatus{CallID: "call_0abc", Phase: switchboardv1.CallEnded,
			DisconnectionReason: switchboardv1.ReasonTransferBridged,
			Transfer: &switchboardv1.CallTransfer{To: "+14155550100", Mode: switchboardv1.TransferCold,
				Method: switchboardv1.TransferByBridge, Result: switchboardv1.TransferBridged, SIPStatus: 200,
				RequestedAt: &requested, SecondLegMS: &leg}}}
	for _, kind := range []string{webhook.EventCallEnded, webhook.EventCallAnalyzed} {
		body, err := Body(t.Context(), kind, c, nil)
		if err != nil {
			t.Fatal(err)
		}
		var env struct {
			Call struct {
				DisconnectionReason string         `json:"disconnection_reason"`
				Transfer            map[string]any `json:"transfer"`
			} `json:"call"`
		}
		if err := json.Unmarshal(body, &env); err != nil {
			t.Fatal(err)
		}
		tr := env.Call.Transfer
		if env.Call.DisconnectionReason != "transfer_bridged" || tr["to"] != "+14155550100" || tr["method"] != "bridge" ||
			tr["result"] != "bridged" || tr["second_leg_duration_ms"] != float64(42000) || tr["requested_at"] != "2026-11-22T10:00:00.000Z" {
			t.Errorf("%s: %s", kind, body)
		}
	}
}
