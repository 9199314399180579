package gate

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestSecondLegCountsAsACall(t *testing.T) {
	var wk wakes
	g := New(wk.wake, time.Now)
	q := waiters(3)
	lim := Limits{MaxConcurrent: 2}
	if w := g.Admit(trunk, lim, q[0], q); w != nil {
		t.Fatalf("first call waits: %v", w)
	}
	release, err := g.SecondLeg(context.Background(), trunk, q[0].Call)
	if err != nil {
		t.Fatalf("second leg refused on a trunk with a free place: %v", err)
	}
	if active, _ := g.Usage(trunk); active != 2 {
		t.Fatalf("active = %d with a call and its second leg, want 2", active)
	}
	// The trunk is full: the next call waits, another second leg is refused.
	if w := g.Admit(trunk, lim, q[1], q[1:]); w == nil {
		t.Fatal("a call went out on a trunk full with a call and its second leg")
	}
	if _, err := g.SecondLeg(context.Background(), trunk, q[0].Call); err == nil ||
		!strings.Contains(err.Error(), "maxConcurrentCalls") {
		t.Fatalf("second leg on a full trunk: err = %v, want maxConcurrentCalls", err)
	}
	release()
	release() // twice is harmless
	if active, _ := g.Usage(trunk); active != 1 {
		t.Fatalf("active = %d after the second leg ended, want 1", active)
	}
	if w := g.Admit(trunk, lim, q[1], q[1:]); w != nil {
		t.Fatalf("the next call still waits once the second leg ended: %v", w)
	}
}

func TestSecondLegIsPaced(t *testing.T) {
	g := New(func(types.NamespacedName) {}, time.Now)
	q := waiters(1)
	if w := g.Admit(trunk, Limits{CallsPerSecond: 1}, q[0], q); w != nil {
		t.Fatalf("first call waits: %v", w)
	}
	// Within the pacing interval the second leg waits, and a context that
	// ends first gives up.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.SecondLeg(ctx, trunk, q[0].Call); err == nil {
		t.Fatal("a second leg went out within the pacing interval")
	}
	release, err := g.SecondLeg(context.Background(), trunk, q[0].Call)
	if err != nil {
		t.Fatalf("paced second leg: %v", err)
	}
	defer release()
	if active, _ := g.Usage(trunk); active != 2 {
		t.Fatalf("active = %d, want 2", active)
	}
}
