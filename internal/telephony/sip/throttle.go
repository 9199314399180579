package sip

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// throttle reports a key at most once per interval, and always reports its
// last change (trailing edge), so a trunk's status follows its usage
// without a write per call.
type throttle struct {
	every  time.Duration
	report func(types.NamespacedName)

	mu      sync.Mutex
	pending map[types.NamespacedName]bool
}

func newThrottle(every time.Duration, report func(types.NamespacedName)) *throttle {
	if every <= 0 {
		every = 2 * time.Second
	}
	return &throttle{every: every, report: report, pending: map[types.NamespacedName]bool{}}
}

func (t *throttle) touch(key types.NamespacedName) {
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
