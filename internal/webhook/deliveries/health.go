package deliveries

import (
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// Observation is the latest word on an endpoint's deliveries.
type Observation struct {
	At     time.Time
	Result string // HTTP status code or connection error
	OK     bool
	// FailingSince is the first failure after the last success (zero while
	// deliveries succeed).
	FailingSince time.Time
}

// Health collects attempt results per endpoint, so that the endpoint's
// status is written by its own reconciler, at a bounded rate, rather than
// by every delivery. It is derived state: after a restart it starts empty
// and the endpoint's status keeps the last written values until the next
// attempt.
type Health struct {
	mu      sync.Mutex
	last    map[types.NamespacedName]Observation
	changes chan event.GenericEvent
}

// changeBuffer holds observations not yet picked up by the endpoint
// reconciler; past it, one is dropped and the endpoint reports it at its
// next observation or recheck.
const changeBuffer = 1024

// NewHealth returns an empty tracker.
func NewHealth() *Health {
	return &Health{last: map[types.NamespacedName]Observation{}, changes: make(chan event.GenericEvent, changeBuffer)}
}

// Changes names each endpoint that has a new observation, for its
// reconciler to report (a controller-runtime channel source).
func (h *Health) Changes() <-chan event.GenericEvent { return h.changes }

// Observe records an attempt's result for endpoint. Results older than the
// latest one are ignored (attempts run concurrently).
func (h *Health) Observe(endpoint types.NamespacedName, at time.Time, ok bool, result string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	prev, seen := h.last[endpoint]
	if seen && at.Before(prev.At) {
		return
	}
	obs := Observation{At: at, Result: result, OK: ok}
	if !ok {
		obs.FailingSince = prev.FailingSince
		if obs.FailingSince.IsZero() {
			obs.FailingSince = at
		}
	}
	h.last[endpoint] = obs
	select {
	case h.changes <- event.GenericEvent{Object: &switchboardv1.WebhookEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: endpoint.Namespace, Name: endpoint.Name}}}:
	default:
	}
}

// Latest returns what is known about endpoint.
func (h *Health) Latest(endpoint types.NamespacedName) (Observation, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	obs, ok := h.last[endpoint]
	return obs, ok
}

// Seed starts an endpoint's failure streak from its persisted status, so
// a restart does not reset how long it has been failing.
func (h *Health) Seed(endpoint types.NamespacedName, failingSince time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.last[endpoint]; !ok && !failingSince.IsZero() {
		h.last[endpoint] = Observation{At: failingSince, OK: false, FailingSince: failingSince}
	}
}

// Forget drops a deleted endpoint.
func (h *Health) Forget(endpoint types.NamespacedName) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.last, endpoint)
}
