package sip

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/telephony/sip/siptest"
)

// kamailioConfig is what testdata/kamailio.cfg is filled with.
type kamailioConfig struct {
	// User and Password are the only credentials the proxy accepts (407
	// digest, realm trunk.test).
	User, Password string
	// Relay is the host:port authorized INVITEs are relayed to (a sipp
	// callee); optional when only OPTIONS are sent.
	Relay string
}

// kamailio is one running kamailio proxy.
type kamailio struct {
	*siptest.Process
	addr string // host:port it listens on, over UDP and TCP
}

// startKamailio runs kamailio (Debian package kamailio) in the foreground
// as a digest-authenticating proxy on a free loopback port, UDP and TCP,
// with its pid file and runtime files in a temporary folder, and stops it
// when the test ends. The test fails when kamailio is not installed.
func startKamailio(t *testing.T, cfg kamailioConfig) *kamailio {
	t.Helper()
	if cfg.Relay == "" {
		cfg.Relay = "127.0.0.1:9" // discard: nothing answers
	}
	for attempt := 1; ; attempt++ {
		k, err := launchKamailio(t, freePort(t, "udp"), cfg)
		if err == nil {
			return k
		}
		k.Stop()
		if attempt == 5 || !strings.Contains(k.Output(), "in use") {
			t.Fatal(err)
		}
	}
}

// launchKamailio starts kamailio on port and waits until it listens.
func launchKamailio(t *testing.T, port int, cfg kamailioConfig) (*kamailio, error) {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "kamailio.cfg")
	writeKamailioConfig(t, conf, port, cfg)
	// -DD: stay in the foreground (children are still forked, and stopped
	// with it: siptest runs it in its own process group); -E: log to
	// stderr; small memory pools, as for a test.
	k := &kamailio{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Process: siptest.Start(t, "apt-get install -y kamailio", "kamailio", "-DD", "-E", "-f", conf,
			"-P", filepath.Join(dir, "kamailio.pid"), "-Y", dir, "-w", dir, "-m", "32", "-M", "8")}
	return k, k.waitListening(port)
}

// writeKamailioConfig fills testdata/kamailio.cfg's [port], [user],
// [pass] and [relay] into path.
func writeKamailioConfig(t *testing.T, path string, port int, cfg kamailioConfig) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "kamailio.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.NewReplacer("[port]", strconv.Itoa(port), "[user]", cfg.User, "[pass]", cfg.Password,
		"[relay]", cfg.Relay).Replace(string(b))
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// waitListening waits until kamailio holds its UDP port and accepts TCP.
func (k *kamailio) waitListening(port int) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-k.Done():
			return errors.New("kamailio exited early:\n" + k.Output())
		default:
		}
		if udpBound(port) {
			if c, err := (&net.Dialer{}).DialContext(context.Background(), "tcp", k.addr); err == nil {
				_ = c.Close()
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("kamailio is not listening on " + k.addr)
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
