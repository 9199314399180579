package registration

// Registration against a real registrar: kamailio with its registrar and
// usrloc modules (testdata/registrar.cfg), bindings in memory, granting 3
// seconds at most so that refreshes come soon. The tests count the
// REGISTERs kamailio accepted, in order, and ask kamailio to reach the
// address of record, as a carrier sending a call to a registered PBX does.

import (
	"context"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emiago/sipgo"
	sipmsg "github.com/emiago/sipgo/sip"
	"k8s.io/apimachinery/pkg/types"

	"github.com/switchboard-dev/switchboard/internal/telephony/sip/engine"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/siptest"
)

var registrarConfig = filepath.Join("testdata", "registrar.cfg")

var trunkKey = types.NamespacedName{Namespace: "acme", Name: "carrier"}

func newEngine(t *testing.T) *engine.Engine {
	t.Helper()
	e, err := engine.NewEngine(t.Context(), engine.EngineConfig{})
	if err != nil {
		t.Fatalf("NewEngine: %v", err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// newManager runs a Manager until the test ends, draining its changes as
// the reconciler would.
func newManager(t *testing.T, e *engine.Engine) *Manager {
	t.Helper()
	m := New(EngineBinder{Engine: e}, nil)
	go func() {
		for range m.Changes() {
		}
	}()
	t.Cleanup(m.Shutdown)
	return m
}

func config(addr, transport, user, password string) Config {
	return Config{
		Trunk:        engine.Trunk{Address: "sip:" + addr, Transport: transport, Username: user, Password: password},
		Registration: engine.Registration{Registrar: "sip:" + addr, User: user, Expires: time.Hour},
	}
}

var accepted = regexp.MustCompile(`registrar: accepted cseq=(\d+) expires=(\d+)`)

// acceptedRegisters are the CSeq and Expires of each REGISTER kamailio
// accepted, in order.
func acceptedRegisters(k *siptest.Kamailio) (cseqs, expires []int) {
	for _, m := range accepted.FindAllStringSubmatch(k.Output(), -1) {
		c, _ := strconv.Atoi(m[1])
		x, _ := strconv.Atoi(m[2])
		cseqs, expires = append(cseqs, c), append(expires, x)
	}
	return cseqs, expires
}

// waitFor polls cond every 50 ms until it holds, failing the test after
// limit: a bound for a stuck test, not a measure.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// reach sends OPTIONS to sip:user@kamailio, which relays it to the
// user's registered contact: 200 from our engine when registered, 404
// Not Registered from kamailio when not.
func reach(t *testing.T, k *siptest.Kamailio, user string) int {
	t.Helper()
	ua, err := sipgo.NewUA(sipgo.WithUserAgent("carrier-test"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ua.Close() }()
	c, err := sipgo.NewClient(ua, sipgo.WithClientHostname("127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	var u sipmsg.Uri
	if err := sipmsg.ParseUri("sip:"+user+"@"+k.Addr, &u); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	res, err := c.Do(ctx, sipmsg.NewRequest(sipmsg.OPTIONS, u))
	if err != nil {
		t.Fatalf("OPTIONS %s: %v", u.String(), err)
	}
	return res.StatusCode
}

func stateOf(m *Manager) State {
	s, _ := m.State(trunkKey)
	return s
}

// Registered with the right password, refreshed before the granted 3 s
// run out (CSeq rising on one Call-ID), registered again after the
// registrar restarts and forgets us, and removed when stopped.
func TestRegistrationLifecycleKamailio(t *testing.T) {
	cfg := siptest.KamailioConfig{User: "alice", Password: "secret"}
	k := siptest.StartKamailio(t, registrarConfig, cfg)
	m := newManager(t, newEngine(t))
	m.Ensure(trunkKey, config(k.Addr, "udp", "alice", "secret"))

	waitFor(t, 20*time.Second, "the first registration", func() bool { return stateOf(m).Registered() })
	s := stateOf(m)
	if s.Last.StatusCode != 200 || s.Last.Granted != 3*time.Second || !s.Until.After(s.LastRegisteredAt) {
		t.Fatalf("state %+v: want 200 with the 3 s the registrar grants", s)
	}
	if code := reach(t, k, "alice"); code != 200 {
		t.Fatalf("OPTIONS to the address of record: %d, want 200 from our contact", code)
	}
	// Refreshes: each accepted REGISTER asks for the hour again, with a
	// higher CSeq than the last.
	waitFor(t, 30*time.Second, "two refreshes", func() bool { c, _ := acceptedRegisters(k); return len(c) >= 3 })
	cseqs, expires := acceptedRegisters(k)
	for i := range cseqs {
		if expires[i] != 3600 || (i > 0 && cseqs[i] <= cseqs[i-1]) {
			t.Fatalf("accepted REGISTERs cseq %v expires %v: want rising CSeqs, each asking 3600", cseqs, expires)
		}
	}

	// A restart empties usrloc; the next refresh puts us back.
	k = siptest.RestartKamailio(t, k, registrarConfig, cfg)
	waitFor(t, 30*time.Second, "registration after the restart", func() bool { c, _ := acceptedRegisters(k); return len(c) >= 1 })
	if code := reach(t, k, "alice"); code != 200 {
		t.Fatalf("OPTIONS to the address of record after the restart: %d, want 200", code)
	}

	// Stopped: one more REGISTER, with Expires 0, and the binding is gone.
	before, _ := acceptedRegisters(k)
	m.Stop(trunkKey)
	waitFor(t, 20*time.Second, "the un-REGISTER", func() bool {
		c, x := acceptedRegisters(k)
		return len(c) > len(before) && x[len(x)-1] == 0
	})
	if code := reach(t, k, "alice"); code != 404 {
		t.Fatalf("OPTIONS to the address of record after un-REGISTER: %d, want kamailio's 404", code)
	}
	if _, ok := m.State(trunkKey); ok {
		t.Error("a stopped trunk still has a state")
	}
}

// A wrong password is an authentication failure that names the status,
// tried again after a backoff, and never accepted.
func TestRegistrationWrongPasswordKamailio(t *testing.T) {
	k := siptest.StartKamailio(t, registrarConfig, siptest.KamailioConfig{User: "alice", Password: "secret"})
	m := newManager(t, newEngine(t))
	m.Ensure(trunkKey, config(k.Addr, "tcp", "alice", "guess"))

	waitFor(t, 20*time.Second, "the first answer", func() bool { return stateOf(m).Answered })
	s := stateOf(m)
	if s.Registered() || !s.Last.AuthFailed || s.Last.StatusCode != 401 ||
		!strings.Contains(s.Last.Err.Error(), "refused the credentials (401") {
		t.Fatalf("state %+v (%v): want an authentication failure naming the 401", s, s.Last.Err)
	}
	if strings.Contains(s.Last.Err.Error(), "guess") {
		t.Fatal("the error shows the password")
	}
	// Each attempt is challenged twice (no credentials yet, then wrong
	// ones); a second attempt comes after the backoff.
	waitFor(t, 20*time.Second, "a retry", func() bool { return strings.Count(k.Output(), "registrar: challenged") >= 4 })
	if c, _ := acceptedRegisters(k); len(c) != 0 {
		t.Errorf("kamailio accepted %v with a wrong password", c)
	}
}

// A registrar that refuses connections is unreachable, with the same
// words whatever happened.
func TestRegisterUnreachable(t *testing.T) {
	e := newEngine(t)
	addr := "127.0.0.1:" + strconv.Itoa(siptest.FreePort(t, "tcp"))
	r := e.NewRegistrant(engine.Trunk{Transport: "tcp"}, engine.Registration{Registrar: "sip:" + addr, User: "alice",
		Expires: time.Hour}).Register(t.Context())
	if r.Reachable || r.Err == nil || r.Err.Error() != "no answer to REGISTER within 5s" || r.Cause == nil {
		t.Fatalf("result %+v: want unreachable, the system's error apart", r)
	}
	if result(r) != "unreachable" {
		t.Errorf("counted as %q", result(r))
	}
}

func TestBackoffAndRefresh(t *testing.T) {
	for _, tc := range []struct {
		n        int
		u        float64
		min, max time.Duration
	}{
		{1, 0, 2 * time.Second, 2 * time.Second},
		{1, 0.999, 1500 * time.Millisecond, 1501 * time.Millisecond},
		{2, 0, 4 * time.Second, 4 * time.Second},
		{8, 0, 256 * time.Second, 256 * time.Second},
		{9, 0, MaxBackoff, MaxBackoff},
		{1000, 0.5, MaxBackoff * 7 / 8, MaxBackoff * 7 / 8},
	} {
		if d := Backoff(tc.n, tc.u); d < tc.min || d > tc.max {
			t.Errorf("Backoff(%d, %v) = %s, want %s to %s", tc.n, tc.u, d, tc.min, tc.max)
		}
	}
	if lo, hi := RefreshAfter(time.Hour, 0), RefreshAfter(time.Hour, 0.999); lo != 48*time.Minute || hi >= 54*time.Minute || hi < 53*time.Minute {
		t.Errorf("refresh of an hour between %s and %s, want 48m to 54m", lo, hi)
	}
}

// countingBinder counts the bindings made (one per loop started) and
// answers every REGISTER 200.
type countingBinder struct{ binds atomic.Int32 }

func (c *countingBinder) Bind(engine.Trunk, engine.Registration) Binding {
	c.binds.Add(1)
	return okBinding{}
}

type okBinding struct{}

func (okBinding) Register(context.Context) engine.RegisterResult {
	return engine.RegisterResult{Reachable: true, StatusCode: 200, Granted: time.Hour}
}

func (okBinding) Unregister(context.Context) engine.RegisterResult {
	return engine.RegisterResult{Reachable: true, StatusCode: 200}
}

// Each reconcile resolves a TLS trunk's settings anew: the same settings
// keep the loop (no REGISTER per reconcile), other ones restart it.
func TestEnsureComparesTLSSettingsByValue(t *testing.T) {
	b := &countingBinder{}
	m := New(b, nil)
	go func() {
		for range m.Changes() {
		}
	}()
	t.Cleanup(m.Shutdown)
	resolved := func(serverName string) Config {
		c := config("127.0.0.1:5061", "tls", "alice", "secret")
		c.Trunk.TLS = &engine.TrunkTLS{ServerName: serverName}
		return c
	}
	for range 3 {
		m.Ensure(trunkKey, resolved("carrier.test"))
	}
	if n := b.binds.Load(); n != 1 {
		t.Fatalf("%d loops started for the same settings resolved three times, want 1", n)
	}
	m.Ensure(trunkKey, resolved("sip.carrier.test"))
	if n := b.binds.Load(); n != 2 {
		t.Errorf("%d loops started after the server name changed, want 2", n)
	}
}
