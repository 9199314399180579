package workers_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/switchboard-dev/switchboard/internal/workers"
)

// drain runs a Drainer over a worker with left calls to finish; finish
// ends one. It returns when Drain returns.
func drain(t *testing.T, timeout time.Duration, left int64, step func(clk *clocktesting.FakeClock, left *atomic.Int64)) *workers.Heartbeat {
	t.Helper()
	clk := clocktesting.NewFakeClock(start)
	hb := &workers.Heartbeat{Name: "w", Clock: clk}
	var n atomic.Int64
	n.Store(left)
	d := &workers.Drainer{Heartbeat: hb, Timeout: timeout, Poll: 250 * time.Millisecond, Clock: clk, Log: logr.Discard(),
		Unprocessed: func(context.Context) (int, error) { return int(n.Load()), nil }}
	done := make(chan struct{})
	go func() { d.Drain(context.Background()); close(done) }()
	for {
		select {
		case <-done:
			return hb
		default:
		}
		if clk.HasWaiters() {
			step(clk, &n)
		}
		time.Sleep(time.Millisecond) // the drainer's goroutine runs; the fake clock decides what it sees
	}
}

// A draining worker is marked so at once and waits for its last call.
func TestDrainWaitsForTheCalls(t *testing.T) {
	var polls int
	hb := drain(t, time.Hour, 3, func(clk *clocktesting.FakeClock, left *atomic.Int64) {
		polls++
		left.Add(-1)
		clk.Step(250 * time.Millisecond)
	})
	if !hb.Draining() || polls != 3 {
		t.Fatalf("draining %v after %d polls; want draining, 3 polls (one per call ended)", hb.Draining(), polls)
	}
}

// The drain gives up at its timeout: the calls left are hung up.
func TestDrainStopsAtItsTimeout(t *testing.T) {
	var waited time.Duration
	drain(t, 10*time.Second, 1, func(clk *clocktesting.FakeClock, _ *atomic.Int64) {
		waited += time.Second
		clk.Step(time.Second)
	})
	if waited < 10*time.Second || waited > 11*time.Second {
		t.Fatalf("gave up after %s, want at its 10s timeout", waited)
	}
}
