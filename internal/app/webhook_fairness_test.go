package app_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/httpapi/openapitest"
	"github.com/switchboard-dev/switchboard/internal/webhook/deliveries"
)

// slowAnswer is how long the noisy organization's receiver takes: just
// under the 10-second timeout, so every attempt holds its slot the longest
// an attempt that succeeds can.
const slowAnswer = 9500 * time.Millisecond

// TestWebhookFairness: organization B points 20 endpoints at a receiver
// that answers after 9.5 s and places calls; organization A's events still
// arrive within seconds, B's receiver never holds more than B's bounds,
// B's deliveries over them wait and are sent later, and a test send of B's
// is refused at once (429) while A's goes through. All tenants shared one
// pool of 128 slots before: A's events waited behind B's for 9.5 s and more.
func TestWebhookFairness(t *testing.T) {
	g := NewWithT(t)
	a, b := newOrg(t), newOrg(t)
	slow := newSlowReceiver(t, slowAnswer)
	bEndpoints := slowEndpoints(t, b, slow, 20)
	fast := newReceiver(t, nil)
	aEndpoint, _ := applyEndpoint(t, a.ns, fast.url(), nil)

	for i := range 8 { // 160 call.started deliveries to the slow receiver at once
		b.createCall(t, fmt.Sprintf("+1415555%04d", 2000+i), nil)
	}
	g.Eventually(slow.holding, 20*time.Second, 20*time.Millisecond).Should(BeNumerically(">=", 32),
		"B's deliveries never reached its receiver")

	placed := time.Now()
	var aCalls []string
	for i := range 3 {
		aCalls = append(aCalls, a.createCall(t, fmt.Sprintf("+1415555%04d", 3000+i), nil))
	}
	g.Eventually(func() int { return len(fast.deliveries()) }, 30*time.Second, 20*time.Millisecond).Should(Equal(9),
		"A's events of 3 calls")
	for _, d := range fast.deliveries() {
		g.Expect(aCalls).To(ContainElement(d.call()["call_id"]))
		g.Expect(d.at.Sub(stateChange(t, d))).To(BeNumerically("<", 5*time.Second),
			"A's %s of %s arrived %s after the call reached it, while B's receiver was slow",
			d.event, d.call()["call_id"], d.at.Sub(stateChange(t, d)))
	}
	t.Logf("A's 9 events arrived within %s of placing the calls", time.Since(placed).Round(time.Millisecond))

	// Test sends share the bounds: B's organization is at its bound, A's
	// is not. The refusal is the one the OpenAPI document describes.
	start := time.Now()
	r := openAPIContract(t).do(exchange{method: "POST", path: endpointPath(bEndpoints[0].ResolvedID(), "/test"),
		key: b.key, valid: true, want: []int{http.StatusTooManyRequests}})
	expectCodeDetail(t, r, http.StatusTooManyRequests, "delivery_concurrency_limit_reached")
	g.Expect(r.header.Get("Retry-After")).To(MatchRegexp(`^[1-9][0-9]*$`))
	// Waiting for one of B's slots would take until an attempt ends (up to
	// slowAnswer); the bound is half that, so a busy machine does not fail
	// a refusal that came at once.
	g.Expect(time.Since(start)).To(BeNumerically("<", slowAnswer/2), "refused at once, not after the slow receiver")
	g.Expect(testEvent(t, a.key, aEndpoint.ResolvedID(), nil)).To(HaveKeyWithValue("status", "succeeded"))

	// Nothing of B's is lost: what waited is sent as slots free up.
	g.Eventually(slow.received, 2*slowAnswer, 50*time.Millisecond).Should(BeNumerically(">", 32),
		"B's queued deliveries were never sent")
	most, mostPerEndpoint := slow.most()
	g.Expect(most).To(Equal(32), "B's receiver held more (or fewer) attempts at once than B's bound")
	g.Expect(mostPerEndpoint).To(BeNumerically("<=", 16))
}

// openAPIContract checks exchanges against the document the operator
// serves.
func openAPIContract(t *testing.T) *contract {
	t.Helper()
	v, err := openapitest.NewValidator(do(t, "GET", "/v1/openapi.json", "", nil).raw)
	if err != nil {
		t.Fatal(err)
	}
	return &contract{t: t, v: v}
}

// stateChange is when the call reached the state an event tells of: its
// started_at for call.started, else its ended_at.
func stateChange(t *testing.T, d delivery) time.Time {
	t.Helper()
	field := "ended_at"
	if d.event == "call.started" {
		field = "started_at"
	}
	at, err := time.Parse(time.RFC3339, fmt.Sprint(d.call()[field]))
	if err != nil {
		t.Fatalf("%s of %s: %s %v", d.event, d.call()["call_id"], field, err)
	}
	return at
}

// slowEndpoints applies n endpoints of o, each with its own path on rc,
// and deletes them when the test ends, so that the deliveries still queued
// for them end without an attempt.
func slowEndpoints(t testing.TB, o *org, rc *slowReceiver, n int) []*switchboardv1.WebhookEndpoint {
	t.Helper()
	eps := make([]*switchboardv1.WebhookEndpoint, n)
	for i := range eps {
		eps[i], _ = applyEndpoint(t, o.ns, fmt.Sprintf("%s/hooks/%d", rc.srv.URL, i), nil)
	}
	t.Cleanup(func() {
		for _, ep := range eps {
			_ = k8s.Delete(context.Background(), ep)
		}
	})
	return eps
}

// slowReceiver answers every request after a delay (at once when the test
// ends), and counts the requests it holds at once, in all and per path.
type slowReceiver struct {
	srv   *httptest.Server
	delay time.Duration
	stop  chan struct{}

	mu                    sync.Mutex
	total, now            int
	perPath               map[string]int
	maxNow, maxPerPathNow int
}

func newSlowReceiver(t testing.TB, delay time.Duration) *slowReceiver {
	t.Helper()
	rc := &slowReceiver{delay: delay, stop: make(chan struct{}), perPath: map[string]int{}}
	rc.srv = httptest.NewTLSServer(rc)
	t.Cleanup(func() {
		close(rc.stop)
		rc.srv.Close()
	})
	return rc
}

func (rc *slowReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	rc.enter(r.URL.Path)
	defer rc.leave(r.URL.Path)
	timer := time.NewTimer(rc.delay)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-rc.stop:
	case <-r.Context().Done():
	}
	w.WriteHeader(http.StatusOK)
}

func (rc *slowReceiver) enter(path string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.total++
	rc.now++
	rc.perPath[path]++
	rc.maxNow = max(rc.maxNow, rc.now)
	rc.maxPerPathNow = max(rc.maxPerPathNow, rc.perPath[path])
}

func (rc *slowReceiver) leave(path string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.now--
	rc.perPath[path]--
}

// holding is how many requests it holds now.
func (rc *slowReceiver) holding() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.now
}

// received is how many requests it has had.
func (rc *slowReceiver) received() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.total
}

// most is the most requests it held at once, in all and on one path.
func (rc *slowReceiver) most() (int, int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.maxNow, rc.maxPerPathNow
}

// TestWebhookInterruptedTestSend: a test send holds a slot in the store
// while it waits for the receiver; if its process dies before it records
// the result, the slot frees when its lease lapses, and the delivery log
// closes it as failed rather than showing it pending forever.
func TestWebhookInterruptedTestSend(t *testing.T) {
	o := newOrg(t)
	ep, _ := applyEndpoint(t, o.ns, newReceiver(t, nil).url(), nil)
	d := deliveries.ForTest(ep)
	now := time.Now()
	d.CreationTimestamp = metav1.NewTime(now)
	reserved, err := historyStore.ReserveDelivery(context.Background(), d, now, 300*time.Millisecond, history.InFlightLimits{})
	if err != nil || !reserved {
		t.Fatalf("ReserveDelivery = %t, %v", reserved, err)
	}
	path := endpointPath(ep.ResolvedID(), "/deliveries/", d.Spec.DeliveryID)
	NewWithT(t).Eventually(func() map[string]any { return do(t, "GET", path, o.key, nil).body }, 10*time.Second, 50*time.Millisecond).
		Should(And(HaveKeyWithValue("status", "failed"), HaveKeyWithValue("attempt_count", 0.0),
			HaveKeyWithValue("last_error", "the test send was interrupted before its result was recorded")))
}
