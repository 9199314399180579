package campaigns

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// writeMemory is how long this process remembers a campaign it changed:
// far longer than an informer lags behind the apiserver, short enough that
// the memory stays small.
const writeMemory = time.Minute

// maxWrites bounds the campaigns remembered; past it the oldest go first.
const maxWrites = 4096

// writes remembers the generation of each campaign this process created
// or changed a moment ago. A read of one the cache has at an older
// generation (or not at all) is answered from the apiserver instead, so a
// GET right after a pause says paused however far the cache lags. Spec
// changes bump the generation and status writes do not, so a cached copy
// at the remembered generation or later holds the write.
type writes struct {
	mu   sync.Mutex
	gens map[types.NamespacedName]written
}

type written struct {
	generation int64
	at         time.Time
}

// remember records that the campaign key is at generation at least.
func (w *writes) remember(key types.NamespacedName, generation int64, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.gens == nil {
		w.gens = map[types.NamespacedName]written{}
	}
	if len(w.gens) >= maxWrites {
		w.forgetOldest(now)
	}
	if prev, ok := w.gens[key]; !ok || prev.generation <= generation {
		w.gens[key] = written{generation: generation, at: now}
	}
}

// forgetOldest drops what has expired, or else the oldest entry.
func (w *writes) forgetOldest(now time.Time) {
	var oldest types.NamespacedName
	var oldestAt time.Time
	for k, v := range w.gens {
		if now.Sub(v.at) > writeMemory {
			delete(w.gens, k)
			continue
		}
		if oldestAt.IsZero() || v.at.Before(oldestAt) {
			oldest, oldestAt = k, v.at
		}
	}
	if len(w.gens) >= maxWrites {
		delete(w.gens, oldest)
	}
}

// stale reports whether a cached copy of key at generation misses a write
// of this process. A copy that has caught up ends the memory of it.
func (w *writes) stale(key types.NamespacedName, generation int64, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	v, ok := w.gens[key]
	switch {
	case !ok:
		return false
	case generation >= v.generation || now.Sub(v.at) > writeMemory:
		delete(w.gens, key)
		return false
	}
	return true
}

// missing returns the campaigns of namespace written a moment ago that are
// not in seen: created, and not in the cache yet.
func (w *writes) missing(namespace string, seen map[string]bool, now time.Time) []types.NamespacedName {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []types.NamespacedName
	for k, v := range w.gens {
		if k.Namespace == namespace && !seen[k.Name] && now.Sub(v.at) <= writeMemory {
			out = append(out, k)
		}
	}
	return out
}
