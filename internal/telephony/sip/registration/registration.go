// Package registration keeps SIPTrunks registered with their carriers'
// registrars: one loop per trunk with spec.registration, on the leader
// only, that registers, refreshes before the granted lifetime ends, tries
// again with bounded, jittered backoff after a failure, and removes its
// binding when stopped.
package registration

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/engine"
)

// Backoff after a failed REGISTER: MinBackoff doubled per failure in a
// row, up to MaxBackoff, each wait jittered down by up to a quarter so
// that trunks failing together (a registrar restarting) do not retry
// together.
const (
	MinBackoff = 2 * time.Second
	MaxBackoff = 5 * time.Minute
)

// Binding sends one trunk's REGISTERs; *engine.Registrant is one.
type Binding interface {
	Register(context.Context) engine.RegisterResult
	Unregister(context.Context) engine.RegisterResult
}

// Binder makes a trunk's Binding.
type Binder interface {
	Bind(engine.Trunk, engine.Registration) Binding
}

// EngineBinder binds through the SIP engine.
type EngineBinder struct{ Engine *engine.Engine }

// Bind returns the engine's Registrant for the trunk.
func (b EngineBinder) Bind(t engine.Trunk, r engine.Registration) Binding {
	return b.Engine.NewRegistrant(t, r)
}

// State is what a trunk's loop last learned.
type State struct {
	// Answered: at least one REGISTER was answered or failed; before
	// that the trunk is registering.
	Answered bool
	// Last is the last REGISTER's result.
	Last engine.RegisterResult
	// LastRegisteredAt is when the registrar last accepted us; Until when
	// that binding expires.
	LastRegisteredAt, Until time.Time
}

// Registered reports a binding the registrar holds now.
func (s State) Registered() bool { return s.Answered && s.Last.Err == nil }

// Manager runs the registration loops. Its zero value is not usable: see
// New. Ensure, Stop and State are safe for concurrent use.
type Manager struct {
	binder Binder
	clock  clock.WithTicker
	// changed names a trunk whose State changed, for its reconciler.
	changed chan event.GenericEvent

	mu     sync.Mutex
	ctx    context.Context
	cancel context.CancelFunc
	loops  map[types.NamespacedName]*loop
	wg     sync.WaitGroup
}

type loop struct {
	config  Config
	cancel  context.CancelFunc
	done    chan struct{}
	state   State
	binding Binding
	// keep: stopped to be replaced by a loop for the same binding (a new
	// password, say), which refreshes it: no un-REGISTER.
	keep bool
}

// Config is what a loop registers; a change restarts it.
type Config struct {
	Trunk        engine.Trunk
	Registration engine.Registration
}

// equal reports configs that register alike. The trunk's TLS settings
// compare by value: every reconcile resolves new ones, and restarting the
// loop for them would send a REGISTER per reconcile, each of which
// triggers the next.
func (c Config) equal(o Config) bool {
	ct, ot := c.Trunk, o.Trunk
	ct.TLS, ot.TLS = nil, nil
	return ct == ot && c.Registration == o.Registration && c.Trunk.TLS.Equal(o.Trunk.TLS)
}

// sameBinding reports configs whose binding is the same at the registrar.
func (c Config) sameBinding(o Config) bool {
	return c.Registration.Registrar == o.Registration.Registrar && c.Registration.User == o.Registration.User &&
		c.Trunk.Transport == o.Trunk.Transport
}

// New returns a Manager whose loops register through binder. clk is the
// real clock when nil.
func New(binder Binder, clk clock.WithTicker) *Manager {
	if clk == nil {
		clk = clock.RealClock{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Manager{binder: binder, clock: clk, changed: make(chan event.GenericEvent, 64),
		ctx: ctx, cancel: cancel, loops: map[types.NamespacedName]*loop{}}
}

// Changes names the trunks whose State changed.
func (m *Manager) Changes() <-chan event.GenericEvent { return m.changed }

// Ensure starts the trunk's loop, or restarts it when cfg changed. After
// Shutdown it does nothing.
func (m *Manager) Ensure(key types.NamespacedName, cfg Config) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ctx.Err() != nil {
		return
	}
	if l, ok := m.loops[key]; ok {
		if l.config.equal(cfg) {
			return
		}
		l.keep = l.config.sameBinding(cfg)
		l.cancel()
	}
	ctx, cancel := context.WithCancel(m.ctx)
	l := &loop{config: cfg, cancel: cancel, done: make(chan struct{}),
		binding: m.binder.Bind(cfg.Trunk, cfg.Registration)}
	prev := m.loops[key]
	m.loops[key] = l
	m.wg.Add(1)
	go m.run(ctx, key, l, prev)
}

// Stop ends the trunk's loop, which removes its binding; the call returns
// at once.
func (m *Manager) Stop(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l, ok := m.loops[key]; ok {
		l.cancel()
		delete(m.loops, key)
		registeredTrunks.DeleteLabelValues(key.Namespace, key.Name)
	}
}

// State is the trunk's loop's state; false when it has none.
func (m *Manager) State(key types.NamespacedName) (State, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.loops[key]
	if !ok {
		return State{}, false
	}
	return l.state, true
}

// Start runs until ctx ends (the manager's leadership is lost, or the
// process stops), then stops every loop and waits for their
// un-REGISTERs. A manager.Runnable that needs leader election: only the
// leader registers.
func (m *Manager) Start(ctx context.Context) error {
	<-ctx.Done()
	m.Shutdown()
	return nil
}

// NeedLeaderElection keeps the loops on the leader, like the trunk probe:
// one registration per installation.
func (m *Manager) NeedLeaderElection() bool { return true }

// Shutdown stops every loop and waits until each removed its binding.
func (m *Manager) Shutdown() {
	m.mu.Lock()
	m.cancel()
	for key := range m.loops {
		registeredTrunks.DeleteLabelValues(key.Namespace, key.Name)
	}
	m.loops = map[types.NamespacedName]*loop{}
	m.mu.Unlock()
	m.wg.Wait()
}

// run registers until ctx ends, then removes the binding unless a loop
// for the same binding replaces this one. It waits for prev (the loop it
// replaces) first, so that one trunk never has two loops sending.
func (m *Manager) run(ctx context.Context, key types.NamespacedName, l *loop, prev *loop) {
	defer m.wg.Done()
	defer close(l.done)
	if prev != nil {
		<-prev.done
	}
	everRegistered := false
	for failures := 0; ctx.Err() == nil; {
		res := l.binding.Register(ctx)
		if ctx.Err() != nil {
			break
		}
		attempts.WithLabelValues(result(res)).Inc()
		wait := m.record(key, l, res)
		if res.Err == nil {
			everRegistered, failures = true, 0
		} else {
			failures++
			wait = Backoff(failures, rand.Float64()) //nolint:gosec // jitter, not a secret
		}
		m.notify(ctx, key)
		select {
		case <-ctx.Done():
		case <-m.clock.After(wait):
		}
	}
	m.mu.Lock()
	keep := l.keep
	m.mu.Unlock()
	if everRegistered && !keep {
		uctx, cancel := context.WithTimeout(context.Background(), engine.DefaultRegisterTimeout)
		attempts.WithLabelValues(unregisterResult(l.binding.Unregister(uctx))).Inc()
		cancel()
	}
}

// record keeps the result as the loop's state and returns when to
// refresh a binding granted.
func (m *Manager) record(key types.NamespacedName, l *loop, res engine.RegisterResult) time.Duration {
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	l.state.Answered, l.state.Last = true, res
	registered := 0.0
	if res.Err == nil {
		l.state.LastRegisteredAt, l.state.Until = now, now.Add(res.Granted)
		registered = 1
	}
	if m.loops[key] == l {
		registeredTrunks.WithLabelValues(key.Namespace, key.Name).Set(registered)
	}
	return RefreshAfter(res.Granted, rand.Float64()) //nolint:gosec // jitter, not a secret
}

// notify tells the reconciler the trunk's state changed.
func (m *Manager) notify(ctx context.Context, key types.NamespacedName) {
	trunk := &switchboardv1.SIPTrunk{}
	trunk.Namespace, trunk.Name = key.Namespace, key.Name
	select {
	case m.changed <- event.GenericEvent{Object: trunk}:
	case <-ctx.Done():
	}
}

// RefreshAfter is when to refresh a binding granted for g: between 80%
// and 90% of it (u in [0, 1) picks where), so that the refresh lands well
// before expiry whatever the round trip, and trunks registered together
// spread out.
func RefreshAfter(g time.Duration, u float64) time.Duration {
	return time.Duration(float64(g) * (0.8 + 0.1*u))
}

// Backoff is the wait after the n-th failure in a row (n >= 1): MinBackoff
// doubled n-1 times, at most MaxBackoff, less up to a quarter (u in [0, 1)
// picks how much).
func Backoff(n int, u float64) time.Duration {
	d := MaxBackoff
	if n < 20 {
		d = min(MinBackoff<<(n-1), MaxBackoff)
	}
	return d - time.Duration(float64(d)*0.25*u)
}

// result names a REGISTER's outcome for the attempts counter.
func result(r engine.RegisterResult) string {
	switch {
	case r.Err == nil:
		return "registered"
	case r.Refused:
		return "address_refused"
	case r.TLS != nil:
		return "tls_failed"
	case !r.Reachable:
		return "unreachable"
	case r.AuthFailed:
		return "auth_failed"
	default:
		return "registrar_error"
	}
}

func unregisterResult(r engine.RegisterResult) string {
	if r.Err == nil {
		return "unregistered"
	}
	return "unregister_failed"
}

var (
	registeredTrunks = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "switchboard_siptrunk_registered",
		Help: "1 while the registrar holds the SIPTrunk's binding (spec.registration), 0 while it does not; sum() counts registered trunks.",
	}, []string{"namespace", "trunk"})
	attempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_siptrunk_register_attempts_total",
		Help: "REGISTER requests sent by the leader, by result: registered, auth_failed, unreachable, registrar_error, address_refused, tls_failed (the registrar's certificate or TLS handshake failed); unregistered and unregister_failed for the removal of a binding.",
	}, []string{"result"})
)

func init() { metrics.Registry.MustRegister(registeredTrunks, attempts) }
