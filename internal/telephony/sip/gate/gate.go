// Package gate admits a SIP trunk's calls in queue order within its limits
// (maxConcurrentCalls, callsPerSecond), and throttles the reports of a
// trunk's usage changing.
package gate

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/switchboard-dev/switchboard/internal/telephony"
)

// Limits are a trunk's capacity; zero means no bound.
type Limits struct {
	MaxConcurrent  int
	CallsPerSecond int
}

// Unbounded reports whether the trunk has no limit at all.
func (l Limits) Unbounded() bool { return l.MaxConcurrent <= 0 && l.CallsPerSecond <= 0 }

// Waiter is a queued call and its place in the queue.
type Waiter struct {
	Call  types.NamespacedName
	Order time.Time
}

// before orders waiters by queue order, then by name (a stable tie-break).
func before(a, b Waiter) int {
	return cmp.Or(a.Order.Compare(b.Order), cmp.Compare(a.Call.Name, b.Call.Name))
}

// fallbackRetry is how soon a waiting call asks again if no wake-up came
// (its predecessor failed before reaching the gate, say).
const fallbackRetry = 5 * time.Second

// Gate admits calls onto trunks in queue order within their limits.
//
// The queue is not stored: each admission is given the trunk's backlog as
// the cache sees it (the queued Calls), so a deleted or refused call never
// blocks the line and the order survives a restart. Only the calls in
// flight are remembered. A waiting call is woken (wake) when its turn may
// have come: a call ended, or the pacing interval passed.
type Gate struct {
	mu    sync.Mutex
	lanes map[types.NamespacedName]*lane // by trunk
	wake  func(call types.NamespacedName)
	now   func() time.Time
}

// lane is one trunk's admission state.
type lane struct {
	limits Limits
	active map[types.NamespacedName]bool
	// queue is the backlog seen at the last admission, in order, without
	// the active calls.
	queue []Waiter
	// next is the earliest start allowed by callsPerSecond.
	next  time.Time
	timer *time.Timer
}

// New returns a Gate that wakes a waiting call through wake, on the clock
// now.
func New(wake func(types.NamespacedName), now func() time.Time) *Gate {
	return &Gate{lanes: map[types.NamespacedName]*lane{}, wake: wake, now: now}
}

func (g *Gate) lane(trunk types.NamespacedName) *lane {
	l := g.lanes[trunk]
	if l == nil {
		l = &lane{active: map[types.NamespacedName]bool{}}
		g.lanes[trunk] = l
	}
	return l
}

// Admit decides whether w may start now on trunk, given the trunk's
// backlog. A call already admitted is admitted again (Dial is idempotent).
func (g *Gate) Admit(trunk types.NamespacedName, lim Limits, w Waiter, backlog []Waiter) *telephony.WaitError {
	g.mu.Lock()
	defer g.mu.Unlock()
	l := g.lane(trunk)
	l.limits = lim
	if l.active[w.Call] {
		return nil
	}
	l.queue = l.queue[:0]
	for _, b := range append(backlog, w) {
		if !l.active[b.Call] && !slices.ContainsFunc(l.queue, func(q Waiter) bool { return q.Call == b.Call }) {
			l.queue = append(l.queue, b)
		}
	}
	slices.SortFunc(l.queue, before)
	pos := slices.IndexFunc(l.queue, func(q Waiter) bool { return q.Call == w.Call })
	now := g.now()
	if lim.Unbounded() || (pos < l.free() && (lim.CallsPerSecond <= 0 || (pos == 0 && !now.Before(l.next)))) {
		l.active[w.Call] = true
		l.queue = slices.Delete(l.queue, pos, pos+1)
		if lim.CallsPerSecond > 0 {
			l.next = later(now, l.next).Add(time.Second / time.Duration(lim.CallsPerSecond))
		}
		g.invite(l, now)
		return nil
	}
	g.invite(l, now)
	return l.waitError(trunk, pos, now)
}

// Release frees call's place on trunk and wakes the next in line.
func (g *Gate) Release(trunk types.NamespacedName, call types.NamespacedName) {
	g.mu.Lock()
	defer g.mu.Unlock()
	l := g.lanes[trunk]
	if l == nil || !l.active[call] {
		return
	}
	delete(l.active, call)
	g.invite(l, g.now())
}

// Usage reports the calls in flight and waiting on trunk.
func (g *Gate) Usage(trunk types.NamespacedName) (active, queued int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if l := g.lanes[trunk]; l != nil {
		return len(l.active), len(l.queue)
	}
	return 0, 0
}

// free is how many more calls may be in flight.
func (l *lane) free() int {
	if l.limits.MaxConcurrent <= 0 {
		return len(l.queue) + 1
	}
	return l.limits.MaxConcurrent - len(l.active)
}

// invite wakes the calls whose turn has come: the first free ones, or
// under pacing the head of the queue once the interval has passed.
func (g *Gate) invite(l *lane, now time.Time) {
	n := min(l.free(), len(l.queue))
	if n <= 0 {
		return
	}
	if l.limits.CallsPerSecond > 0 {
		head := l.queue[0].Call
		if l.timer != nil {
			l.timer.Stop()
		}
		l.timer = time.AfterFunc(max(l.next.Sub(now), 0), func() { g.wake(head) })
		return
	}
	for _, w := range l.queue[:n] {
		g.wake(w.Call)
	}
}

func (l *lane) waitError(trunk types.NamespacedName, pos int, now time.Time) *telephony.WaitError {
	ahead := ""
	if pos > 0 {
		ahead = fmt.Sprintf("; %d queued ahead", pos)
	}
	if l.free() <= 0 {
		return &telephony.WaitError{RetryAfter: fallbackRetry, Reason: fmt.Sprintf(
			"trunk %s is at maxConcurrentCalls (%d calls in progress)%s", trunk.Name, len(l.active), ahead)}
	}
	retry := fallbackRetry
	if pos == 0 {
		retry = max(l.next.Sub(now), time.Millisecond)
	}
	return &telephony.WaitError{RetryAfter: retry, Reason: fmt.Sprintf(
		"trunk %s paces calls at %d per second%s", trunk.Name, l.limits.CallsPerSecond, ahead)}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
