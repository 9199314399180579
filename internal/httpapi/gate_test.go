package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A full gate answers one more placement 503 server_busy with Retry-After
// without running it; a slot that frees admits the next one.
func TestPlacementGate(t *testing.T) {
	gate := NewPlacementGate(1)
	entered, release := make(chan struct{}), make(chan struct{})
	ran := 0
	h := gate.limit(func(w http.ResponseWriter, r *http.Request) {
		ran++
		if r.Header.Get("X-Hold") != "" {
			close(entered)
			<-release
		}
		w.WriteHeader(http.StatusCreated)
	})
	post := func(hold bool) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/v1/calls", nil)
		if hold {
			req.Header.Set("X-Hold", "1")
		}
		rec := httptest.NewRecorder()
		h(rec, req)
		return rec
	}

	held := make(chan *httptest.ResponseRecorder, 1)
	go func() { held <- post(true) }()
	<-entered
	busy := post(false)
	if busy.Code != http.StatusServiceUnavailable || busy.Header().Get("Retry-After") != "1" {
		t.Fatalf("with the gate full: %d, Retry-After %q; want 503 with Retry-After 1", busy.Code, busy.Header().Get("Retry-After"))
	}
	var body objectDetail
	if err := json.Unmarshal(busy.Body.Bytes(), &body); err != nil || body.Detail.ErrorCode != CodeServerBusy || body.Detail.Error == "" {
		t.Fatalf("body %s (%v), want a detail object with error_code %s and a message", busy.Body, err, CodeServerBusy)
	}
	if ran != 1 {
		t.Fatalf("the refused placement ran (%d runs)", ran)
	}
	close(release)
	if first := <-held; first.Code != http.StatusCreated {
		t.Fatalf("the admitted placement: %d", first.Code)
	}
	if next := post(false); next.Code != http.StatusCreated {
		t.Fatalf("after the slot freed: %d, want the placement admitted", next.Code)
	}
}

// No bound (a negative --max-placements-in-flight) is no gate.
func TestPlacementGateUnbounded(t *testing.T) {
	if NewPlacementGate(-1) != nil {
		t.Fatal("a negative bound made a gate")
	}
	var gate *PlacementGate
	rec := httptest.NewRecorder()
	gate.limit(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusCreated) })(rec,
		httptest.NewRequest("POST", "/v1/calls", nil))
	if rec.Code != http.StatusCreated {
		t.Fatalf("no gate: %d", rec.Code)
	}
}

// Placements slower than the target halve the bound, once per target's
// time, down to one; faster ones raise it back to the maximum, a slot per
// bound's worth of placements.
func TestPlacementGateAdaptsToCreateLatency(t *testing.T) {
	gate := NewPlacementGate(8)
	now := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	gate.now = func() time.Time { return now }
	held := func() int {
		n := 0
		for {
			if _, ok := gate.take(); !ok {
				return n
			}
			n++
		}
	}
	releaseAll := func(n int, took time.Duration) {
		for range n {
			gate.release(took)
		}
	}
	n := held()
	if n != 8 {
		t.Fatalf("a fresh gate admitted %d at once, want 8", n)
	}
	releaseAll(n, placementTarget+time.Millisecond) // all slowed by one moment: one cut
	if n = held(); n != 4 {
		t.Fatalf("after 8 slow placements at once: %d admitted, want 4", n)
	}
	now = now.Add(placementTarget) // the next slow moment
	releaseAll(n, time.Second)
	if n = held(); n != 2 {
		t.Fatalf("after a second slow moment: %d admitted, want 2", n)
	}
	for range 3 {
		now = now.Add(placementTarget)
		gate.release(time.Second)
		n--
		n += held()
	}
	if n != 1 {
		t.Fatalf("never below one: %d admitted", n)
	}
	// Fast placements: about bound placements per slot added.
	fast := 0
	for n < 8 {
		gate.release(time.Millisecond)
		fast++
		n += held() - 1
		if fast > 100 {
			t.Fatalf("after 100 fast placements %d admitted, want back to 8", n)
		}
	}
	if fast < 20 {
		t.Fatalf("back to 8 after %d fast placements: it should take about 1+2+...+7", fast)
	}
}
