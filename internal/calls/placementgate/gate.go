// Package placementgate bounds the call placements a replica has in
// progress at once, shares them fairly between organizations, and holds a
// placement for a slot as long as it can still be answered within the
// POST's latency goal. It protects the cluster, not the organizations from
// each other's bursts: their own limits (package quota) come first, so a
// placement reaches the gate only once its organization may place it.
package placementgate

import (
	"cmp"
	"context"
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// DefaultInFlight is how many call placements a replica has in progress at
// once by default. A placement's time is mostly the Call's create in the
// apiserver, and a saturated apiserver answers creates about as fast
// whether 8 or 32 wait on it: what more of them in flight add is queueing.
// 8 admitted about twice the calls per second 4 did, with a lower p99, in
// the bursts measured so far (hack/benchmarks.md, "Saturation").
const DefaultInFlight = 8

// Budget is how long a placement may take by default, its wait for a slot
// included: a POST's latency goal is a p99 of 250 ms, and the slow end of
// the creates (their average is what the gate knows) and the request's
// decoding, checks and answer need the rest. A placement waits for a slot
// while it can still be placed within the budget, by the placements'
// recent time; a longer backlog is answered busy at once. A burst of 40 on
// an idle 2-core machine, 8 creates at a time of about 7 ms each, takes
// about 35 ms: it is admitted whole; a replica that cannot keep up answers
// the excess busy instead of letting every POST wait its turn. With 200
// ms the saturated POSTs' p99 was 297 – 322 ms on a quiet machine, with
// 100 ms 169 – 239 ms (hack/benchmarks.md, "Saturation").
const Budget = 100 * time.Millisecond

// Target is how long placements may take on average before the gate
// admits fewer at once: well under the 250 ms a POST should take at worst.
const Target = 100 * time.Millisecond

var refused = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "switchboard_api_placements_refused_total",
	Help: "Call creations answered 503 server_busy because this replica's placements in progress could not take them within the latency goal (switchboard_api_placements_bound).",
})

var boundGauge = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "switchboard_api_placements_bound",
	Help: "Call creations this replica admits at once now: --max-placements-in-flight, less while creates take over 100 ms.",
})

func init() { metrics.Registry.MustRegister(refused, boundGauge) }

// Gate bounds the placements in progress at once on a replica. Past the
// apiserver's capacity, more creates in flight only make each wait longer
// (a burst from 32 clients once took a POST p99 of 0.96 s); the gate
// answers the excess busy, before anything is created, so a refused
// request leaves nothing behind and its retry is a first attempt.
//
// A placement that finds no slot waits for one while it can still be
// placed within the gate's budget (Budget by default): the slots free at
// about bound per placement's time (an average of the recent ones), so a
// burst the replica places within the goal is admitted whole, and only a backlog longer than that is
// refused, at once rather than after the wait.
//
// While placements wait, slots go to the organizations below their fair
// share first (the bound over the organizations placing or waiting), in
// turn: one organization's burst takes at most its share from the others.
// An organization with nothing in flight is admitted at once, even with
// every slot taken, into a reserve of a quarter of the bound above it: its
// first call never waits behind another organization's burst.
//
// The bound adapts below its maximum. A placement's time is nearly all the
// Call's create, and the apiserver slows when the calls already admitted
// load it more than it absorbs. So while placements take longer than
// Target on average (the estimate), the bound halves, once per Target (the
// placements in flight then were all slowed by the same moment), and
// while they are faster each one adds to it, a slot per bound's worth of
// placements, up to the maximum: the additive increase and multiplicative
// decrease of TCP's congestion control, on the apiserver's create latency.
// The average, not each placement, decides: a lone slow create is the tail
// every load has (a garbage collection, a busy core), and halving the
// bound for it queued the placements behind it, which at a paced half of
// the ceiling raised the POSTs' p90 from tens to hundreds of
// milliseconds (hack/benchmarks.md, "Paced placements").
type Gate struct {
	max    int
	budget time.Duration
	now    func() time.Time

	mu       sync.Mutex
	bound    float64 // the bound now, 1 to max
	inFlight int
	reserved int                  // of them, admitted into the reserve
	held     map[string]int       // slots in flight by organization
	queues   map[string][]*waiter // waiting placements by organization, oldest first
	turn     []string             // the organizations with waiters, next served first
	waiting  int
	estimate time.Duration // a placement's recent time, a moving average
	lastCut  time.Time
}

// waiter is a placement waiting for a slot; ready is closed when it has one.
type waiter struct {
	org     string
	ready   chan struct{}
	granted bool
}

// New admits n placements at once at most, each within budget (Budget
// when zero); n <= 0 admits any number (nil gate).
func New(n int, budget time.Duration) *Gate {
	if n <= 0 {
		return nil
	}
	boundGauge.Set(float64(n))
	return &Gate{max: n, budget: cmp.Or(budget, Budget), now: time.Now, bound: float64(n),
		held: map[string]int{}, queues: map[string][]*waiter{}}
}

// Enter takes a slot for a placement of org, waiting for one while the
// placement can still be made within the gate's budget (and ctx lasts); done frees
// it once the placement is over. Not ok: the replica cannot place it in
// time, and nothing must be placed. A nil gate admits everything.
func (g *Gate) Enter(ctx context.Context, org string) (done func(), ok bool) {
	if g == nil {
		return func() {}, true
	}
	if g.newcomer(org) {
		started := time.Now()
		return sync.OnceFunc(func() { g.releaseReserved(org, time.Since(started)) }), true
	}
	w, wait, ok := g.arrive(org)
	if ok && w != nil {
		ok = g.await(ctx, w, wait)
	}
	if !ok {
		refused.Inc()
		return nil, false
	}
	started := time.Now()
	return sync.OnceFunc(func() { g.release(org, time.Since(started)) }), true
}

// newcomer admits at once, into the reserve, a placement of an
// organization with nothing in flight when every slot under the bound is
// taken. The reserve is counted apart from the bound, so that a bound cut
// below the placements in flight does not close it.
func (g *Gate) newcomer(org string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held[org] > 0 || g.inFlight-g.reserved < g.limit() || g.reserved >= g.reserve() {
		return false
	}
	g.admit(org)
	g.reserved++
	return true
}

// releaseReserved is release for a placement admitted into the reserve.
func (g *Gate) releaseReserved(org string, took time.Duration) {
	g.mu.Lock()
	g.reserved--
	g.mu.Unlock()
	g.release(org, took)
}

// arrive admits a placement of org at once (no waiter), queues it with how
// long it may wait, or refuses it (not ok).
func (g *Gate) arrive(org string) (*waiter, time.Duration, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inFlight-g.reserved < g.limit() && g.waiting == 0 {
		g.admit(org)
		return nil, 0, true
	}
	wait := g.budget - g.estimate
	if g.slotIn(g.ahead(org)) > wait {
		return nil, 0, false
	}
	w := &waiter{org: org, ready: make(chan struct{})}
	if len(g.queues[org]) == 0 {
		g.turn = append(g.turn, org)
	}
	g.queues[org] = append(g.queues[org], w)
	g.waiting++
	return w, wait, true
}

// ahead is how many placements a new one of org expects before it: its
// own organization's waiting ones if it is below its fair share (it is
// served before the others), everyone's otherwise.
func (g *Gate) ahead(org string) int {
	if g.held[org] < g.fairShare(org) {
		return len(g.queues[org])
	}
	return g.waiting
}

// slotIn is about how long a placement waits for a slot with ahead
// placements before it: the slots free at bound per placement's time.
func (g *Gate) slotIn(ahead int) time.Duration {
	return time.Duration(float64(ahead+1) * float64(g.estimate) / float64(g.limit()))
}

// await waits for w's slot at most wait; false if none came.
func (g *Gate) await(ctx context.Context, w *waiter, wait time.Duration) bool {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-w.ready:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return g.leave(w)
}

// leave takes w out of the queue; true if its slot came meanwhile.
func (g *Gate) leave(w *waiter) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if w.granted {
		return true
	}
	q := g.queues[w.org]
	for i := range q {
		if q[i] == w {
			q = append(q[:i], q[i+1:]...)
			break
		}
	}
	g.waiting--
	g.setQueue(w.org, q)
	return false
}

// setQueue stores org's queue, dropping org from its turn once empty.
func (g *Gate) setQueue(org string, q []*waiter) {
	if len(q) > 0 {
		g.queues[org] = q
		return
	}
	delete(g.queues, org)
	for i, o := range g.turn {
		if o == org {
			g.turn = append(g.turn[:i], g.turn[i+1:]...)
			return
		}
	}
}

// limit is the bound now, in whole slots.
func (g *Gate) limit() int { return int(g.bound) }

// reserve is how many placements of organizations with nothing in flight
// are admitted above the bound: a quarter of the bound, at least one.
func (g *Gate) reserve() int { return max(1, g.limit()/4) }

// fairShare is the slots org may hold while others wait: the bound over
// the organizations placing or waiting (org among them), at least one.
func (g *Gate) fairShare(org string) int {
	active := len(g.held)
	for o := range g.queues {
		if g.held[o] == 0 {
			active++
		}
	}
	if g.held[org] == 0 && len(g.queues[org]) == 0 {
		active++
	}
	return max(1, int(math.Ceil(float64(g.limit())/float64(max(1, active)))))
}

func (g *Gate) admit(org string) {
	g.held[org]++
	g.inFlight++
}

// release frees a slot of org held for took, adapts the bound and the
// estimate to it, and hands the free slots to the waiters.
func (g *Gate) release(org string, took time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inFlight--
	if g.held[org]--; g.held[org] <= 0 {
		delete(g.held, org)
	}
	g.adapt(took)
	g.grant()
}

// adapt moves the estimate, an average of the placements' times weighted
// 1/8 to the newest (TCP's smoothed round-trip time), and the bound by it
// (see Gate).
func (g *Gate) adapt(took time.Duration) {
	if g.estimate == 0 {
		g.estimate = took
	} else {
		g.estimate += (took - g.estimate) / 8
	}
	now := g.now()
	switch {
	case g.estimate <= Target:
		g.bound = min(float64(g.max), g.bound+1/g.bound)
	case now.Sub(g.lastCut) >= Target:
		g.bound = max(1, g.bound/2)
		g.lastCut = now
	}
	boundGauge.Set(math.Floor(g.bound))
}

// grant hands free slots to waiters: the first organization in turn below
// its fair share, else the first in turn; the one served goes to the back.
func (g *Gate) grant() {
	for g.inFlight-g.reserved < g.limit() && g.waiting > 0 {
		i := 0
		for j, org := range g.turn {
			if g.held[org] < g.fairShare(org) {
				i = j
				break
			}
		}
		org := g.turn[i]
		q := g.queues[org]
		w := q[0]
		g.turn = append(append(g.turn[:i:i], g.turn[i+1:]...), org)
		g.setQueue(org, q[1:])
		g.waiting--
		g.admit(org)
		w.granted = true
		close(w.ready)
	}
}
