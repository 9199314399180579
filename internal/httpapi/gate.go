package httpapi

import (
	"net/http"
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

var placementsRefused = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "switchboard_api_placements_refused_total",
	Help: "Call creations answered 503 server_busy because the replica had as many placements in progress as --max-placements-in-flight.",
})

func init() { metrics.Registry.MustRegister(placementsRefused) }

// PlacementGate bounds the call placements in progress at once on a
// replica. Past the apiserver's capacity, more creates in flight only make
// each wait longer (a burst from 32 clients once took a POST p99 of
// 0.96 s); the gate answers the excess 503 with Retry-After at once, before
// anything is created or an Idempotency-Key is taken, so a refused request
// leaves nothing behind and its retry, with the same key or none, is a
// first attempt.
type PlacementGate struct {
	slots chan struct{}
}

// NewPlacementGate admits n placements at once; n <= 0 admits any number
// (nil gate).
func NewPlacementGate(n int) *PlacementGate {
	if n <= 0 {
		return nil
	}
	return &PlacementGate{slots: make(chan struct{}, n)}
}

// limit wraps a handler that places calls: it runs with a slot held, or the
// request is answered 503 server_busy.
func (g *PlacementGate) limit(next http.HandlerFunc) http.HandlerFunc {
	if g == nil {
		return next
	}
	return func(w http.ResponseWriter, r *http.Request) {
		if !g.acquire(r) {
			placementsRefused.Inc()
			w.Header().Set("Retry-After", "1")
			writeErrorDetail(w, http.StatusServiceUnavailable, ErrorDetail{ErrorCode: CodeServerBusy,
				Error: "This replica is placing as many calls as it can at once; nothing was created. Retry after the " +
					"Retry-After header's seconds (with the same Idempotency-Key, if you sent one)."})
			return
		}
		defer func() { <-g.slots }()
		next(w, r)
	}
}

// acquire takes a slot, waiting placementWait at most (less if the request
// ends first).
func (g *PlacementGate) acquire(r *http.Request) bool {
	select {
	case g.slots <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(placementWait)
	defer t.Stop()
	select {
	case g.slots <- struct{}{}:
		return true
	case <-t.C:
		return false
	case <-r.Context().Done():
		return false
	}
}

// CodeServerBusy is the error_code of a placement the gate refused.
const CodeServerBusy = "server_busy"
