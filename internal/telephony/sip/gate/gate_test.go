package gate

import (
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

var trunk = types.NamespacedName{Namespace: "org", Name: "carrier"}

// waiters makes n queued calls, c0 first.
func waiters(n int) []Waiter {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	out := make([]Waiter, n)
	for i := range out {
		out[i] = Waiter{Call: types.NamespacedName{Namespace: "org", Name: string(rune('a' + i))},
			Order: t0.Add(time.Duration(i) * time.Microsecond)}
	}
	return out
}

type wakes struct {
	mu    sync.Mutex
	calls []string
}

func (w *wakes) wake(c types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, c.Name)
}

func (w *wakes) woken() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.calls...)
}

func TestGateUnboundedAdmitsEverything(t *testing.T) {
	g := New(func(types.NamespacedName) {}, time.Now)
	q := waiters(3)
	for i := len(q) - 1; i >= 0; i-- { // even out of order
		if w := g.Admit(trunk, Limits{}, q[i], q); w != nil {
			t.Fatalf("call %s waits on an unbounded trunk: %v", q[i].Call.Name, w)
		}
	}
}

func TestGateMaxConcurrentKeepsOrder(t *testing.T) {
	var wk wakes
	g := New(wk.wake, time.Now)
	q := waiters(4)
	lim := Limits{MaxConcurrent: 2}
	// c (third) asks first: two slots are free but a and b are ahead.
	if w := g.Admit(trunk, lim, q[2], q); w == nil {
		t.Fatal("the third call went out ahead of the first two")
	}
	for _, i := range []int{1, 0} {
		if w := g.Admit(trunk, lim, q[i], q[2:]); w != nil {
			t.Fatalf("call %s waits with a free slot: %v", q[i].Call.Name, w)
		}
	}
	w := g.Admit(trunk, lim, q[2], q[2:])
	if w == nil {
		t.Fatal("a third call went out on a trunk limited to two")
	}
	if active, queued := g.Usage(trunk); active != 2 || queued != 2 {
		t.Errorf("usage = %d active, %d queued; want 2, 2", active, queued)
	}
	// d asks before c: still behind c.
	if g.Admit(trunk, lim, q[3], q[2:]) == nil {
		t.Fatal("the fourth call overtook the third")
	}
	before := len(wk.woken())
	g.Release(trunk, q[0].Call)
	if got := wk.woken()[before:]; len(got) != 1 || got[0] != "c" {
		t.Errorf("a freed slot woke %v, want [c]", got)
	}
	if g.Admit(trunk, lim, q[2], q[2:]) != nil {
		t.Error("the third call still waits after a slot freed")
	}
}

func TestGateDeletedCallDoesNotBlock(t *testing.T) {
	g := New(func(types.NamespacedName) {}, time.Now)
	q := waiters(2)
	lim := Limits{MaxConcurrent: 1}
	if g.Admit(trunk, lim, q[1], q) == nil {
		t.Fatal("b went out ahead of a")
	}
	// a was deleted: the backlog no longer has it.
	if w := g.Admit(trunk, lim, q[1], q[1:]); w != nil {
		t.Fatalf("b still waits for a deleted call: %v", w)
	}
}

func TestGatePacing(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var wk wakes
	g := New(wk.wake, func() time.Time { return now })
	q := waiters(3)
	lim := Limits{CallsPerSecond: 4} // one every 250 ms
	if g.Admit(trunk, lim, q[0], q) != nil {
		t.Fatal("the first call waits on an idle trunk")
	}
	w := g.Admit(trunk, lim, q[1], q[1:])
	if w == nil {
		t.Fatal("two calls went out within 250 ms at 4 calls/s")
	}
	if w.RetryAfter != 250*time.Millisecond {
		t.Errorf("the next call is told to retry after %v, want 250ms", w.RetryAfter)
	}
	if g.Admit(trunk, lim, q[2], q[1:]) == nil {
		t.Fatal("the third call overtook the second")
	}
	now = now.Add(250 * time.Millisecond)
	if w := g.Admit(trunk, lim, q[1], q[1:]); w != nil {
		t.Fatalf("the second call waits after the interval: %v", w)
	}
}

func TestGateRepeatAdmissionIsIdempotent(t *testing.T) {
	g := New(func(types.NamespacedName) {}, time.Now)
	q := waiters(1)
	lim := Limits{MaxConcurrent: 1}
	for range 3 {
		if w := g.Admit(trunk, lim, q[0], nil); w != nil {
			t.Fatalf("the admitted call is refused on a repeat: %v", w)
		}
	}
	if active, _ := g.Usage(trunk); active != 1 {
		t.Errorf("%d active calls, want 1", active)
	}
}
