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

// countLag is how long after its assignment a call may still be missing
// from the load its worker's Lease reports: the label's patch, the
// worker's watch of it, and the two clocks' skew. A pick stays counted
// until a renewal at least this much later.
const countLag = time.Second

// Pool assigns calls to workers: the least loaded, by share of its
// capacity, among the live ones that have room and are not draining.
// It is safe for concurrent use: each pick reserves its place at once.
type Pool struct {
	// Reader lists the workers' Leases (the manager's cache).
	Reader    client.Reader
	Namespace string
	Clock     clock.PassiveClock

	mu sync.Mutex
	// picked holds, per worker, when each call assigned here was picked,
	// until the worker's Lease counts it: without them, a burst between
	// two renewals would all go to the worker that looked least loaded
	// at the first, and concurrent assignments would overfill it.
	picked map[string][]time.Time
}

// Reservation is one pick: a place in a worker, held until its Lease
// counts the call or the assignment is given up (Release).
type Reservation struct {
	Worker string
	at     time.Time
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
	r, err := p.Reserve(ctx)
	return r.Worker, err
}

// Reserve is Pick for an assignment that may fail after it: Release gives
// the place back.
func (p *Pool) Reserve(ctx context.Context) (Reservation, error) {
	workers, err := p.Workers(ctx)
	if err != nil {
		return Reservation{}, err
	}
	now := p.Clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.picked == nil {
		p.picked = map[string][]time.Time{}
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
		return Reservation{}, ErrNoCapacity
	}
	p.picked[best] = append(p.picked[best], now)
	return Reservation{Worker: best, at: now}, nil
}

// Release gives back r's place: its call was not assigned after all.
func (p *Pool) Release(r Reservation) {
	p.mu.Lock()
	defer p.mu.Unlock()
	picks := p.picked[r.Worker]
	if i := slices.Index(picks, r.at); i >= 0 {
		p.picked[r.Worker] = slices.Delete(picks, i, i+1)
	}
}

// pendingFor is the calls assigned to w here that its Lease may not count
// yet: those picked less than countLag before its last renewal, or since.
func (p *Pool) pendingFor(w Worker) int {
	picks := p.picked[w.Name]
	counted := w.RenewedAt.Add(-countLag)
	i := 0
	for i < len(picks) && picks[i].Before(counted) {
		i++
	}
	if i > 0 {
		picks = slices.Delete(picks, 0, i)
		p.picked[w.Name] = picks
	}
	return len(picks)
}
