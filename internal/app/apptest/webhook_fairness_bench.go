package apptest

import (
	"testing"
	"time"
)

// The noisy neighbour, measured (`make bench-fairness`): organization B at
// its endpoint limit, 20 endpoints all pointing at a receiver that answers
// after 9.5 s, places 30 calls (1,800 deliveries); meanwhile organization A
// places calls at a steady rate to one fast receiver. The benchmark reports
// the latency of A's call.started and call.ended events, from the state
// change (the call object's started_at, ended_at) to A's receiver.
const (
	FairnessNoisyEndpoints = 20
	FairnessNoisyCalls     = 30
	FairnessQuietRate      = 5 // calls per second
	FairnessQuietSeconds   = 30
)

func WaitFor(b *testing.B, limit time.Duration, what string, done func() bool) {
	b.Helper()
	deadline := time.Now().Add(limit)
	for !done() {
		if time.Now().After(deadline) {
			b.Fatalf("timed out after %s waiting until %s", limit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
