// Package quota holds each organization to its limits: how many calls it
// may create per second, how many it may have queued or live at once, and
// how many webhook endpoints it may have. The defaults are the binary's
// flags (--quota-*); annotations on an organization's namespace, set by the
// platform team that owns it, change them for that organization.
package quota

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/shard"
	"github.com/switchboard-dev/switchboard/internal/workers"
)

// The namespace annotations that change an organization's limits. Each
// takes a number, or "unlimited".
const (
	// CreateRateAnnotation: calls created per second (a decimal number,
	// for example "5" or "0.5").
	CreateRateAnnotation = "quota.switchboard.dev/create-rate"
	// CreateBurstAnnotation: calls that may be created at once above the
	// rate (an integer; default: twice an annotated rate, at least 1, or
	// the default burst with the default rate).
	CreateBurstAnnotation = "quota.switchboard.dev/create-burst"
	// ActiveCallsAnnotation: calls queued or in progress at once (an
	// integer).
	ActiveCallsAnnotation = "quota.switchboard.dev/active-calls"
	// WebhookEndpointsAnnotation: webhook endpoints (an integer).
	WebhookEndpointsAnnotation = "quota.switchboard.dev/webhook-endpoints"
)

// Unlimited is the annotation value that lifts a limit.
const Unlimited = "unlimited"

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
	CreateRate       float64
	CreateBurst      int
	ActiveCalls      int
	WebhookEndpoints int
}

// Defaults are the limits of the binary's flags: 20 calls per second in
// bursts of 40, 500 calls queued or live, 20 webhook endpoints.
var Defaults = Limits{CreateRate: 20, CreateBurst: 40, ActiveCalls: 500, WebhookEndpoints: 20}

// BindFlags binds the limits of organizations without annotations to fs,
// each defaulting to its value in l (Defaults for the binary).
func (l *Limits) BindFlags(fs *flag.FlagSet) {
	fs.Float64Var(&l.CreateRate, "quota-create-rate", l.CreateRate, "Calls an organization may create per second (0: unlimited; default unlimited with --dev). The namespace annotation "+CreateRateAnnotation+" changes it per organization.")
	fs.IntVar(&l.CreateBurst, "quota-create-burst", l.CreateBurst, "Calls an organization may create at once above its rate (default unlimited with --dev). Annotation "+CreateBurstAnnotation+".")
	fs.IntVar(&l.ActiveCalls, "quota-active-calls", l.ActiveCalls, "Calls an organization may have queued or in progress at once (0: unlimited; default unlimited with --dev). Annotation "+ActiveCallsAnnotation+".")
	fs.IntVar(&l.WebhookEndpoints, "quota-webhook-endpoints", l.WebhookEndpoints, "Webhook endpoints an organization may have (0: unlimited). Annotation "+WebhookEndpointsAnnotation+".")
}

// Validate refuses limits that are not finite numbers of at least 0 (0 is
// a real value here: unlimited).
func (l Limits) Validate() error {
	if l.CreateRate < 0 || math.IsNaN(l.CreateRate) || math.IsInf(l.CreateRate, 0) || l.CreateBurst < 0 ||
		l.ActiveCalls < 0 || l.WebhookEndpoints < 0 {
		return errors.New("--quota-create-rate, --quota-create-burst, --quota-active-calls and --quota-webhook-endpoints " +
			"take a finite number, at least 0 (0: unlimited)")
	}
	return nil
}

// limitsOf applies ns's annotations to the defaults. A value that is not a
// valid number is ignored, as if absent.
func limitsOf(ns *corev1.Namespace, defaults Limits) Limits {
	l := defaults
	a := ns.Annotations
	if v, ok := parseRate(a[CreateRateAnnotation]); ok {
		l.CreateRate, l.CreateBurst = v, max(1, int(math.Ceil(2*v)))
	}
	if v, ok := parseCount(a[CreateBurstAnnotation]); ok && v > 0 {
		l.CreateBurst = v
	}
	if l.CreateRate == 0 {
		l.CreateBurst = 0
	} else if l.CreateBurst == 0 {
		l.CreateBurst = max(1, int(math.Ceil(2*l.CreateRate)))
	}
	if v, ok := parseCount(a[ActiveCallsAnnotation]); ok {
		l.ActiveCalls = v
	}
	if v, ok := parseCount(a[WebhookEndpointsAnnotation]); ok {
		l.WebhookEndpoints = v
	}
	return l
}

// parseRate reads a positive finite rate; "unlimited" is 0.
func parseRate(s string) (float64, bool) {
	if strings.TrimSpace(s) == Unlimited {
		return 0, true
	}
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil && v > 0 && !math.IsInf(v, 0)
}

// parseCount reads a positive integer; "unlimited" is 0.
func parseCount(s string) (int, bool) {
	if strings.TrimSpace(s) == Unlimited {
		return 0, true
	}
	v, err := strconv.Atoi(s)
	return v, err == nil && v > 0
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
	CodeEndpointLimit    = "webhook_endpoint_limit_reached"
)

// Usage is an organization's calls now and its limits.
type Usage struct {
	Queued, Live int
	Limits       Limits
}

// Admission decides whether an organization may place one more call, or
// declare one more webhook endpoint, now. On one replica the limits hold
// exactly: an admitted call or endpoint counts from its admission, before
// the cache shows it.
//
// With several replicas, each admits up to the create rate, and counts an
// organization's active calls from three sources: its cache (this
// worker's Calls and the unassigned ones), the other workers' Leases (what
// each carries per organization, as of a resourceVersion), and the calls
// it placed on other workers that their Lease does not count yet. What it
// cannot see are the calls other replicas placed on other workers since
// those workers last wrote their Lease (at most workers.MinRefresh after a
// change): the active-calls limit can be passed by those (config/README.md,
// "replicas-every-one-carries-calls").
type Admission struct {
	// Cache reads Namespaces, Calls (indexed by LivePhaseIndex) and
	// WebhookEndpoints.
	Cache client.Reader
	Now   func() time.Time
	// Defaults are the limits of an organization without annotations.
	Defaults Limits
	// Elsewhere says what the other workers' Leases say of an
	// organization's calls; nil when this process's cache sees every call.
	Elsewhere Elsewhere
	// Self is this replica's worker: the calls placed on it are counted
	// from the cache.
	Self string
	// Live, when set, reads this worker's and the unassigned Calls for an
	// applied call's admission instead of the cache: a Call the leader
	// assigns to this worker leaves the informer of unassigned Calls
	// before the informer of this worker's shows it, so the cache can
	// briefly miss an older call. Applied calls are few: two lists each.
	Live client.Reader

	mu      sync.Mutex
	buckets map[string]*bucket
	// pending are the calls and endpoints admitted here that the cache may
	// not show yet.
	pending map[pendingKey]*pending
}

type bucket struct {
	limits  Limits
	limiter *rate.Limiter
}

// pendingKey is a kind of object in a namespace.
type pendingKey struct {
	kind, ns string
}

const (
	kindCall     = "Call"
	kindEndpoint = "WebhookEndpoint"
)

// Elsewhere reads the other workers' Leases (workers.Elsewhere).
type Elsewhere interface {
	Calls(ctx context.Context, namespace string) ([]workers.Published, error)
}

type pending struct {
	reserved int                  // admitted, not created yet
	created  map[string]placement // created, by name, until they are counted otherwise
}

// placement is a call or endpoint created here.
type placement struct {
	at time.Time
	// worker carries the call, and rv is its resourceVersion at creation:
	// a call placed on another worker counts until that worker's Lease
	// counts it.
	worker string
	rv     uint64
}

// Ticket is one admitted call or endpoint. Its holder says what became of
// it: Placed once its object exists, Release if none was created (or a
// failed call).
type Ticket struct {
	a   *Admission
	key pendingKey
}

// Placed counts the object named name until the cache shows it.
func (t *Ticket) Placed(name string) {
	t.placed(name, placement{})
}

// PlacedCall counts the call c until this replica's cache shows it, or,
// when another worker carries it, until that worker's Lease counts it.
func (t *Ticket) PlacedCall(c *switchboardv1.Call) {
	rv, _ := strconv.ParseUint(c.ResourceVersion, 10, 64)
	t.placed(c.Name, placement{worker: c.Labels[switchboardv1.WorkerLabel], rv: rv})
}

func (t *Ticket) placed(name string, p placement) {
	if t == nil {
		return
	}
	t.a.mu.Lock()
	defer t.a.mu.Unlock()
	pend := t.a.pendingOf(t.key)
	pend.reserved--
	p.at = t.a.Now()
	pend.created[name] = p
}

// Release gives the admission back: nothing that counts came of it.
func (t *Ticket) Release() {
	if t == nil {
		return
	}
	t.a.mu.Lock()
	defer t.a.mu.Unlock()
	t.a.pendingOf(t.key).reserved--
}

// Admit takes one call from ns's create rate and checks its active calls;
// an *Exceeded says which limit refused it. The ticket (nil when ns has no
// active-calls limit) must be Placed or Released.
func (a *Admission) Admit(ctx context.Context, ns string) (*Ticket, error) {
	limits, err := a.Limits(ctx, ns)
	if err != nil {
		return nil, err
	}
	if exceeded := a.takeRate(ns, limits); exceeded != nil {
		return nil, exceeded
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
		return nil, activeCallsExceeded(queued + live)
	}
	key := pendingKey{kindCall, ns}
	a.pendingOf(key).reserved++
	return &Ticket{a: a, key: key}, nil
}

// AdmitApplied holds a Call that did not come through the REST API (one
// applied with kubectl) to the same limits, when the reconciler first sees
// it: it takes one call from the create rate, and the call is within the
// active-calls limit if fewer than the limit of the organization's active
// calls are older than it (with several workers, every call of the others
// counts as older). Nil admits it.
func (a *Admission) AdmitApplied(ctx context.Context, c *switchboardv1.Call) (*Exceeded, error) {
	limits, err := a.Limits(ctx, c.Namespace)
	if err != nil {
		return nil, err
	}
	if exceeded := a.takeRate(c.Namespace, limits); exceeded != nil {
		return exceeded, nil
	}
	if limits.ActiveCalls == 0 {
		return nil, nil
	}
	older := 0
	countOlder := func(other *switchboardv1.Call) {
		if createdBefore(other, c) {
			older++
		}
	}
	if a.Live != nil && a.Self != "" {
		err = a.eachLiveRead(ctx, c.Namespace, countOlder)
	} else {
		err = a.eachLive(ctx, c.Namespace, countOlder)
	}
	if err != nil {
		return nil, err
	}
	// The other workers' calls count as older: their Leases say how many,
	// not when each was created.
	published, err := a.elsewhere(ctx, c.Namespace)
	if err != nil {
		return nil, err
	}
	for _, w := range published {
		older += w.Queued + w.Live
	}
	if older >= limits.ActiveCalls {
		return activeCallsExceeded(older), nil
	}
	return nil, nil
}

func activeCallsExceeded(active int) *Exceeded {
	return &Exceeded{Code: CodeConcurrencyLimit, RetryAfter: 5 * time.Second, Message: fmt.Sprintf(
		"This organization has %d calls queued or in progress, its limit; retry once one has ended.", active)}
}

// createdBefore orders objects by creation, then name.
func createdBefore(a, b client.Object) bool {
	ta, tb := a.GetCreationTimestamp(), b.GetCreationTimestamp()
	if !ta.Equal(&tb) {
		return ta.Before(&tb)
	}
	return a.GetName() < b.GetName()
}

// AdmitEndpoint checks that ns may declare one more webhook endpoint. The
// ticket (nil when ns has no endpoint limit) must be Placed or Released.
func (a *Admission) AdmitEndpoint(ctx context.Context, ns string) (*Ticket, error) {
	limits, err := a.Limits(ctx, ns)
	if err != nil || limits.WebhookEndpoints == 0 {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var endpoints switchboardv1.WebhookEndpointList
	if err := a.Cache.List(ctx, &endpoints, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("counting the webhook endpoints of %s: %w", ns, err)
	}
	key := pendingKey{kindEndpoint, ns}
	n := len(endpoints.Items) + a.notCached(ctx, key, &switchboardv1.WebhookEndpoint{}, nil)
	if n >= limits.WebhookEndpoints {
		return nil, &Exceeded{Code: CodeEndpointLimit, Message: fmt.Sprintf(
			"This organization has %d webhook endpoints, its limit of %d; delete one to add another.", n, limits.WebhookEndpoints)}
	}
	a.pendingOf(key).reserved++
	return &Ticket{a: a, key: key}, nil
}

// WithinEndpointLimit keeps the endpoints that count within limit (0: all),
// the oldest first: an endpoint applied with kubectl beyond the limit
// receives no events.
func WithinEndpointLimit(endpoints []switchboardv1.WebhookEndpoint, limit int) []switchboardv1.WebhookEndpoint {
	if limit == 0 || len(endpoints) <= limit {
		return endpoints
	}
	sorted := slices.Clone(endpoints)
	slices.SortFunc(sorted, func(x, y switchboardv1.WebhookEndpoint) int {
		switch {
		case createdBefore(&x, &y):
			return -1
		case createdBefore(&y, &x):
			return 1
		}
		return 0
	})
	return sorted[:limit]
}

// Usage reports ns's queued and live calls and its limits.
func (a *Admission) Usage(ctx context.Context, ns string) (Usage, error) {
	limits, err := a.Limits(ctx, ns)
	if err != nil {
		return Usage{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	queued, live, err := a.count(ctx, ns)
	return Usage{Queued: queued, Live: live, Limits: limits}, err
}

// Limits are ns's limits now.
func (a *Admission) Limits(ctx context.Context, ns string) (Limits, error) {
	var n corev1.Namespace
	if err := a.Cache.Get(ctx, client.ObjectKey{Name: ns}, &n); err != nil {
		return Limits{}, fmt.Errorf("reading the limits of %s: %w", ns, err)
	}
	return limitsOf(&n, a.Defaults), nil
}

// takeRate takes one call from ns's create rate, or says how long until
// there is one.
func (a *Admission) takeRate(ns string, limits Limits) *Exceeded {
	if limits.CreateRate == 0 {
		return nil
	}
	wait := a.take(ns, limits)
	if wait == 0 {
		return nil
	}
	return &Exceeded{Code: CodeRateLimited, RetryAfter: wait, Message: fmt.Sprintf(
		"This organization may create %g calls per second (bursts of %d); retry after the Retry-After header's seconds.",
		limits.CreateRate, limits.CreateBurst)}
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

func (a *Admission) pendingOf(key pendingKey) *pending {
	if a.pending == nil {
		a.pending = map[pendingKey]*pending{}
	}
	p := a.pending[key]
	if p == nil {
		p = &pending{created: map[string]placement{}}
		a.pending[key] = p
	}
	return p
}

// notCached counts the objects of key admitted here that are not counted
// otherwise yet: reserved, or created and neither in the cache nor (a call
// on another worker) in that worker's Lease (published). Once counted
// otherwise, it is forgotten here; one never counted (deleted at once) is
// forgotten after cacheLagBound. a.mu is held.
func (a *Admission) notCached(ctx context.Context, key pendingKey, obj client.Object, published []workers.Published) int {
	p := a.pendingOf(key)
	n := p.reserved
	for name, placed := range p.created {
		var counted bool
		if placed.worker != "" && placed.worker != a.Self && a.Elsewhere != nil {
			counted = countedBy(placed, published)
		} else {
			counted = a.Cache.Get(ctx, client.ObjectKey{Namespace: key.ns, Name: name}, obj) == nil
		}
		if counted || a.Now().Sub(placed.at) > cacheLagBound {
			delete(p.created, name)
			continue
		}
		n++
	}
	return n
}

// countedBy: the Lease of the worker carrying the call counts it, or that
// worker is gone (its calls move, and count where they land).
func countedBy(placed placement, published []workers.Published) bool {
	for _, w := range published {
		if w.Worker == placed.worker {
			return placed.rv != 0 && w.AsOf >= placed.rv
		}
	}
	return true
}

// count counts ns's queued and in-progress Calls from the index, the other
// workers' Leases, and the calls admitted here not counted by either yet
// (as queued). a.mu is held.
func (a *Admission) count(ctx context.Context, ns string) (queued, live int, err error) {
	err = a.eachLive(ctx, ns, func(c *switchboardv1.Call) {
		if c.CurrentPhase() == switchboardv1.CallInProgress {
			live++
		} else {
			queued++
		}
	})
	if err != nil {
		return 0, 0, err
	}
	published, err := a.elsewhere(ctx, ns)
	if err != nil {
		return 0, 0, err
	}
	for _, w := range published {
		queued, live = queued+w.Queued, live+w.Live
	}
	return queued + a.notCached(ctx, pendingKey{kindCall, ns}, &switchboardv1.Call{}, published), live, nil
}

// elsewhere is what the other workers' Leases say of ns's calls.
func (a *Admission) elsewhere(ctx context.Context, ns string) ([]workers.Published, error) {
	if a.Elsewhere == nil {
		return nil, nil
	}
	published, err := a.Elsewhere.Calls(ctx, ns)
	if err != nil {
		return nil, fmt.Errorf("reading the calls of %s on other workers: %w", ns, err)
	}
	return published, nil
}

// eachLive calls f once with each of ns's queued and in-progress Calls in
// the cache, found by the index and not copied: f must not keep or change
// them. The two phases are two lookups, and a call answered between them
// is in both; it is counted once, as it was first found.
func (a *Admission) eachLive(ctx context.Context, ns string, f func(*switchboardv1.Call)) error {
	seen := map[types.UID]bool{}
	for _, phase := range []switchboardv1.CallPhase{switchboardv1.CallQueued, switchboardv1.CallInProgress} {
		var calls switchboardv1.CallList
		if err := a.Cache.List(ctx, &calls, client.InNamespace(ns), client.MatchingFields{LivePhaseIndex: string(phase)},
			client.UnsafeDisableDeepCopy); err != nil {
			return fmt.Errorf("counting the calls of %s: %w", ns, err)
		}
		for i := range calls.Items {
			if c := &calls.Items[i]; !seen[c.UID] {
				seen[c.UID] = true
				f(c)
			}
		}
	}
	return nil
}

// eachLiveRead is eachLive over this worker's and the unassigned Calls of
// ns as the apiserver has them now (Live), not as the cache does.
func (a *Admission) eachLiveRead(ctx context.Context, ns string, f func(*switchboardv1.Call)) error {
	for _, selector := range []labels.Selector{shard.Own(a.Self), shard.Unassigned()} {
		var calls switchboardv1.CallList
		if err := a.Live.List(ctx, &calls, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: selector}); err != nil {
			return fmt.Errorf("counting the calls of %s: %w", ns, err)
		}
		for i := range calls.Items {
			if c := &calls.Items[i]; !c.CurrentPhase().Final() {
				f(c)
			}
		}
	}
	return nil
}
