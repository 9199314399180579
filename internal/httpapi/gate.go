package httpapi

import (
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// DefaultPlacementsInFlight is how many call placements a replica has in
// progress at once by default. A placement's time is mostly the Call's
// create in the apiserver, and a saturated apiserver answers creates about
// as fast whether 8 or 32 wait on it: what more of them in flight add is
// queueing. 8 admitted about twice the calls per second 4 did, with a
// lower p99, in the bursts measured so far (hack/README.md, "Saturation").
const DefaultPlacementsInFlight = 8

// placementWait is how long a placement waits for a free slot before it is
// answered 503: long enough to ride out a moment's jitter, short against
// the 250 ms a POST should take at worst.
const placementWait = 50 * time.Millisecond

// placementTarget is how long a placement may take before the gate admits
// fewer at once: well under the 250 ms a POST should take at worst, with
// room for the wait for a slot and the rest of the request.
const placementTarget = 100 * time.Millisecond

var placementsRefused = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "switchboard_api_placements_refused_total",
	Help: "Call creations answered 503 server_busy because the replica had as many placements in progress as it admits at once (switchboard_api_placements_bound).",
})

var placementBound = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "switchboard_api_placements_bound",
	Help: "Call creations this replica admits at once now: --max-placements-in-flight, less while creates take over 100 ms.",
})

func init() { metrics.Registry.MustRegister(placementsRefused, placementBound) }

// PlacementGate bounds the call placements in progress at once on a
// replica. Past the apiserver's capacity, more creates in flight only make
// each wait longer (a burst from 32 clients once took a POST p99 of
// 0.96 s); the gate answers the excess 503 with Retry-After at once, before
// anything is created or an Idempotency-Key is taken, so a refused request
// leaves nothing behind and its retry, with the same key or none, is a
// first attempt.
//
// The bound adapts below its maximum. A placement's time is nearly all the
// Call's create, and the apiserver slows when the calls already admitted
// load it more than it absorbs: a bound on creates in flight alone still
// admitted four times what the cluster carried, at a 201 p99 of 270 ms
// (hack/README.md, "Saturation"). So a placement slower than
// placementTarget halves the bound (once per placementTarget, as the
// placements in flight then were all slowed by the same moment), and each
// one faster adds to it, a slot per bound's worth of placements, up to the
// maximum: the additive increase and multiplicative decrease of TCP's
// congestion control, on the apiserver's create latency.
type PlacementGate struct {
	max int
	now func() time.Time

	mu       sync.Mutex
	bound    float64 // the bound now, 1 to max
	inFlight int
	freed    chan struct{} // closed, and replaced, when a slot frees
	lastCut  time.Time
}

// NewPlacementGate admits n placements at once at most; n <= 0 admits any
// number (nil gate).
func NewPlacementGate(n int) *PlacementGate {
	if n <= 0 {
		return nil
	}
	placementBound.Set(float64(n))
	return &PlacementGate{max: n, now: time.Now, bound: float64(n), freed: make(chan struct{})}
}

// limit wraps a handler that places calls: it runs with a slot held, or the
// request is answered 503 server_busy.
func (g *PlacementGate) limit(next http.HandlerFunc) http.HandlerFunc {
	if g == nil {
		return next
	}
	return func(w http.ResponseWriter, r *http.Request) {
		done, ok := g.Admit(r)
		if !ok {
			w.Header().Set("Retry-After", "1")
			writeErrorDetail(w, http.StatusServiceUnavailable, ErrorDetail{ErrorCode: CodeServerBusy,
				Error: "This replica is placing as many calls as it can at once; nothing was created. Retry after the " +
					"Retry-After header's seconds (with the same Idempotency-Key, if you sent one)."})
			return
		}
		defer done()
		next(w, r)
	}
}

// Admit takes a slot for the placement r makes (the dashboard's form
// shares the gate); done frees it once the placement is over. Not ok: the
// gate is full, and r must be answered busy without placing anything. A
// nil gate admits everything.
func (g *PlacementGate) Admit(r *http.Request) (done func(), ok bool) {
	if g == nil {
		return func() {}, true
	}
	if !g.acquire(r) {
		placementsRefused.Inc()
		return nil, false
	}
	started := time.Now()
	return func() { g.release(time.Since(started)) }, true
}

// acquire takes a slot, waiting placementWait at most (less if the request
// ends first).
func (g *PlacementGate) acquire(r *http.Request) bool {
	var timeout <-chan time.Time
	for {
		freed, ok := g.take()
		if ok {
			return true
		}
		if timeout == nil {
			t := time.NewTimer(placementWait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-freed:
		case <-timeout:
			return false
		case <-r.Context().Done():
			return false
		}
	}
}

// take takes a slot if one is free under the bound; else it returns what
// says when one frees.
func (g *PlacementGate) take() (<-chan struct{}, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inFlight < int(g.bound) {
		g.inFlight++
		return nil, true
	}
	return g.freed, false
}

// release frees a slot held for took, and adapts the bound to it.
func (g *PlacementGate) release(took time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inFlight--
	now := g.now()
	switch {
	case took <= placementTarget:
		g.bound = min(float64(g.max), g.bound+1/g.bound)
	case now.Sub(g.lastCut) >= placementTarget:
		g.bound = max(1, g.bound/2)
		g.lastCut = now
	}
	placementBound.Set(math.Floor(g.bound))
	close(g.freed)
	g.freed = make(chan struct{})
}

// CodeServerBusy is the error_code of a placement the gate refused.
const CodeServerBusy = "server_busy"
