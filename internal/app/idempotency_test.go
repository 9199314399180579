package app_test

// Idempotent create: POST /v1/calls with an Idempotency-Key places its
// call once, however often and however concurrently it is sent, and every
// retry gets the first response again, also after a restart and after the
// Call has left the cluster.

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/switchboard-dev/switchboard/internal/app"
)

// postWithKey posts a create-call body with an Idempotency-Key.
func postWithKey(t testing.TB, baseURL, apiKey, idemKey string, body []byte) response {
	t.Helper()
	return sendWithHeader(t, baseURL, "POST", "/v1/calls", "Bearer "+apiKey, body,
		http.Header{"Idempotency-Key": {idemKey}})
}

func (o *org) jsonBody(t testing.TB, number string) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"agent_id": o.agentID, "to_number": number,
		"variables": map[string]any{"customer_name": "Ada"}, "metadata": map[string]any{"order": 7}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestIdempotentCreateReplays(t *testing.T) {
	g := NewWithT(t)
	o := newOrg(t)
	body := o.jsonBody(t, "+14155550142")
	first := postWithKey(t, operator.baseURL, o.key, "order-7-reminder", body)
	g.Expect(first.status).To(Equal(http.StatusCreated), "%s", first.raw)
	g.Expect(first.header.Get("Idempotent-Replayed")).To(BeEmpty())

	again := postWithKey(t, operator.baseURL, o.key, "order-7-reminder", body)
	g.Expect(again.status).To(Equal(http.StatusCreated))
	g.Expect(again.header.Get("Idempotent-Replayed")).To(Equal("true"))
	g.Expect(string(again.raw)).To(Equal(string(first.raw)), "a replay is the first response, byte for byte")
	g.Expect(countCalls(t, o.ns)).To(Equal(1), "a replay places nothing")

	other := postWithKey(t, operator.baseURL, o.key, "order-7-reminder", o.jsonBody(t, "+14155550143"))
	g.Expect(other.status).To(Equal(http.StatusUnprocessableEntity), "%s", other.raw)
	g.Expect(detail(t, other)["error_code"]).To(Equal("idempotency_key_reused"))
	g.Expect(countCalls(t, o.ns)).To(Equal(1))

	// Keys are per organization: another organization's same key is its own.
	o2 := newOrg(t)
	theirs := postWithKey(t, operator.baseURL, o2.key, "order-7-reminder", o2.jsonBody(t, "+14155550142"))
	g.Expect(theirs.status).To(Equal(http.StatusCreated), "%s", theirs.raw)
	g.Expect(theirs.body["call_id"]).NotTo(Equal(first.body["call_id"]))
}

func TestIdempotentCreateConcurrent(t *testing.T) {
	g := NewWithT(t)
	o := newOrg(t)
	body := o.jsonBody(t, "+14155550144")
	const n = 40
	responses := make([]response, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { responses[i] = postWithKey(t, operator.baseURL, o.key, "same-key", body) })
	}
	wg.Wait()
	replayed := 0
	for _, r := range responses {
		g.Expect(r.status).To(Equal(http.StatusCreated), "%s", r.raw)
		g.Expect(r.body["call_id"]).To(Equal(responses[0].body["call_id"]))
		if r.header.Get("Idempotent-Replayed") == "true" {
			replayed++
		}
	}
	g.Expect(replayed).To(Equal(n-1), "one request placed the call, the others replayed it")
	g.Expect(countCalls(t, o.ns)).To(Equal(1), "%d concurrent requests with one key", n)
}

func TestIdempotentCreateWhatIsKept(t *testing.T) {
	g := NewWithT(t)
	o := newOrg(t)
	// A request refused before anything was created keeps nothing: the
	// same key then places the corrected request.
	invalid := postWithKey(t, operator.baseURL, o.key, "fix-and-retry", []byte(`{"agent_id":"`+o.agentID+`"}`))
	g.Expect(invalid.status).To(Equal(http.StatusUnprocessableEntity))
	fixed := postWithKey(t, operator.baseURL, o.key, "fix-and-retry", o.jsonBody(t, "+14155550145"))
	g.Expect(fixed.status).To(Equal(http.StatusCreated), "%s", fixed.raw)
	g.Expect(fixed.header.Get("Idempotent-Replayed")).To(BeEmpty())

	// A dispatch failure leaves a failed call record: it is the key's, and
	// replays (no second failed record).
	failed := postWithKey(t, operator.baseURL, o.key, "carrier-down", o.jsonBody(t, "+14155550008"))
	g.Expect(failed.status).To(Equal(http.StatusBadGateway), "%s", failed.raw)
	replay := postWithKey(t, operator.baseURL, o.key, "carrier-down", o.jsonBody(t, "+14155550008"))
	g.Expect(replay.status).To(Equal(http.StatusBadGateway))
	g.Expect(string(replay.raw)).To(Equal(string(failed.raw)))
	g.Expect(replay.header.Get("Idempotent-Replayed")).To(Equal("true"))
	g.Expect(countCalls(t, o.ns)).To(Equal(2))

	for _, bad := range []string{strings.Repeat("k", 256), "tab\there", "é"} {
		r := postWithKey(t, operator.baseURL, o.key, bad, o.jsonBody(t, "+14155550146"))
		g.Expect(r.status).To(Equal(http.StatusUnprocessableEntity), "key %q: %s", bad, r.raw)
		g.Expect(r.raw).To(ContainSubstring("Idempotency-Key"))
	}
	g.Expect(countCalls(t, o.ns)).To(Equal(2))
}

// The key outlives the process and the Call's retention in the cluster.
func TestIdempotencyKeySurvivesRestartAndRetention(t *testing.T) {
	g := NewWithT(t)
	withOperator(t, func(o *app.Options) { o.Retention.Calls = shortRetention })
	o := newOrg(t)
	body := o.jsonBody(t, "+14155550147")
	first := postWithKey(t, operator.baseURL, o.key, "survivor", body)
	g.Expect(first.status).To(Equal(http.StatusCreated), "%s", first.raw)
	id := first.body["call_id"].(string)
	o.waitAnalyzed(t, id)
	waitRemoved(t, o.ns, id)

	operator.stop()
	op, err := startOperator(true, func(o *app.Options) { o.Retention.Calls = shortRetention })
	g.Expect(err).NotTo(HaveOccurred())
	operator = op

	again := postWithKey(t, operator.baseURL, o.key, "survivor", body)
	g.Expect(again.status).To(Equal(http.StatusCreated), "%s", again.raw)
	g.Expect(string(again.raw)).To(Equal(string(first.raw)))
	g.Expect(again.header.Get("Idempotent-Replayed")).To(Equal("true"))
	g.Expect(countCalls(t, o.ns)).To(Equal(0), "nothing placed again after the call left the cluster")
	g.Expect(len(listAll(t, o.key, "", 100))).To(Equal(1))
}
