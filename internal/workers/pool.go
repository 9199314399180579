package workers

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrNoCapacity: no live worker that is not draining has room.
var ErrNoCapacity = errors.New("no call worker has room for another call")

// Pool assigns calls to workers: the least loaded, by share of its
// capacity, among the live ones that have room and are not draining.
type Pool struct {
	// Reader lists the workers' Leases (the manager's cache).
	Reader    client.Reader
	Namespace string
	Clock     clock.PassiveClock

	mu sync.Mutex
	// picked counts the calls assigned here to each worker since its last
	// renewal, which its Lease does not count yet: without them, a burst
	// between two renewals would all go to the worker that looked least
	// loaded at the first.
	picked map[string]picks
}

type picks struct {
	renewedAt time.Time
	n         int
}

// Workers lists the workers, alive or not, by name.
func (p *Pool) Workers(ctx context.Context) ([]Worker, error) {
	var leases coordinationv1.LeaseList
	if err := p.Reader.List(ctx, &leases, client.InNamespace(p.Namespace), client.MatchingLabels{Label: "true"}); err != nil {
		return nil, err
	}
	workers := make([]Worker, 0, len(leases.Items))
	for i := range leases.Items {
		if w, ok := FromLease(&leases.Items[i]); ok {
			workers = append(workers, w)
		}
	}
	slices.SortFunc(workers, func(a, b Worker) int { return strings.Compare(a.Name, b.Name) })
	return workers, nil
}

// Pick assigns one call: it returns the worker that takes it.
func (p *Pool) Pick(ctx context.Context) (string, error) {
	workers, err := p.Workers(ctx)
	if err != nil {
		return "", err
	}
	now := p.Clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.picked == nil {
		p.picked = map[string]picks{}
	}
	best, bestLoad := "", 0.0
	for _, w := range workers {
		if !w.Alive(now) || w.Draining || w.Capacity <= 0 {
			continue
		}
		n := p.pendingFor(w)
		if w.Active+n >= w.Capacity {
			continue
		}
		load := float64(w.Active+n) / float64(w.Capacity)
		if best == "" || load < bestLoad {
			best, bestLoad = w.Name, load
		}
	}
	if best == "" {
		return "", ErrNoCapacity
	}
	pk := p.picked[best]
	pk.n++
	p.picked[best] = pk
	return best, nil
}

// pendingFor is the calls assigned to w here since its last renewal.
func (p *Pool) pendingFor(w Worker) int {
	pk := p.picked[w.Name]
	if !pk.renewedAt.Equal(w.RenewedAt) {
		pk = picks{renewedAt: w.RenewedAt}
		p.picked[w.Name] = pk
	}
	return pk.n
}
