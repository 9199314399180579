package placementgate

import (
	"context"
	"testing"
	"time"
)

// fill admits placements of org until one is not admitted at once, and
// says how many were; the one that would wait leaves the queue.
func fill(g *Gate, org string) int {
	n := 0
	for {
		w, _, ok := g.arrive(org)
		if ok && w == nil {
			n++
			continue
		}
		if w != nil {
			g.leave(w)
		}
		return n
	}
}

// queued arrives a placement of org that must wait for a slot.
func queued(t *testing.T, g *Gate, org string) *waiter {
	t.Helper()
	w, _, ok := g.arrive(org)
	if !ok || w == nil {
		t.Fatalf("a placement of %s: admitted %v, waiter %v; want it to wait for a slot", org, ok, w)
	}
	return w
}

func granted(w *waiter) bool {
	select {
	case <-w.ready:
		return true
	default:
		return false
	}
}

// A full gate queues a placement that can be made within the budget, and
// the next slot that frees is its; no bound (n <= 0) is no gate.
func TestGateQueuesWithinBudget(t *testing.T) {
	if New(-1, 0) != nil {
		t.Fatal("a negative bound made a gate")
	}
	var none *Gate
	if done, ok := none.Enter(context.Background(), "acme"); !ok {
		t.Fatal("no gate refused a placement")
	} else {
		done()
	}

	g := New(2, 0)
	if n := fill(g, "acme"); n != 2 {
		t.Fatalf("a fresh gate of 2 admitted %d at once", n)
	}
	w := queued(t, g, "acme")
	g.release("acme", 10*time.Millisecond)
	if !granted(w) || g.inFlight != 2 || g.waiting != 0 {
		t.Fatalf("after a slot freed: granted %v, in flight %d, waiting %d; want the waiter in its slot", granted(w), g.inFlight, g.waiting)
	}
}

// A backlog the replica cannot place within the budget is refused at once,
// not after a wait: with placements taking 80 ms and 2 slots, a slot frees
// every 40 ms, so the 23rd waiting placement has its slot at 920 ms and is
// placed within a budget of 1 s; the 24th would not be. Placements slower
// than the whole budget (the default's here) wait for nothing.
func TestGateRefusesABacklogPastTheBudgetAtOnce(t *testing.T) {
	g := New(2, time.Second)
	fill(g, "acme")
	g.estimate = 80 * time.Millisecond
	var waited int
	for {
		w, wait, ok := g.arrive("acme")
		if !ok {
			break
		}
		if wait != time.Second-g.estimate {
			t.Fatalf("a waiter may wait %v, want the budget less a placement's time, %v", wait, time.Second-g.estimate)
		}
		waited++
		if w == nil || waited > 100 {
			t.Fatalf("the full gate admitted a placement, or queued %d", waited)
		}
	}
	if waited != 23 {
		t.Fatalf("%d placements queued, want 23 (a slot every 40 ms, within the 920 ms left)", waited)
	}

	// Placements slower than the whole budget: nothing waits.
	g = New(2, 0)
	fill(g, "acme")
	g.estimate = Budget + time.Millisecond
	if w, _, ok := g.arrive("acme"); ok || w != nil {
		t.Fatal("with placements slower than the budget, a placement waited for a slot")
	}
}

// While one organization fills the gate, another's first placement is
// admitted at once; its next waits, but is served before the first
// organization's earlier waiters as long as it holds less than its share.
func TestGateSharesSlotsFairly(t *testing.T) {
	g := New(4, 0)
	if n := fill(g, "burst"); n != 4 {
		t.Fatalf("one organization alone took %d slots, want all 4", n)
	}
	b1, b2 := queued(t, g, "burst"), queued(t, g, "burst")

	// The other organization's first call: at once, into the reserve.
	if !g.newcomer("steady") {
		t.Fatal("another organization's first placement was not admitted at once")
	}
	// The reserve of a gate of 4 is one slot: a third organization's first
	// placement now waits.
	if g.newcomer("third") {
		t.Fatal("the reserve took two organizations past the bound of 4")
	}
	g.leave(queued(t, g, "third"))
	s1 := queued(t, g, "steady")

	// The first slot that frees goes to steady (1 of its share of 2),
	// before burst's older waiters.
	g.release("burst", time.Millisecond)
	if !granted(s1) || granted(b1) {
		t.Fatalf("steady granted %v, burst's older waiter %v; want steady first", granted(s1), granted(b1))
	}
	// Then burst, in its order.
	g.release("burst", time.Millisecond)
	if !granted(b1) || granted(b2) {
		t.Fatalf("burst's first waiter %v, second %v; want the first only", granted(b1), granted(b2))
	}
	g.releaseReserved("steady", time.Millisecond) // the reserve's slot frees the reserve only
	if granted(b2) {
		t.Fatal("a slot of the reserve went to an organization with calls in flight")
	}
	g.release("steady", time.Millisecond)
	if !granted(b2) {
		t.Fatal("burst's second waiter was never served")
	}
}

// Two organizations both over their share take the free slots in turn,
// not the one that queued first all of them.
func TestGateServesOrganizationsInTurn(t *testing.T) {
	g := New(2, 0)
	fill(g, "a")
	a1, a2 := queued(t, g, "a"), queued(t, g, "a")
	if !g.newcomer("b") {
		t.Fatal("b's first placement waited")
	}
	b1 := queued(t, g, "b")
	// Both at their share of 1 or over it: the slots go in turn.
	g.release("a", time.Millisecond)
	g.release("a", time.Millisecond)
	if got := []bool{granted(a1), granted(b1), granted(a2)}; !got[0] || !got[1] || got[2] {
		t.Fatalf("granted a1, b1, a2: %v; want a's first and b's before a's second", got)
	}
}

// A placement that gives up (its request ended) leaves the queue: the slot
// that frees later is not kept for it.
func TestGateWaiterThatLeavesHoldsNothing(t *testing.T) {
	g := New(1, 0)
	done, ok := g.Enter(context.Background(), "acme")
	if !ok {
		t.Fatal("an empty gate refused")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, ok := g.Enter(ctx, "acme"); ok {
		t.Fatal("a placement whose request ended was admitted to a full gate")
	}
	done()
	done() // twice frees once
	if g.inFlight != 0 || g.waiting != 0 || len(g.queues) != 0 || len(g.turn) != 0 || len(g.held) != 0 {
		t.Fatalf("left behind: in flight %d, waiting %d, queues %v, turn %v, held %v", g.inFlight, g.waiting, g.queues, g.turn, g.held)
	}
}

// Placements slower than the target on average halve the bound, once per
// target's time, down to one; once they are faster on average, each
// raises it back towards the maximum, a slot per bound's worth of
// placements.
func TestGateAdaptsToCreateLatency(t *testing.T) {
	g := New(8, 0)
	now := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	g.now = func() time.Time { return now }
	releaseAll := func(n int, took time.Duration) {
		for range n {
			g.release("acme", took)
		}
	}
	n := fill(g, "acme")
	if n != 8 {
		t.Fatalf("a fresh gate admitted %d at once, want 8", n)
	}
	releaseAll(n, Target+time.Millisecond) // all slowed by one moment: one cut
	if n = fill(g, "acme"); n != 4 {
		t.Fatalf("after 8 slow placements at once: %d admitted, want 4", n)
	}
	now = now.Add(Target) // the next slow moment
	releaseAll(n, time.Second)
	if n = fill(g, "acme"); n != 2 {
		t.Fatalf("after a second slow moment: %d admitted, want 2", n)
	}
	for range 3 {
		now = now.Add(Target)
		g.release("acme", time.Second)
		n--
		n += fill(g, "acme")
	}
	if n != 1 {
		t.Fatalf("never below one: %d admitted", n)
	}
	// Fast placements: about bound placements per slot added.
	fast := 0
	for n < 8 {
		g.release("acme", time.Millisecond)
		fast++
		n += fill(g, "acme") - 1
		if fast > 100 {
			t.Fatalf("after 100 fast placements %d admitted, want back to 8", n)
		}
	}
	if fast < 20 {
		t.Fatalf("back to 8 after %d fast placements: it should take about 1+2+...+7", fast)
	}
}

// One slow placement among fast ones, the tail every load has, leaves the
// bound as it is: only placements slow on average cut it.
func TestGateKeepsItsBoundThroughALoneSlowPlacement(t *testing.T) {
	g := New(8, 0)
	for range 20 {
		fill(g, "acme")
		g.release("acme", 10*time.Millisecond)
	}
	fill(g, "acme")
	g.release("acme", 400*time.Millisecond)
	if n := fill(g, "acme"); n != 1 {
		t.Fatalf("after one slow placement the full gate admitted %d, want the 1 it freed", n)
	}
	if g.limit() != 8 {
		t.Fatalf("bound %d after one slow placement among fast ones, want 8", g.limit())
	}
}
