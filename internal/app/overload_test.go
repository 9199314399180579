package app_test

// An apiserver that does not answer: POST /v1/calls fails within the
// request deadline as 503 with Retry-After instead of waiting on it, and a
// retry with the same Idempotency-Key gets the one call, never a second.

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/app"
	"github.com/switchboard-dev/switchboard/internal/callid"
)

func TestCreateAgainstAStalledAPIServer(t *testing.T) {
	withOperator(t, func(o *app.Options) { o.APIRequestTimeout = time.Second })
	g := NewWithT(t)
	o := newOrg(t)
	stall := stallCallCreates(t, o)

	body := o.jsonBody(t, "+14155550142")
	start := time.Now()
	first := postWithKey(t, operator.baseURL, o.key, "stalled-1", body)
	took := time.Since(start)
	g.Expect(first.status).To(Equal(http.StatusServiceUnavailable), "%s", first.raw)
	g.Expect(took).To(BeNumerically("<", 5*time.Second), "answered at the 1 s deadline, not when the apiserver gives up")
	g.Expect(first.header.Get("Retry-After")).To(Equal("1"))
	g.Expect(first.body["detail"]).To(ContainSubstring("Idempotency-Key"))

	// The apiserver comes back. The first create may or may not have been
	// applied (here the apiserver dropped it with the request); either way
	// the retry with the same key must stand for that same call, so that a
	// create applied late is found, not placed again beside it.
	stall.release()
	again := postWithKey(t, operator.baseURL, o.key, "stalled-1", body)
	g.Expect(again.status).To(Equal(http.StatusCreated), "%s", again.raw)
	g.Expect(stall.creates()).To(HaveEach(callid.ResourceName(again.body["call_id"].(string))))
	g.Consistently(func() int { return countCalls(t, o.ns) }, 3*time.Second, 200*time.Millisecond).To(Equal(1))
}

// With as many placements in flight as --max-placements-in-flight, one
// more POST is answered 503 server_busy with Retry-After at once, in the
// documented error shape, and nothing of it is created or kept: its retry
// with the same Idempotency-Key, once there is room, places the call.
func TestPlacementGateFull(t *testing.T) {
	withOperator(t, func(o *app.Options) { o.MaxPlacementsInFlight = 1 })
	g := NewWithT(t)
	o := newOrg(t)
	stall := stallCallCreates(t, o)

	// The first placement holds the only slot: its create waits in the
	// apiserver's admission webhook.
	first := make(chan response, 1)
	go func() { first <- postWithKey(t, operator.baseURL, o.key, "gate-first", o.jsonBody(t, "+14155550142")) }()
	g.Eventually(stall.creates, 20*time.Second, 20*time.Millisecond).Should(HaveLen(1))

	// The refusal as the OpenAPI document describes it.
	busy := openAPIContract(t).do(exchange{method: "POST", path: "/v1/calls", key: o.key,
		body: string(o.jsonBody(t, "+14155550143")), header: http.Header{"Idempotency-Key": {"gate-second"}},
		valid: true, want: []int{http.StatusServiceUnavailable}})
	g.Expect(busy.header.Get("Retry-After")).To(Equal("1"))
	g.Expect(detail(t, busy)).To(And(HaveKeyWithValue("error_code", "server_busy"),
		HaveKeyWithValue("error", ContainSubstring("nothing was created"))))
	sdk := send(t, operator.baseURL, "POST", "/v2/create-phone-call", "Bearer "+o.key,
		map[string]any{"from_number": "+14155550100", "to_number": "+14155550144", "override_agent_id": o.agentID,
			"retell_llm_dynamic_variables": map[string]any{"customer_name": "Ada"}})
	g.Expect(sdk.status).To(Equal(http.StatusServiceUnavailable), "the SDK's create shares the gate: %s", sdk.raw)
	g.Expect(stall.creates()).To(HaveLen(1), "a refused placement sends no create")

	stall.release()
	g.Expect((<-first).status).To(Equal(http.StatusCreated))
	again := postWithKey(t, operator.baseURL, o.key, "gate-second", o.jsonBody(t, "+14155550143"))
	g.Expect(again.status).To(Equal(http.StatusCreated), "the refused request's retry is a first attempt: %s", again.raw)
	g.Expect(again.header.Get("Idempotent-Replayed")).To(BeEmpty())
	g.Expect(countCalls(t, o.ns)).To(Equal(2), "one call per placement that was admitted, none for the refused ones")
}

// stalledCreates is an admission webhook that holds every create of a Call
// in one namespace until released (or for its delay): an apiserver that
// takes the request and does not answer (or answers slowly).
type stalledCreates struct {
	released chan struct{}
	// delay, when set, holds each create that long instead (a slowed
	// apiserver).
	delay atomic.Int64
	seen  atomic.Int32
	once  atomic.Bool

	mu    sync.Mutex
	names []string // the Calls whose create came (dry runs aside)
}

func (s *stalledCreates) creates() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.names)
}

func (s *stalledCreates) release() {
	if s.once.CompareAndSwap(false, true) {
		close(s.released)
	}
}

// stallCallCreates registers the webhook for o's namespace and returns once
// the apiserver calls it.
func stallCallCreates(t *testing.T, o *org) *stalledCreates {
	t.Helper()
	s := &stalledCreates{released: make(chan struct{})}
	srv := httptest.NewTLSServer(http.HandlerFunc(s.review))
	t.Cleanup(srv.Close)
	t.Cleanup(s.release)

	ignore, none, timeout := admissionregistrationv1.Ignore, admissionregistrationv1.SideEffectClassNone, int32(15)
	url := srv.URL + "/stall"
	hook := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "stall-calls-"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "stall.switchboard.dev",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url,
				CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{switchboardv1.GroupVersion.Group},
					APIVersions: []string{switchboardv1.GroupVersion.Version}, Resources: []string{"calls"}},
			}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": o.ns}},
			FailurePolicy:           &ignore,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	ctx := context.Background()
	NewWithT(t).Expect(k8s.Create(ctx, hook)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(ctx, hook) })

	// The apiserver picks the configuration up asynchronously: probe with
	// dry-run creates (which the webhook lets through) until it is called.
	probe := &switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: "probe"},
		Spec: switchboardv1.CallSpec{AgentID: o.agentID, ToNumber: "+14155550142"}}
	NewWithT(t).Eventually(func() int32 {
		_ = k8s.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		return s.seen.Load()
	}, 20*time.Second, 100*time.Millisecond).To(BeNumerically(">", 0))
	return s
}

// review answers an AdmissionReview: dry runs at once, the rest once
// released (or when the apiserver gives up on it).
func (s *stalledCreates) review(w http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
		return
	}
	s.seen.Add(1)
	if dry := review.Request.DryRun; dry == nil || !*dry {
		s.mu.Lock()
		s.names = append(s.names, review.Request.Name)
		s.mu.Unlock()
		var until <-chan time.Time
		if d := time.Duration(s.delay.Load()); d > 0 {
			until = time.After(d)
		}
		select {
		case <-s.released:
		case <-until:
		case <-r.Context().Done():
			return
		}
	}
	review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	review.Request = nil
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&review)
}
