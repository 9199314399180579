package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
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
