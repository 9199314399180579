package app_test

// Per-organization limits, set as annotations on the organization's
// namespace: calls created per second and calls queued or live at once.

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-dev/switchboard/internal/app"
	"github.com/switchboard-dev/switchboard/internal/quota"
)

// annotateOrg sets annotations on o's namespace and waits until the API
// reports the limits they set.
func annotateOrg(t *testing.T, o *org, annotations map[string]string) {
	t.Helper()
	g := NewWithT(t)
	var ns corev1.Namespace
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: o.ns}, &ns)).To(Succeed())
	patch := client.MergeFrom(ns.DeepCopy())
	if ns.Annotations == nil {
		ns.Annotations = map[string]string{}
	}
	for k, v := range annotations {
		ns.Annotations[k] = v
	}
	g.Expect(k8s.Patch(context.Background(), &ns, patch)).To(Succeed())
	// GET /v1/concurrency reports the limits once the operator sees them.
	fields := map[string]string{quota.ActiveCallsAnnotation: "concurrency_limit",
		quota.CreateRateAnnotation: "create_rate_limit", quota.WebhookEndpointsAnnotation: "webhook_endpoint_limit"}
	g.Eventually(func(g Gomega) {
		r := do(t, "GET", "/v1/concurrency", o.key, nil)
		for annotation, field := range fields {
			switch v, ok := annotations[annotation]; {
			case !ok:
			case v == quota.Unlimited:
				g.Expect(r.body).To(HaveKeyWithValue(field, BeNil()))
			default:
				g.Expect(r.body).To(HaveKeyWithValue(field, mustFloat(t, v)))
			}
		}
	}, 10*time.Second, 20*time.Millisecond).Should(Succeed())
}

func mustFloat(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestCreateRateLimit(t *testing.T) {
	g := NewWithT(t)
	o := newOrg(t)
	r := do(t, "GET", "/v1/concurrency", o.key, nil)
	g.Expect(r.status).To(Equal(http.StatusOK), "%s", r.raw)
	g.Expect(r.body).To(And(HaveKeyWithValue("concurrency_limit", BeNil()), HaveKeyWithValue("create_rate_limit", BeNil())),
		"no annotation, no limit")

	annotateOrg(t, o, map[string]string{quota.CreateRateAnnotation: "0.2", quota.CreateBurstAnnotation: "2"})
	for range 2 {
		o.createCall(t, "+14155550160", nil)
	}
	refused := do(t, "POST", "/v1/calls", o.key, map[string]any{"agent_id": o.agentID, "to_number": "+14155550160",
		"variables": map[string]any{"customer_name": "Ada"}})
	g.Expect(refused.status).To(Equal(http.StatusTooManyRequests), "%s", refused.raw)
	g.Expect(detail(t, refused)["error_code"]).To(Equal("rate_limited"))
	retry, err := strconv.Atoi(refused.header.Get("Retry-After"))
	g.Expect(err).NotTo(HaveOccurred(), "Retry-After %q", refused.header.Get("Retry-After"))
	g.Expect(retry).To(BeNumerically(">=", 1))
	g.Expect(retry).To(BeNumerically("<=", 5), "one call every 5 s")
	g.Expect(countCalls(t, o.ns)).To(Equal(2), "a refused request creates nothing")

	// Another organization is not held to this one's limit.
	other := newOrg(t)
	other.createCall(t, "+14155550160", nil)
}

func TestActiveCallsLimit(t *testing.T) {
	g := NewWithT(t)
	withOperator(t, func(o *app.Options) { o.SimTimings = slowCarrier })
	o := newOrg(t)
	annotateOrg(t, o, map[string]string{quota.ActiveCallsAnnotation: "2"})
	first := o.createCall(t, "+14155550161", nil)
	o.createCall(t, "+14155550162", nil)

	refused := do(t, "POST", "/v1/calls", o.key, map[string]any{"agent_id": o.agentID, "to_number": "+14155550163",
		"variables": map[string]any{"customer_name": "Ada"}})
	g.Expect(refused.status).To(Equal(http.StatusTooManyRequests), "%s", refused.raw)
	g.Expect(detail(t, refused)["error_code"]).To(Equal("concurrency_limit_reached"))
	g.Expect(refused.header.Get("Retry-After")).NotTo(BeEmpty())
	g.Expect(countCalls(t, o.ns)).To(Equal(2))

	usage := do(t, "GET", "/v1/concurrency", o.key, nil)
	g.Expect(usage.body["live_calls"].(float64) + usage.body["queued_calls"].(float64)).To(BeNumerically("==", 2))
	g.Expect(usage.body).To(HaveKeyWithValue("concurrency_limit", BeNumerically("==", 2)))

	// Once a call is over, there is room again.
	g.Expect(o.stopCall(t, first).status).To(Equal(http.StatusAccepted))
	o.waitAnalyzed(t, first)
	g.Eventually(func() int {
		return do(t, "POST", "/v1/calls", o.key, map[string]any{"agent_id": o.agentID, "to_number": "+14155550163",
			"variables": map[string]any{"customer_name": "Ada"}}).status
	}, 10*time.Second, 100*time.Millisecond).Should(Equal(http.StatusCreated))
}
