package restapi_test

// An apiserver that does not answer: POST /v1/calls fails within the
// request deadline as 503 with Retry-After instead of waiting on it, and a
// retry with the same Idempotency-Key gets the one call, never a second.

import (
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/switchboard-dev/switchboard/internal/app"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
	"github.com/switchboard-dev/switchboard/internal/callid"
)

func TestCreateAgainstAStalledAPIServer(t *testing.T) {
	WithOperator(t, func(o *app.Options) { o.APIRequestTimeout = time.Second })
	g := NewWithT(t)
	o := NewOrg(t)
	stall := StallCallCreates(t, o)

	body := o.JSONBody(t, "+14155550142")
	start := time.Now()
	first := PostWithKey(t, Operator.BaseURL, o.Key, "stalled-1", body)
	took := time.Since(start)
	g.Expect(first.Status).To(Equal(http.StatusServiceUnavailable), "%s", first.Raw)
	g.Expect(took).To(BeNumerically("<", 5*time.Second), "answered at the 1 s deadline, not when the apiserver gives up")
	g.Expect(first.Header.Get("Retry-After")).To(Equal("1"))
	g.Expect(first.Body["detail"]).To(ContainSubstring("Idempotency-Key"))

	// The apiserver comes back. The first create may or may not have been
	// applied (here the apiserver dropped it with the request); either way
	// the retry with the same key must stand for that same call, so that a
	// create applied late is found, not placed again beside it.
	stall.Release()
	again := PostWithKey(t, Operator.BaseURL, o.Key, "stalled-1", body)
	g.Expect(again.Status).To(Equal(http.StatusCreated), "%s", again.Raw)
	g.Expect(stall.Creates()).To(HaveEach(callid.ResourceName(again.Body["call_id"].(string))))
	g.Consistently(func() int { return CountCalls(t, o.Ns) }, 3*time.Second, 200*time.Millisecond).To(Equal(1))
}

// With as many placements in flight as --max-placements-in-flight, one
// more POST is answered 503 server_busy with Retry-After at once, in the
// documented error shape, and nothing of it is created or kept: its retry
// with the same Idempotency-Key, once there is room, places the call.
func TestPlacementGateFull(t *testing.T) {
	WithOperator(t, func(o *app.Options) { o.MaxPlacementsInFlight = 1 })
	g := NewWithT(t)
	o := NewOrg(t)
	stall := StallCallCreates(t, o)

	// The first placement holds the only slot: its create waits in the
	// apiserver's admission webhook.
	first := make(chan Response, 1)
	go func() { first <- PostWithKey(t, Operator.BaseURL, o.Key, "gate-first", o.JSONBody(t, "+14155550142")) }()
	g.Eventually(stall.Creates, 20*time.Second, 20*time.Millisecond).Should(HaveLen(1))

	// The refusal as the OpenAPI document describes it.
	busy := OpenAPIContract(t).Do(Exchange{Method: "POST", Path: "/v1/calls", Key: o.Key,
		Body: string(o.JSONBody(t, "+14155550143")), Header: http.Header{"Idempotency-Key": {"gate-second"}},
		Valid: true, Want: []int{http.StatusServiceUnavailable}})
	g.Expect(busy.Header.Get("Retry-After")).To(Equal("1"))
	g.Expect(Detail(t, busy)).To(And(HaveKeyWithValue("error_code", "server_busy"),
		HaveKeyWithValue("error", ContainSubstring("nothing was created"))))
	sdk := Send(t, Operator.BaseURL, "POST", "/v2/create-phone-call", "Bearer "+o.Key,
		map[string]any{"from_number": "+14155550100", "to_number": "+14155550144", "override_agent_id": o.AgentID,
			"retell_llm_dynamic_variables": map[string]any{"customer_name": "Ada"}})
	g.Expect(sdk.Status).To(Equal(http.StatusServiceUnavailable), "the SDK's create shares the gate: %s", sdk.Raw)
	g.Expect(stall.Creates()).To(HaveLen(1), "a refused placement sends no create")

	stall.Release()
	g.Expect((<-first).Status).To(Equal(http.StatusCreated))
	again := PostWithKey(t, Operator.BaseURL, o.Key, "gate-second", o.JSONBody(t, "+14155550143"))
	g.Expect(again.Status).To(Equal(http.StatusCreated), "the refused request's retry is a first attempt: %s", again.Raw)
	g.Expect(again.Header.Get("Idempotent-Replayed")).To(BeEmpty())
	g.Expect(CountCalls(t, o.Ns)).To(Equal(2), "one call per placement that was admitted, none for the refused ones")
}
