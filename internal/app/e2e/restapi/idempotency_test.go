package restapi_test

// Idempotent create: POST /v1/calls with an Idempotency-Key places its
// call once, however often and however concurrently it is sent, and every
// retry gets the first response again, also after a restart and after the
// Call has left the cluster.

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/switchboard-dev/switchboard/internal/app"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
)

func TestIdempotentCreateReplays(t *testing.T) {
	g := NewWithT(t)
	o := NewOrg(t)
	body := o.JSONBody(t, "+14155550142")
	first := PostWithKey(t, Operator.BaseURL, o.Key, "order-7-reminder", body)
	g.Expect(first.Status).To(Equal(http.StatusCreated), "%s", first.Raw)
	g.Expect(first.Header.Get("Idempotent-Replayed")).To(BeEmpty())

	again := PostWithKey(t, Operator.BaseURL, o.Key, "order-7-reminder", body)
	g.Expect(again.Status).To(Equal(http.StatusCreated))
	g.Expect(again.Header.Get("Idempotent-Replayed")).To(Equal("true"))
	g.Expect(string(again.Raw)).To(Equal(string(first.Raw)), "a replay is the first response, byte for byte")
	g.Expect(CountCalls(t, o.Ns)).To(Equal(1), "a replay places nothing")

	other := PostWithKey(t, Operator.BaseURL, o.Key, "order-7-reminder", o.JSONBody(t, "+14155550143"))
	g.Expect(other.Status).To(Equal(http.StatusUnprocessableEntity), "%s", other.Raw)
	g.Expect(Detail(t, other)["error_code"]).To(Equal("idempotency_key_reused"))
	g.Expect(CountCalls(t, o.Ns)).To(Equal(1))

	// Keys are per organization: another organization's same key is its own.
	o2 := NewOrg(t)
	theirs := PostWithKey(t, Operator.BaseURL, o2.Key, "order-7-reminder", o2.JSONBody(t, "+14155550142"))
	g.Expect(theirs.Status).To(Equal(http.StatusCreated), "%s", theirs.Raw)
	g.Expect(theirs.Body["call_id"]).NotTo(Equal(first.Body["call_id"]))
}

func TestIdempotentCreateConcurrent(t *testing.T) {
	g := NewWithT(t)
	o := NewOrg(t)
	body := o.JSONBody(t, "+14155550144")
	const n = 40
	responses := make([]Response, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { responses[i] = PostWithKey(t, Operator.BaseURL, o.Key, "same-key", body) })
	}
	wg.Wait()
	replayed := 0
	for _, r := range responses {
		g.Expect(r.Status).To(Equal(http.StatusCreated), "%s", r.Raw)
		g.Expect(r.Body["call_id"]).To(Equal(responses[0].Body["call_id"]))
		if r.Header.Get("Idempotent-Replayed") == "true" {
			replayed++
		}
	}
	g.Expect(replayed).To(Equal(n-1), "one request placed the call, the others replayed it")
	g.Expect(CountCalls(t, o.Ns)).To(Equal(1), "%d concurrent requests with one key", n)
}

func TestIdempotentCreateWhatIsKept(t *testing.T) {
	g := NewWithT(t)
	o := NewOrg(t)
	// A request refused before anything was created keeps nothing: the
	// same key then places the corrected request.
	invalid := PostWithKey(t, Operator.BaseURL, o.Key, "fix-and-retry", []byte(`{"agent_id":"`+o.AgentID+`"}`))
	g.Expect(invalid.Status).To(Equal(http.StatusUnprocessableEntity))
	fixed := PostWithKey(t, Operator.BaseURL, o.Key, "fix-and-retry", o.JSONBody(t, "+14155550145"))
	g.Expect(fixed.Status).To(Equal(http.StatusCreated), "%s", fixed.Raw)
	g.Expect(fixed.Header.Get("Idempotent-Replayed")).To(BeEmpty())

	// A dispatch failure leaves a failed call record: it is the key's, and
	// replays (no second failed record).
	failed := PostWithKey(t, Operator.BaseURL, o.Key, "carrier-down", o.JSONBody(t, "+14155550008"))
	g.Expect(failed.Status).To(Equal(http.StatusBadGateway), "%s", failed.Raw)
	replay := PostWithKey(t, Operator.BaseURL, o.Key, "carrier-down", o.JSONBody(t, "+14155550008"))
	g.Expect(replay.Status).To(Equal(http.StatusBadGateway))
	g.Expect(string(replay.Raw)).To(Equal(string(failed.Raw)))
	g.Expect(replay.Header.Get("Idempotent-Replayed")).To(Equal("true"))
	g.Expect(CountCalls(t, o.Ns)).To(Equal(2))

	for _, bad := range []string{strings.Repeat("k", 256), "tab\there", "é"} {
		r := PostWithKey(t, Operator.BaseURL, o.Key, bad, o.JSONBody(t, "+14155550146"))
		g.Expect(r.Status).To(Equal(http.StatusUnprocessableEntity), "key %q: %s", bad, r.Raw)
		g.Expect(r.Raw).To(ContainSubstring("Idempotency-Key"))
	}
	g.Expect(CountCalls(t, o.Ns)).To(Equal(2))
}

// The key outlives the process and the Call's retention in the cluster.
func TestIdempotencyKeySurvivesRestartAndRetention(t *testing.T) {
	g := NewWithT(t)
	WithOperator(t, func(o *app.Options) { o.Retention.Calls = ShortRetention })
	o := NewOrg(t)
	body := o.JSONBody(t, "+14155550147")
	first := PostWithKey(t, Operator.BaseURL, o.Key, "survivor", body)
	g.Expect(first.Status).To(Equal(http.StatusCreated), "%s", first.Raw)
	id := first.Body["call_id"].(string)
	o.WaitAnalyzed(t, id)
	WaitRemoved(t, o.Ns, id)

	Operator.Stop()
	op, err := StartOperator(true, func(o *app.Options) { o.Retention.Calls = ShortRetention })
	g.Expect(err).NotTo(HaveOccurred())
	Operator = op

	again := PostWithKey(t, Operator.BaseURL, o.Key, "survivor", body)
	g.Expect(again.Status).To(Equal(http.StatusCreated), "%s", again.Raw)
	g.Expect(string(again.Raw)).To(Equal(string(first.Raw)))
	g.Expect(again.Header.Get("Idempotent-Replayed")).To(Equal("true"))
	g.Expect(CountCalls(t, o.Ns)).To(Equal(0), "nothing placed again after the call left the cluster")
	g.Expect(len(ListAll(t, o.Key, "", 100))).To(Equal(1))
}
