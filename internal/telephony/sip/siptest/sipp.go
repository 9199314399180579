// Package siptest runs real SIP peers (sipp, from Debian's sip-tester) for
// tests of packages that place calls. A missing binary fails the test: the
// calls must meet a real peer.
package siptest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Sipp is one running sipp.
type Sipp struct {
	// Addr is the host:port it listens on.
	Addr string
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{}
	err  error // exit status, once done is closed
}

// StartSipp starts sipp on a free loopback port and kills it when the test
// ends. transport is "udp" or "tcp"; args pick the scenario (-sn uas, or
// Scenario's -sf). It takes any number of calls: sipp counts the OPTIONS
// it answers as calls, so a call limit (-m) would count the SIPTrunk
// controller's probes. A port found free can be taken by another process
// before sipp binds it: then it tries another.
func StartSipp(t testing.TB, transport string, args ...string) *Sipp {
	t.Helper()
	for attempt := 1; ; attempt++ {
		s, err := launch(t, transport, FreePort(t, transport), args...)
		if err == nil {
			return s
		}
		if attempt == 5 || !strings.Contains(s.Output(), "Address already in use") {
			t.Fatal(err)
		}
	}
}

// StartSippOn is StartSipp on a given port (a trunk already pointing
// there, say).
func StartSippOn(t testing.TB, transport string, port int, args ...string) *Sipp {
	t.Helper()
	s, err := launch(t, transport, port, args...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func launch(t testing.TB, transport string, port int, args ...string) (*Sipp, error) {
	t.Helper()
	if _, err := exec.LookPath("sipp"); err != nil {
		t.Fatalf("sipp is not on PATH: these tests need a real SIP peer; install it with "+
			"`apt-get install -y sip-tester` (%v)", err)
	}
	// -aa answers OPTIONS (the SIPTrunk controller's probes) and other
	// out-of-dialog requests 200 without counting them as calls.
	argv := []string{"-i", "127.0.0.1", "-p", strconv.Itoa(port), "-mp", strconv.Itoa(FreePort(t, "udp")),
		"-nostdin", "-timeout", "60s", "-timeout_error", "-aa"}
	if transport == "tcp" {
		argv = append(argv, "-t", "t1")
	}
	argv = append(argv, args...)
	s := &Sipp{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), out: &lockedBuffer{}, done: make(chan struct{})}
	s.cmd = exec.CommandContext(context.Background(), "sipp", argv...) // killed at cleanup
	s.cmd.Dir = t.TempDir()                                            // sipp writes logs to the working directory
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start sipp: %v", err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		<-s.done
		if t.Failed() {
			t.Logf("sipp %v:\n%s", argv, s.Output())
		}
	})
	return s, s.waitListening(transport, port)
}

// Output is what sipp printed so far.
func (s *Sipp) Output() string { return s.out.String() }

// waitListening waits until sipp holds its port. It never binds the port
// itself, which could take it from under sipp.
func (s *Sipp) waitListening(transport string, port int) error {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return fmt.Errorf("sipp exited early: %v\n%s", s.err, s.Output())
		default:
		}
		if transport == "tcp" {
			if c, err := (&net.Dialer{}).DialContext(context.Background(), "tcp", s.Addr); err == nil {
				_ = c.Close()
				return nil
			}
		} else if udpBound(port) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("sipp is not listening on %s/%s", transport, s.Addr)
}

// udpBound reports whether a UDP socket is bound to 127.0.0.1:port, from
// the kernel's table (/proc/net/udp, addresses in hex).
func udpBound(port int) bool {
	table, err := os.ReadFile("/proc/net/udp")
	if err != nil {
		return false
	}
	return strings.Contains(string(table), fmt.Sprintf(" 0100007F:%04X ", port))
}

// FreePort returns a loopback port nothing listens on now.
func FreePort(t testing.TB, transport string) int {
	t.Helper()
	if transport == "tcp" {
		l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = l.Close() }()
		return l.Addr().(*net.TCPAddr).Port
	}
	c, err := (&net.ListenConfig{}).ListenPacket(context.Background(), "udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// Scenario returns sipp's -sf argument for the scenario file at path with
// each [key] of the key-value pairs kv replaced by its value. (sipp's own
// -key substitution comes too late for a response's status code, which it
// checks when it loads the scenario.)
func Scenario(t testing.TB, path string, kv ...string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for i := 0; i+1 < len(kv); i += 2 {
		key := "[" + kv[i] + "]"
		if !strings.Contains(s, key) {
			t.Fatalf("scenario %s has no %s", path, key)
		}
		s = strings.ReplaceAll(s, key, kv[i+1])
	}
	out := filepath.Join(t.TempDir(), filepath.Base(path))
	if err := os.WriteFile(out, []byte(s), 0o600); err != nil { //nolint:gosec // a test temp dir
		t.Fatal(err)
	}
	return []string{"-sf", out}
}

// InlineScenario returns sipp's -sf argument for a scenario given as text.
func InlineScenario(t testing.TB, xml string) []string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "scenario.xml")
	if err := os.WriteFile(path, []byte(xml), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"-sf", path}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
