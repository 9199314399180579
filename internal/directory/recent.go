package directory

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// recentWindow is how long an endpoint this process created may be read
// live while the cache has not seen it: the informer delivers it within
// milliseconds, seconds when the API server is loaded.
const recentWindow = 10 * time.Second

// recentEndpoints remembers the endpoints this process created within
// recentWindow, by id. It holds no more than the creates of that window.
// The zero value is ready to use.
type recentEndpoints struct {
	mu    sync.Mutex
	byID  map[string]recentEndpoint
	order []string // ids, oldest first
}

type recentEndpoint struct {
	key types.NamespacedName
	at  time.Time
}

func (r *recentEndpoints) add(id string, key types.NamespacedName, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.expire(now)
	if r.byID == nil {
		r.byID = map[string]recentEndpoint{}
	}
	r.byID[id] = recentEndpoint{key: key, at: now}
	r.order = append(r.order, id)
}

func (r *recentEndpoints) lookup(id string, now time.Time) (types.NamespacedName, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.expire(now)
	e, ok := r.byID[id]
	return e.key, ok
}

// expire drops the entries older than recentWindow; r.mu is held.
func (r *recentEndpoints) expire(now time.Time) {
	for len(r.order) > 0 {
		e, ok := r.byID[r.order[0]]
		if ok && now.Sub(e.at) < recentWindow {
			return
		}
		delete(r.byID, r.order[0])
		r.order = r.order[1:]
	}
}
