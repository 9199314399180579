// Package quota holds each organization to its limits on placing calls:
// how many calls it may create per second, and how many it may have queued
// or live at once. Limits are annotations on the organization's namespace,
// set by the platform team that owns it; without them a call is never
// refused for a limit.
package quota

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// The namespace annotations that set an organization's limits.
const (
	// CreateRateAnnotation: calls created per second (a decimal number,
	// for example "5" or "0.5").
	CreateRateAnnotation = "quota.switchboard.dev/create-rate"
	// CreateBurstAnnotation: calls that may be created at once above the
	// rate (an integer; default: twice the rate, at least 1).
	CreateBurstAnnotation = "quota.switchboard.dev/create-burst"
	// ActiveCallsAnnotation: calls queued or in progress at once (an
	// integer).
	ActiveCallsAnnotation = "quota.switchboard.dev/active-calls"
)

// LivePhaseIndex indexes Calls that are queued or in progress by their
// phase ("queued", "in_progress"); final Calls are not in it.
const LivePhaseIndex = "status.livePhase"

// LivePhase is the LivePhaseIndex's function.
func LivePhase(obj client.Object) []string {
	c, ok := obj.(*switchboardv1.Call)
	if !ok || c.CurrentPhase().Final() {
		return nil
	}
	return []string{string(c.CurrentPhase())}
}

// cacheLagBound is far longer than the informer cache takes to show a
// created Call.
const cacheLagBound = time.Minute

// Limits are one organization's. Zero means unlimited.
type Limits struct {
	CreateRate  float64
	CreateBurst int
	ActiveCalls int
}

// limitsOf reads ns's annotations; a value that is not a valid number is
// ignored, as if absent.
func limitsOf(ns *corev1.Namespace) Limits {
	var l Limits
	if v, err := strconv.ParseFloat(ns.Annotations[CreateRateAnnotation], 64); err == nil && v > 0 && !math.IsInf(v, 0) {
		l.CreateRate = v
		l.CreateBurst = max(1, int(math.Ceil(2*v)))
		if b, err := strconv.Atoi(ns.Annotations[CreateBurstAnnotation]); err == nil && b > 0 {
			l.CreateBurst = b
		}
	}
	if v, err := strconv.Atoi(ns.Annotations[ActiveCallsAnnotation]); err == nil && v > 0 {
		l.ActiveCalls = v
	}
	return l
}

// Exceeded is a refusal: Code is the REST API's error_code, RetryAfter
// when trying again may succeed.
type Exceeded struct {
	Code       string
	Message    string
	RetryAfter time.Duration
}

func (e *Exceeded) Error() string { return e.Message }

// The error codes of Exceeded.
const (
	CodeRateLimited      = "rate_limited"
	CodeConcurrencyLimit = "concurrency_limit_reached"
)

// Usage is an organization's calls now and its limits.
type Usage struct {
	Queued, Live int
	Limits       Limits
}

// Admission decides whether an organization may place one more call now.
// It counts on this process: with several replicas serving the API, each
// admits up to the create rate, and a burst can pass the active-calls limit
// by the calls being created at that moment on other replicas. On one
// replica the limit holds exactly: an admitted call counts from its
// admission, before the cache shows it.
type Admission struct {
	// Cache reads Namespaces and Calls (indexed by LivePhaseIndex).
	Cache client.Reader
	Now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
	// admitted are the calls admitted here that the cache may not show
	// yet, by namespace.
	admitted map[string]*admitted
}

type bucket struct {
	limits  Limits
	limiter *rate.Limiter
}

type admitted struct {
	reserved int                  // admitted, not created yet
	created  map[string]time.Time // created, by Call name, until the cache has them
}

// Ticket is one admitted call. Its holder says what became of it: Placed
// once its Call exists, Release if none was created (or a failed one).
type Ticket struct {
	a  *Admission
	ns string
}

// Placed counts the Call name as active until the cache shows it.
func (t *Ticket) Placed(name string) {
	if t == nil {
		return
	}
	t.a.mu.Lock()
	defer t.a.mu.Unlock()
	ad := t.a.admittedIn(t.ns)
	ad.reserved--
	ad.created[name] = t.a.Now()
}

// Release gives the admission back: no active call came of it.
func (t *Ticket) Release() {
	if t == nil {
		return
	}
	t.a.mu.Lock()
	defer t.a.mu.Unlock()
	t.a.admittedIn(t.ns).reserved--
}

// Admit takes one call from ns's create rate and checks its active calls;
// an *Exceeded says which limit refused it. The ticket (nil when ns has no
// active-calls limit) must be Placed or Released.
func (a *Admission) Admit(ctx context.Context, ns string) (*Ticket, error) {
	limits, err := a.limits(ctx, ns)
	if err != nil {
		return nil, err
	}
	if limits.CreateRate > 0 {
		if wait := a.take(ns, limits); wait > 0 {
			return nil, &Exceeded{Code: CodeRateLimited, RetryAfter: wait, Message: fmt.Sprintf(
				"This organization may create %g calls per second (bursts of %d); retry after the Retry-After header's seconds.",
				limits.CreateRate, limits.CreateBurst)}
		}
	}
	if limits.ActiveCalls == 0 {
		return nil, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	queued, live, err := a.count(ctx, ns)
	if err != nil {
		return nil, err
	}
	if queued+live >= limits.ActiveCalls {
		return nil, &Exceeded{Code: CodeConcurrencyLimit, RetryAfter: 5 * time.Second, Message: fmt.Sprintf(
			"This organization has %d calls queued or in progress, its limit; retry once one has ended.",
			queued+live)}
	}
	a.admittedIn(ns).reserved++
	return &Ticket{a: a, ns: ns}, nil
}

// Usage reports ns's queued and live calls and its limits.
func (a *Admission) Usage(ctx context.Context, ns string) (Usage, error) {
	limits, err := a.limits(ctx, ns)
	if err != nil {
		return Usage{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	queued, live, err := a.count(ctx, ns)
	return Usage{Queued: queued, Live: live, Limits: limits}, err
}

func (a *Admission) limits(ctx context.Context, ns string) (Limits, error) {
	var n corev1.Namespace
	if err := a.Cache.Get(ctx, client.ObjectKey{Name: ns}, &n); err != nil {
		return Limits{}, fmt.Errorf("reading the limits of %s: %w", ns, err)
	}
	return limitsOf(&n), nil
}

// take takes a token from ns's bucket, or says how long until there is
// one. A bucket is replaced when its limits change.
func (a *Admission) take(ns string, limits Limits) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.buckets == nil {
		a.buckets = map[string]*bucket{}
	}
	b := a.buckets[ns]
	if b == nil || b.limits != limits {
		b = &bucket{limits: limits, limiter: rate.NewLimiter(rate.Limit(limits.CreateRate), limits.CreateBurst)}
		a.buckets[ns] = b
	}
	r := b.limiter.ReserveN(a.Now(), 1)
	if delay := r.DelayFrom(a.Now()); delay > 0 {
		r.CancelAt(a.Now())
		return delay
	}
	return 0
}

func (a *Admission) admittedIn(ns string) *admitted {
	if a.admitted == nil {
		a.admitted = map[string]*admitted{}
	}
	ad := a.admitted[ns]
	if ad == nil {
		ad = &admitted{created: map[string]time.Time{}}
		a.admitted[ns] = ad
	}
	return ad
}

// count counts ns's queued and in-progress Calls from the index, without
// copying them, and the calls admitted here that the cache does not show
// yet (as queued). a.mu is held.
func (a *Admission) count(ctx context.Context, ns string) (queued, live int, err error) {
	for phase, n := range map[switchboardv1.CallPhase]*int{switchboardv1.CallQueued: &queued, switchboardv1.CallInProgress: &live} {
		var calls switchboardv1.CallList
		if err := a.Cache.List(ctx, &calls, client.InNamespace(ns), client.MatchingFields{LivePhaseIndex: string(phase)},
			client.UnsafeDisableDeepCopy); err != nil {
			return 0, 0, fmt.Errorf("counting the calls of %s: %w", ns, err)
		}
		*n = len(calls.Items)
	}
	ad := a.admittedIn(ns)
	for name, at := range ad.created {
		err := a.Cache.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &switchboardv1.Call{})
		// Once the cache has it, the index counts it while it is active; a
		// call the cache never showed (deleted at once) is forgotten after
		// cacheLagBound.
		if err == nil || a.Now().Sub(at) > cacheLagBound {
			delete(ad.created, name)
			continue
		}
		queued++
	}
	return queued + ad.reserved, live, nil
}
