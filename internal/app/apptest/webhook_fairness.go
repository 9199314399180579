package apptest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/httpapi/openapitest"
)

// SlowAnswer is how long the noisy organization's receiver takes: just
// under the 10-second timeout, so every attempt holds its slot the longest
// an attempt that succeeds can.
const SlowAnswer = 9500 * time.Millisecond

// OpenAPIContract checks exchanges against the document the operator
// serves.
func OpenAPIContract(t *testing.T) *Contract {
	t.Helper()
	v, err := openapitest.NewValidator(Do(t, "GET", "/v1/openapi.json", "", nil).Raw)
	if err != nil {
		t.Fatal(err)
	}
	return &Contract{T: t, V: v}
}

// StateChange is when the call reached the state an event tells of: its
// started_at for call.started, else its ended_at.
func StateChange(t *testing.T, d Delivery) time.Time {
	t.Helper()
	field := "ended_at"
	if d.Event == "call.started" {
		field = "started_at"
	}
	at, err := time.Parse(time.RFC3339, fmt.Sprint(d.Call()[field]))
	if err != nil {
		t.Fatalf("%s of %s: %s %v", d.Event, d.Call()["call_id"], field, err)
	}
	return at
}

// SlowEndpoints applies n endpoints of o, each with its own path on rc,
// and deletes them when the test ends, so that the deliveries still queued
// for them end without an attempt.
func SlowEndpoints(t testing.TB, o *Org, rc *SlowReceiver, n int) []*switchboardv1.WebhookEndpoint {
	t.Helper()
	eps := make([]*switchboardv1.WebhookEndpoint, n)
	for i := range eps {
		eps[i], _ = ApplyEndpoint(t, o.Ns, fmt.Sprintf("%s/hooks/%d", rc.Srv.URL, i), nil)
	}
	t.Cleanup(func() {
		for _, ep := range eps {
			_ = K8s.Delete(context.Background(), ep)
		}
	})
	return eps
}

// SlowReceiver answers every request after a delay (at once when the test
// ends), and counts the requests it holds at once, in all and per path.
type SlowReceiver struct {
	Srv   *httptest.Server
	Delay time.Duration
	Stop  chan struct{}

	Mu                    sync.Mutex
	Total, Now            int
	PerPath               map[string]int
	MaxNow, MaxPerPathNow int
}

func NewSlowReceiver(t testing.TB, delay time.Duration) *SlowReceiver {
	t.Helper()
	rc := &SlowReceiver{Delay: delay, Stop: make(chan struct{}), PerPath: map[string]int{}}
	rc.Srv = httptest.NewTLSServer(rc)
	t.Cleanup(func() {
		close(rc.Stop)
		rc.Srv.Close()
	})
	return rc
}

func (rc *SlowReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	rc.Enter(r.URL.Path)
	defer rc.Leave(r.URL.Path)
	timer := time.NewTimer(rc.Delay)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-rc.Stop:
	case <-r.Context().Done():
	}
	w.WriteHeader(http.StatusOK)
}

func (rc *SlowReceiver) Enter(path string) {
	rc.Mu.Lock()
	defer rc.Mu.Unlock()
	rc.Total++
	rc.Now++
	rc.PerPath[path]++
	rc.MaxNow = max(rc.MaxNow, rc.Now)
	rc.MaxPerPathNow = max(rc.MaxPerPathNow, rc.PerPath[path])
}

func (rc *SlowReceiver) Leave(path string) {
	rc.Mu.Lock()
	defer rc.Mu.Unlock()
	rc.Now--
	rc.PerPath[path]--
}

// Holding is how many requests it holds now.
func (rc *SlowReceiver) Holding() int {
	rc.Mu.Lock()
	defer rc.Mu.Unlock()
	return rc.Now
}

// Received is how many requests it has had.
func (rc *SlowReceiver) Received() int {
	rc.Mu.Lock()
	defer rc.Mu.Unlock()
	return rc.Total
}

// Most is the most requests it held at once, in all and on one path.
func (rc *SlowReceiver) Most() (int, int) {
	rc.Mu.Lock()
	defer rc.Mu.Unlock()
	return rc.MaxNow, rc.MaxPerPathNow
}
