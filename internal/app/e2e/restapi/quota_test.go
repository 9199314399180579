package restapi_test

// Per-organization limits, set as annotations on the organization's
// namespace: calls created per second and calls queued or live at once.

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/switchboard-dev/switchboard/internal/app"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
	"github.com/switchboard-dev/switchboard/internal/quota"
)

func TestCreateRateLimit(t *testing.T) {
	g := NewWithT(t)
	o := NewOrg(t)
	r := Do(t, "GET", "/v1/concurrency", o.Key, nil)
	g.Expect(r.Status).To(Equal(http.StatusOK), "%s", r.Raw)
	g.Expect(r.Body).To(And(HaveKeyWithValue("concurrency_limit", BeNil()), HaveKeyWithValue("create_rate_limit", BeNil())),
		"no annotation, no limit")

	AnnotateOrg(t, o, map[string]string{quota.CreateRateAnnotation: "0.2", quota.CreateBurstAnnotation: "2"})
	for range 2 {
		o.CreateCall(t, "+14155550160", nil)
	}
	refused := Do(t, "POST", "/v1/calls", o.Key, map[string]any{"agent_id": o.AgentID, "to_number": "+14155550160",
		"variables": map[string]any{"customer_name": "Ada"}})
	g.Expect(refused.Status).To(Equal(http.StatusTooManyRequests), "%s", refused.Raw)
	g.Expect(Detail(t, refused)["error_code"]).To(Equal("rate_limited"))
	retry, err := strconv.Atoi(refused.Header.Get("Retry-After"))
	g.Expect(err).NotTo(HaveOccurred(), "Retry-After %q", refused.Header.Get("Retry-After"))
	g.Expect(retry).To(BeNumerically(">=", 1))
	g.Expect(retry).To(BeNumerically("<=", 5), "one call every 5 s")
	g.Expect(CountCalls(t, o.Ns)).To(Equal(2), "a refused request creates nothing")

	// Another organization is not held to this one's limit.
	other := NewOrg(t)
	other.CreateCall(t, "+14155550160", nil)
}

func TestActiveCallsLimit(t *testing.T) {
	g := NewWithT(t)
	WithOperator(t, func(o *app.Options) { o.SimTimings = SlowCarrier })
	o := NewOrg(t)
	AnnotateOrg(t, o, map[string]string{quota.ActiveCallsAnnotation: "2"})
	first := o.CreateCall(t, "+14155550161", nil)
	o.CreateCall(t, "+14155550162", nil)

	refused := Do(t, "POST", "/v1/calls", o.Key, map[string]any{"agent_id": o.AgentID, "to_number": "+14155550163",
		"variables": map[string]any{"customer_name": "Ada"}})
	g.Expect(refused.Status).To(Equal(http.StatusTooManyRequests), "%s", refused.Raw)
	g.Expect(Detail(t, refused)["error_code"]).To(Equal("concurrency_limit_reached"))
	g.Expect(refused.Header.Get("Retry-After")).NotTo(BeEmpty())
	g.Expect(CountCalls(t, o.Ns)).To(Equal(2))

	usage := Do(t, "GET", "/v1/concurrency", o.Key, nil)
	g.Expect(usage.Body["live_calls"].(float64) + usage.Body["queued_calls"].(float64)).To(BeNumerically("==", 2))
	g.Expect(usage.Body).To(HaveKeyWithValue("concurrency_limit", BeNumerically("==", 2)))

	// Once a call is over, there is room again.
	g.Expect(o.StopCall(t, first).Status).To(Equal(http.StatusAccepted))
	o.WaitAnalyzed(t, first)
	g.Eventually(func() int {
		return Do(t, "POST", "/v1/calls", o.Key, map[string]any{"agent_id": o.AgentID, "to_number": "+14155550163",
			"variables": map[string]any{"customer_name": "Ada"}}).Status
	}, 10*time.Second, 100*time.Millisecond).Should(Equal(http.StatusCreated))
}
