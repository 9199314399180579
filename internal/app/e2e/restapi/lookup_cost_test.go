package restapi_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"

	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
	"github.com/switchboard-dev/switchboard/internal/directory"
)

// Anyone with an API key can send any agent_id or endpoint id: an unknown
// one is answered from the informer cache (looked at again for a second:
// something applied a moment ago is found), at no cost to the API server.
// The replica runs no reconciler (as every replica serves the API), so the
// reads counted are the API's own.
func TestUnknownIDsCostTheAPIServerNothing(t *testing.T) {
	g := NewWithT(t)
	o := NewOrg(t)
	created := Do(t, "POST", "/v1/webhook-endpoints", o.Key, map[string]any{"url": "https://93.184.216.34/hook"})
	g.Expect(created.Status).To(Equal(http.StatusCreated), string(created.Raw))
	known := created.Body["id"].(string)

	counter := &ReadCounter{}
	cfg := rest.CopyConfig(ManagerConfig)
	cfg.Wrap(counter.Wrap)
	replica, err := StartOperatorOn(cfg, false)
	g.Expect(err).NotTo(HaveOccurred())
	defer replica.Stop()
	at := func(method, path string, body any) Response {
		return DoAt(t, replica.BaseURL, method, path, o.Key, body)
	}

	routes := []struct{ method, path string }{
		{"GET", ""}, {"PATCH", ""}, {"DELETE", ""}, {"POST", "/rotate-secret"}, {"POST", "/test"},
		{"GET", "/deliveries"}, {"GET", "/deliveries/dlv_00000000000000000000000000000000"},
		{"POST", "/deliveries/dlv_00000000000000000000000000000000/retry"},
	}
	counter.Count(true)
	start := time.Now()
	agentAnswers, endpointAnswers := make([]Response, 50), make([]Response, 50)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			agentAnswers[i] = at("POST", "/v1/calls", map[string]any{"agent_id": uuid.NewString(), "to_number": "+14155550123"})
		})
		wg.Go(func() {
			route := routes[i%len(routes)]
			path := fmt.Sprintf("/v1/webhook-endpoints/we_%032x%s", i+1, route.path)
			endpointAnswers[i] = at(route.method, path, map[string]any{"description": "x"})
		})
	}
	wg.Wait()
	took := time.Since(start)
	reads := counter.Count(false)
	for i := range 50 {
		r := agentAnswers[i]
		g.Expect(r.Status).To(Equal(http.StatusNotFound), string(r.Raw))
		g.Expect(r.Body["detail"]).To(HaveKeyWithValue("error_code", "agent_not_found"))
		r = endpointAnswers[i]
		g.Expect(r.Status).To(Equal(http.StatusNotFound), string(r.Raw))
		g.Expect(r.Body).To(HaveKeyWithValue("detail", "Webhook endpoint not found."))
	}
	g.Expect(reads).To(BeEmpty(), "100 unknown ids read the API server %d times", len(reads))
	t.Logf("100 unknown ids, all at once: 404 after %s, 0 reads at the API server", took.Round(time.Millisecond))

	// Known ids are found at once: both answers come before that of an
	// unknown id asked at the same moment, which waits out
	// DefaultMissGrace (its timers never fire early). Order, not a
	// duration, so a loaded machine slows both sides alike.
	unknownAnswered := make(chan struct{})
	go func() {
		defer close(unknownAnswered)
		at("GET", "/v1/webhook-endpoints/we_99999999999999999999999999999999", nil)
	}()
	g.Expect(at("GET", "/v1/webhook-endpoints/"+known, nil).Status).To(Equal(http.StatusOK))
	r := at("POST", "/v1/calls", map[string]any{"agent_id": o.AgentID, "to_number": "+14155550123",
		"from_number": "+12025550199", "variables": map[string]any{"customer_name": "Ada"}})
	g.Expect(r.Body["detail"]).To(HaveKeyWithValue("error_code", "from_number_mismatch"), "the agent was found")
	select {
	case <-unknownAnswered:
		t.Errorf("an unknown id was answered before the known ones: they waited out the %s grace", directory.DefaultMissGrace)
	default:
	}
	<-unknownAnswered
}
