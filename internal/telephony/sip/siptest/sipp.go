// Package siptest runs real SIP peers (sipp, baresip, kamailio) for tests
// and benchmarks of packages that place calls. A missing binary fails the
// test: the calls must meet a real peer.
package siptest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// Sipp is one running sipp (Debian package sip-tester).
type Sipp struct {
	*Process
	// Addr is the host:port it listens on.
	Addr string
}

// StartSipp starts sipp on a free loopback port. transport is "udp" or
// "tcp"; args pick the scenario (-sn uas, or Scenario's -sf). Without -m it
// takes any number of calls: sipp counts the OPTIONS it answers (-aa) as
// calls, so a call limit would count the SIPTrunk controller's probes.
// Without -mp its media ports are free ones. A port found free can be
// taken by another process before sipp binds it: then it tries another.
func StartSipp(t testing.TB, transport string, args ...string) *Sipp {
	t.Helper()
	return retry(t, func() (*Sipp, error) { return launch(t, transport, FreePort(t, transport), args...) })
}

// StartSippOn is StartSipp on a given port (a trunk already pointing
// there, say). sipp also binds ports next to its media port (video RTP at
// +2), which another socket may hold: then it tries other media ports.
func StartSippOn(t testing.TB, transport string, port int, args ...string) *Sipp {
	t.Helper()
	return retry(t, func() (*Sipp, error) { return launch(t, transport, port, args...) })
}

// retry launches sipp until it binds its ports, 5 times at most.
func retry(t testing.TB, launch func() (*Sipp, error)) *Sipp {
	t.Helper()
	for attempt := 1; ; attempt++ {
		s, err := launch()
		if err == nil {
			return s
		}
		s.Stop()
		if attempt == 5 || !strings.Contains(s.Output(), "Address already in use") {
			t.Fatal(err)
		}
	}
}

func launch(t testing.TB, transport string, port int, args ...string) (*Sipp, error) {
	t.Helper()
	// -aa answers OPTIONS (the SIPTrunk controller's probes) and other
	// out-of-dialog requests with 200.
	argv := []string{"-i", "127.0.0.1", "-p", strconv.Itoa(port), "-nostdin", "-timeout", "60s", "-timeout_error", "-aa"}
	if !slices.Contains(args, "-mp") {
		argv = append(argv, "-mp", strconv.Itoa(FreePort(t, "udp")))
	}
	if transport == "tcp" {
		argv = append(argv, "-t", "t1")
	}
	s := &Sipp{Process: Start(t, "apt-get install -y sip-tester", "sipp", append(argv, args...)...),
		Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	return s, s.waitListening(transport, port)
}

// Wait waits for sipp to end its calls (with -m) and fails the test if
// one failed.
func (s *Sipp) Wait(t testing.TB, timeout time.Duration) {
	t.Helper()
	select {
	case <-s.Done():
	case <-time.After(timeout):
		t.Fatalf("sipp did not finish its calls within %s", timeout)
	}
	if s.Err() != nil {
		t.Fatalf("sipp's call failed: %v", s.Err())
	}
}

// waitListening waits until sipp holds its port.
func (s *Sipp) waitListening(transport string, port int) error {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if s.exited() {
			return fmt.Errorf("sipp exited early: %v\n%s", s.Err(), s.Output())
		}
		if transport == "tcp" {
			if c, err := (&net.Dialer{}).DialContext(context.Background(), "tcp", s.Addr); err == nil {
				_ = c.Close()
				return nil
			}
		} else if UDPBound(port) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("sipp is not listening on %s/%s", transport, s.Addr)
}

// FreePort returns a loopback port nothing listens on now.
func FreePort(t testing.TB, transport string) int {
	t.Helper()
	return testsupport.FreePort(t, transport)
}

// Scenario returns sipp's -sf argument for the scenario file at path with
// each [key] of the key-value pairs kv replaced by its value. (sipp's own
// -key substitution comes too late for a response's status code, which it
// checks when it loads the scenario.)
func Scenario(t testing.TB, path string, kv ...string) []string {
	t.Helper()
	oldnew := make([]string, 0, len(kv))
	for i := 0; i+1 < len(kv); i += 2 {
		oldnew = append(oldnew, "["+kv[i]+"]", kv[i+1])
	}
	return EditedScenario(t, path, oldnew...)
}

// EditedScenario returns sipp's -sf argument for the scenario file at path
// with each old string of the old-new pairs replaced by the new one.
func EditedScenario(t testing.TB, path string, oldnew ...string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for i := 0; i+1 < len(oldnew); i += 2 {
		if !strings.Contains(s, oldnew[i]) {
			t.Fatalf("scenario %s has no %q", path, oldnew[i])
		}
		s = strings.ReplaceAll(s, oldnew[i], oldnew[i+1])
	}
	return InlineScenario(t, s)
}

// InlineScenario returns sipp's -sf argument for a scenario given as text.
func InlineScenario(t testing.TB, xml string) []string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "scenario.xml")
	if err := os.WriteFile(path, []byte(xml), 0o600); err != nil { //nolint:gosec // a test temp dir
		t.Fatal(err)
	}
	return []string{"-sf", path}
}
