package gate

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Throttle reports a key at most once per interval, and always reports its
// last change (trailing edge), so a trunk's status follows its usage
// without a write per call.
type Throttle struct {
	every  time.Duration
	report func(types.NamespacedName)

	mu      sync.Mutex
	pending map[types.NamespacedName]bool
}

// NewThrottle returns a Throttle calling report at most every interval
// per key (two seconds when every is zero); a nil report reports nothing.
func NewThrottle(every time.Duration, report func(types.NamespacedName)) *Throttle {
	if every <= 0 {
		every = 2 * time.Second
	}
	return &Throttle{every: every, report: report, pending: map[types.NamespacedName]bool{}}
}

// Touch notes that key changed.
func (t *Throttle) Touch(key types.NamespacedName) {
	if t.report == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pending[key] {
		return
	}
	t.pending[key] = true
	time.AfterFunc(t.every, func() {
		t.mu.Lock()
		delete(t.pending, key)
		t.mu.Unlock()
		t.report(key)
	})
}
