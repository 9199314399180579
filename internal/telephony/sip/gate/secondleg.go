package gate

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// SecondLeg takes a place on trunk for the second call of call's transfer
// (a bridged or warm transfer dials the person on the same trunk): it
// counts in maxConcurrentCalls while it lasts and is paced by
// callsPerSecond like any call. It goes ahead of the queued calls, since
// its callee is already on the line; a trunk at maxConcurrentCalls refuses
// it at once (the callee would otherwise wait on hold behind a queue).
// Pacing is waited out, within ctx. The release frees the place; calling
// it again does nothing.
func (g *Gate) SecondLeg(ctx context.Context, trunk, call types.NamespacedName) (func(), error) {
	leg := types.NamespacedName{Namespace: call.Namespace, Name: call.Name + " (transfer)"}
	for {
		wait, err := g.takeSecondLeg(trunk, leg)
		if err != nil {
			return nil, err
		}
		if wait <= 0 {
			return func() { g.Release(trunk, leg) }, nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// takeSecondLeg marks leg active on trunk, or says how long pacing wants
// it to wait, or refuses it when the trunk is full.
func (g *Gate) takeSecondLeg(trunk, leg types.NamespacedName) (time.Duration, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	l := g.lane(trunk)
	if l.limits.MaxConcurrent > 0 && len(l.active) >= l.limits.MaxConcurrent {
		return 0, fmt.Errorf("trunk %s is at maxConcurrentCalls (%d calls in progress)", trunk.Name, len(l.active))
	}
	if l.active[leg] {
		return 0, fmt.Errorf("a transfer's second call is already in progress (%s)", leg.Name)
	}
	now := g.now()
	if l.limits.CallsPerSecond > 0 {
		if now.Before(l.next) {
			return l.next.Sub(now), nil
		}
		l.next = later(now, l.next).Add(time.Second / time.Duration(l.limits.CallsPerSecond))
	}
	l.active[leg] = true
	return 0, nil
}
