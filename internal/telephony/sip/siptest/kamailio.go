package siptest

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
)

// KamailioConfig is what a kamailio configuration template is filled with:
// its [port], [user], [pass], [relay] and [target].
type KamailioConfig struct {
	// User and Password are the only credentials the proxy accepts.
	User, Password string
	// Relay is the host:port authorized INVITEs are relayed to (a callee);
	// optional when only OPTIONS are sent.
	Relay string
	// Target is the host:port a template that routes by number relays a
	// transfer target's INVITEs to (a second callee); optional.
	Target string
}

// Kamailio is one running kamailio proxy (Debian package kamailio).
type Kamailio struct {
	*Process
	// Addr is the host:port it listens on, over UDP and TCP.
	Addr string
}

// StartKamailio runs kamailio in the foreground with the configuration
// template at path filled with cfg, on a free loopback port, UDP and TCP,
// with its pid file and runtime files in a temporary folder, and stops it
// when the test ends.
func StartKamailio(t testing.TB, path string, cfg KamailioConfig) *Kamailio {
	t.Helper()
	if cfg.Relay == "" {
		cfg.Relay = "127.0.0.1:9" // discard: nothing answers
	}
	if cfg.Target == "" {
		cfg.Target = "127.0.0.1:9"
	}
	for attempt := 1; ; attempt++ {
		k, err := launchKamailio(t, path, FreePort(t, "udp"), cfg)
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
func launchKamailio(t testing.TB, path string, port int, cfg KamailioConfig) (*Kamailio, error) {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "kamailio.cfg")
	writeKamailioConfig(t, path, conf, port, cfg)
	// -DD: stay in the foreground (children are still forked, and stopped
	// with it: it runs in its own process group); -E: log to stderr; small
	// memory pools, as for a test.
	k := &Kamailio{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Process: Start(t, kamailioTLSInstall, "kamailio", "-DD", "-E", "-f", conf,
			"-P", filepath.Join(dir, "kamailio.pid"), "-Y", dir, "-w", dir, "-m", "32", "-M", "8")}
	return k, k.waitListening(port)
}

// writeKamailioConfig fills the template's [port], [user], [pass],
// [relay] and [target] into conf.
func writeKamailioConfig(t testing.TB, template, conf string, port int, cfg KamailioConfig) {
	t.Helper()
	b, err := os.ReadFile(template)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.NewReplacer("[port]", strconv.Itoa(port), "[user]", cfg.User, "[pass]", cfg.Password,
		"[relay]", cfg.Relay, "[target]", cfg.Target).Replace(string(b))
	if err := os.WriteFile(conf, []byte(s), 0o600); err != nil { //nolint:gosec // a test temp dir
		t.Fatal(err)
	}
}

// waitListening waits until kamailio holds its UDP port and accepts TCP.
func (k *Kamailio) waitListening(port int) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if k.exited() {
			return errors.New("kamailio exited early:\n" + k.Output())
		}
		if UDPBound(port) {
			if c, err := (&net.Dialer{}).DialContext(context.Background(), "tcp", k.Addr); err == nil {
				_ = c.Close()
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("kamailio is not listening on " + k.Addr)
}
