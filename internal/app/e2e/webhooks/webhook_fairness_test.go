package webhooks_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/webhook/deliveries"
)

// TestWebhookFairness: organization B points 20 endpoints at a receiver
// that answers after 9.5 s and places calls; organization A's events still
// arrive within seconds, B's receiver never holds more than B's bounds,
// B's deliveries over them wait and are sent later, and a test send of B's
// is refused at once (429) while A's goes through. All tenants shared one
// pool of 128 slots before: A's events waited behind B's for 9.5 s and more.
func TestWebhookFairness(t *testing.T) {
	g := NewWithT(t)
	a, b := NewOrg(t), NewOrg(t)
	slow := NewSlowReceiver(t, SlowAnswer)
	bEndpoints := SlowEndpoints(t, b, slow, 20)
	fast := NewReceiver(t, nil)
	aEndpoint, _ := ApplyEndpoint(t, a.Ns, fast.URL(), nil)

	for i := range 8 { // 160 call.started deliveries to the slow receiver at once
		b.CreateCall(t, fmt.Sprintf("+1415555%04d", 2000+i), nil)
	}
	g.Eventually(slow.Holding, 20*time.Second, 20*time.Millisecond).Should(BeNumerically(">=", 32),
		"B's deliveries never reached its receiver")

	placed := time.Now()
	var aCalls []string
	for i := range 3 {
		aCalls = append(aCalls, a.CreateCall(t, fmt.Sprintf("+1415555%04d", 3000+i), nil))
	}
	g.Eventually(func() int { return len(fast.Deliveries()) }, 30*time.Second, 20*time.Millisecond).Should(Equal(9),
		"A's events of 3 calls")
	for _, d := range fast.Deliveries() {
		g.Expect(aCalls).To(ContainElement(d.Call()["call_id"]))
		g.Expect(d.At.Sub(StateChange(t, d))).To(BeNumerically("<", 5*time.Second),
			"A's %s of %s arrived %s after the call reached it, while B's receiver was slow",
			d.Event, d.Call()["call_id"], d.At.Sub(StateChange(t, d)))
	}
	t.Logf("A's 9 events arrived within %s of placing the calls", time.Since(placed).Round(time.Millisecond))

	// Test sends share the bounds: B's organization is at its bound, A's
	// is not. The refusal is the one the OpenAPI document describes.
	start := time.Now()
	r := OpenAPIContract(t).Do(Exchange{Method: "POST", Path: EndpointPath(bEndpoints[0].ResolvedID(), "/test"),
		Key: b.Key, Valid: true, Want: []int{http.StatusTooManyRequests}})
	ExpectCodeDetail(t, r, http.StatusTooManyRequests, "delivery_concurrency_limit_reached")
	g.Expect(r.Header.Get("Retry-After")).To(MatchRegexp(`^[1-9][0-9]*$`))
	// Waiting for one of B's slots would take until an attempt ends (up to
	// slowAnswer); the bound is half that, so a busy machine does not fail
	// a refusal that came at once.
	g.Expect(time.Since(start)).To(BeNumerically("<", SlowAnswer/2), "refused at once, not after the slow receiver")
	g.Expect(SendTestEvent(t, a.Key, aEndpoint.ResolvedID(), nil)).To(HaveKeyWithValue("status", "succeeded"))

	// Nothing of B's is lost: what waited is sent as slots free up.
	g.Eventually(slow.Received, 2*SlowAnswer, 50*time.Millisecond).Should(BeNumerically(">", 32),
		"B's queued deliveries were never sent")
	most, mostPerEndpoint := slow.Most()
	g.Expect(most).To(Equal(32), "B's receiver held more (or fewer) attempts at once than B's bound")
	g.Expect(mostPerEndpoint).To(BeNumerically("<=", 16))
}

// TestWebhookInterruptedTestSend: a test send holds a slot in the store
// while it waits for the receiver; if its process dies before it records
// the result, the slot frees when its lease lapses, and the delivery log
// closes it as failed rather than showing it pending forever.
func TestWebhookInterruptedTestSend(t *testing.T) {
	o := NewOrg(t)
	ep, _ := ApplyEndpoint(t, o.Ns, NewReceiver(t, nil).URL(), nil)
	d := deliveries.ForTest(ep)
	now := time.Now()
	d.CreationTimestamp = metav1.NewTime(now)
	reserved, err := HistoryStore.ReserveDelivery(context.Background(), d, now, 300*time.Millisecond, history.InFlightLimits{})
	if err != nil || !reserved {
		t.Fatalf("ReserveDelivery = %t, %v", reserved, err)
	}
	path := EndpointPath(ep.ResolvedID(), "/deliveries/", d.Spec.DeliveryID)
	NewWithT(t).Eventually(func() map[string]any { return Do(t, "GET", path, o.Key, nil).Body }, 10*time.Second, 50*time.Millisecond).
		Should(And(HaveKeyWithValue("status", "failed"), HaveKeyWithValue("attempt_count", 0.0),
			HaveKeyWithValue("last_error", "the test send was interrupted before its result was recorded")))
}
