package engine

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/telephony/sip/siptest"
)

// kamailioConfig is what testdata/kamailio.cfg is filled with: User and
// Password are the only credentials the proxy accepts (407 digest, realm
// trunk.test), Relay where authorized INVITEs go.
type kamailioConfig = siptest.KamailioConfig

// kamailio is a kamailio proxy (siptest.Kamailio) under the names these
// tests use.
type kamailio struct {
	*siptest.Kamailio
	addr string
}

// startKamailio runs kamailio as a digest-authenticating proxy with
// testdata/kamailio.cfg.
func startKamailio(t *testing.T, cfg kamailioConfig) *kamailio {
	t.Helper()
	k := siptest.StartKamailio(t, filepath.Join("testdata", "kamailio.cfg"), cfg)
	return &kamailio{Kamailio: k, addr: k.Addr}
}

// A carrier's proxy challenges OPTIONS with 407: the probe answers with
// the trunk's credentials, and a wrong password is an authentication
// failure, over UDP and TCP.
func TestProbeProxyAuthKamailio(t *testing.T) {
	k := startKamailio(t, kamailioConfig{User: "alice", Password: "secret"})
	e := newEngine(t, EngineConfig{})
	for _, tc := range []struct {
		name, transport, user, password string
		healthy                         bool
	}{
		{"udp right password", "udp", "alice", "secret", true},
		{"tcp right password", "tcp", "alice", "secret", true},
		{"wrong password", "udp", "alice", "guess", false},
		{"wrong user", "udp", "bob", "secret", false},
		{"no credentials", "udp", "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.Probe(t.Context(), Trunk{Address: "sip:" + k.addr, Transport: tc.transport,
				Username: tc.user, Password: tc.password})
			if r.Healthy() != tc.healthy || r.AuthFailed == tc.healthy || !r.Reachable {
				t.Errorf("probe %+v: want healthy %v, else auth failed", r, tc.healthy)
			}
			if !tc.healthy && r.StatusCode != 407 {
				t.Errorf("status %d, want 407", r.StatusCode)
			}
		})
	}
}

// A call through a carrier's proxy: the INVITE's 407 is answered with the
// trunk's credentials, and the callee behind the proxy decides the outcome.
func TestProxyAuthThroughKamailio(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	t.Run("busy", func(t *testing.T) {
		callee := startSipp(t, "udp", scenario(t, "reject.xml", "status", "486", "reason", "Busy Here")...)
		k := startKamailio(t, kamailioConfig{User: "alice", Password: "secret", Relay: callee.addr})
		res := place(t, e, Trunk{Address: "sip:" + k.addr, Username: "alice", Password: "secret"}, CallSpec{})
		callee.wait(t)
		if res.Answered || res.Outcome.StatusCode != 486 {
			t.Errorf("result %+v: want 486 from the callee behind the proxy", res)
		}
	})
	t.Run("answered", func(t *testing.T) {
		// sipp answers each request of a call where the call's first one
		// came from (the proxy): it must record-route, so that our BYE
		// takes that path too.
		callee := startSipp(t, "udp", editedScenario(t, "uas.xml",
			"[last_CSeq:]\n      Contact:", "[last_CSeq:]\n      [last_Record-Route:]\n      Contact:")...)
		k := startKamailio(t, kamailioConfig{User: "alice", Password: "secret", Relay: callee.addr})
		res := place(t, e, Trunk{Address: "sip:" + k.addr, Username: "alice", Password: "secret"},
			CallSpec{MaxDuration: 2 * time.Second})
		callee.wait(t)
		if !res.Answered || res.Outcome.StatusCode != 200 {
			t.Errorf("result %+v: want answered through the proxy", res)
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		k := startKamailio(t, kamailioConfig{User: "alice", Password: "secret"})
		res := place(t, e, Trunk{Address: "sip:" + k.addr, Username: "alice", Password: "guess"}, CallSpec{})
		if res.Answered || res.Outcome.StatusCode != 407 {
			t.Errorf("result %+v: want the proxy's second 407", res)
		}
	})
}
