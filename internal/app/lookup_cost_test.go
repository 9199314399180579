package app_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"

	"github.com/switchboard-dev/switchboard/internal/directory"
)

// readCounter records the reads (GET and LIST, not watches) a process makes
// to the API server while counting is on.
type readCounter struct {
	mu       sync.Mutex
	counting bool
	reads    []string
}

func (c *readCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method == http.MethodGet && req.URL.Query().Get("watch") != "true" {
			c.mu.Lock()
			if c.counting {
				c.reads = append(c.reads, req.URL.Path)
			}
			c.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

func (c *readCounter) count(on bool) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counting = on
	return c.reads
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// Anyone with an API key can send any agent_id or endpoint id: an unknown
// one is answered from the informer cache (looked at again for a second:
// something applied a moment ago is found), at no cost to the API server.
// The replica runs no reconciler (as every replica serves the API), so the
// reads counted are the API's own.
func TestUnknownIDsCostTheAPIServerNothing(t *testing.T) {
	g := NewWithT(t)
	o := newOrg(t)
	created := do(t, "POST", "/v1/webhook-endpoints", o.key, map[string]any{"url": "https://93.184.216.34/hook"})
	g.Expect(created.status).To(Equal(http.StatusCreated), string(created.raw))
	known := created.body["id"].(string)

	counter := &readCounter{}
	cfg := rest.CopyConfig(managerConfig)
	cfg.Wrap(counter.wrap)
	replica, err := startOperatorOn(cfg, false)
	g.Expect(err).NotTo(HaveOccurred())
	defer replica.stop()
	at := func(method, path string, body any) response {
		return doAt(t, replica.baseURL, method, path, o.key, body)
	}

	routes := []struct{ method, path string }{
		{"GET", ""}, {"PATCH", ""}, {"DELETE", ""}, {"POST", "/rotate-secret"}, {"POST", "/test"},
		{"GET", "/deliveries"}, {"GET", "/deliveries/dlv_00000000000000000000000000000000"},
		{"POST", "/deliveries/dlv_00000000000000000000000000000000/retry"},
	}
	counter.count(true)
	start := time.Now()
	agentAnswers, endpointAnswers := make([]response, 50), make([]response, 50)
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
	reads := counter.count(false)
	for i := range 50 {
		r := agentAnswers[i]
		g.Expect(r.status).To(Equal(http.StatusNotFound), string(r.raw))
		g.Expect(r.body["detail"]).To(HaveKeyWithValue("error_code", "agent_not_found"))
		r = endpointAnswers[i]
		g.Expect(r.status).To(Equal(http.StatusNotFound), string(r.raw))
		g.Expect(r.body).To(HaveKeyWithValue("detail", "Webhook endpoint not found."))
	}
	g.Expect(reads).To(BeEmpty(), "100 unknown ids read the API server %d times", len(reads))
	t.Logf("100 unknown ids, all at once: 404 after %s, 0 reads at the API server", took.Round(time.Millisecond))

	// Known ids are found at once.
	start = time.Now()
	g.Expect(at("GET", "/v1/webhook-endpoints/"+known, nil).status).To(Equal(http.StatusOK))
	r := at("POST", "/v1/calls", map[string]any{"agent_id": o.agentID, "to_number": "+14155550123",
		"from_number": "+12025550199", "variables": map[string]any{"customer_name": "Ada"}})
	g.Expect(r.body["detail"]).To(HaveKeyWithValue("error_code", "from_number_mismatch"), "the agent was found")
	// A lookup that missed the cache would have looked again for
	// DefaultMissGrace before either answer.
	g.Expect(time.Since(start)).To(BeNumerically("<", directory.DefaultMissGrace), "found without a second look")
}
