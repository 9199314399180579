package quota

import (
	"fmt"
	"sync"
	"time"
)

// ReadsRetryAfter is what a refused read is told to wait: reads of calls
// take milliseconds to seconds, so a slot frees soon.
const ReadsRetryAfter = time.Second

// Reads bounds the reads of calls (lists, dashboard overviews) that one
// organization has in progress at once on this process, so that one key's
// parallel reads cannot take the memory and database connections every
// organization's API shares. It refuses rather than queues: a queued read
// would hold its connection and buffers while it waits.
type Reads struct {
	// PerOrganization is the bound; 0 or less: no bound.
	PerOrganization int

	mu     sync.Mutex
	active map[string]int
}

// Begin takes a read slot of ns, or says it has none free; release gives
// the slot back. A nil Reads bounds nothing.
func (r *Reads) Begin(ns string) (release func(), refused *Exceeded) {
	if r == nil || r.PerOrganization <= 0 {
		return func() {}, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.active[ns] >= r.PerOrganization {
		return nil, &Exceeded{Code: CodeRateLimited, RetryAfter: ReadsRetryAfter, Message: fmt.Sprintf(
			"This organization has %d reads of calls (lists, overviews) in progress, its limit; "+
				"retry after the Retry-After header's seconds.", r.PerOrganization)}
	}
	if r.active == nil {
		r.active = map[string]int{}
	}
	r.active[ns]++
	var once sync.Once
	return func() { once.Do(func() { r.end(ns) }) }, nil
}

func (r *Reads) end(ns string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.active[ns]--; r.active[ns] == 0 {
		delete(r.active, ns)
	}
}
