package engine

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestProbeAnswered(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	for _, tc := range []struct {
		name, status, reason string
		healthy, authFailed  bool
	}{
		{"200", "200", "OK", true, false},
		// Carriers that do not route OPTIONS without a user still work.
		{"404", "404", "Not Found", true, false},
		{"405", "405", "Method Not Allowed", true, false},
		{"503", "503", "Service Unavailable", false, false},
		{"403", "403", "Forbidden", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startSipp(t, "udp", scenario(t, "options.xml", "status", tc.status, "reason", tc.reason)...)
			r := e.Probe(t.Context(), Trunk{Address: "sip:" + s.addr})
			s.wait(t)
			if !r.Reachable || r.StatusCode == 0 || r.Healthy() != tc.healthy || r.AuthFailed != tc.authFailed {
				t.Errorf("probe %+v: want reachable, healthy %v, auth failed %v", r, tc.healthy, tc.authFailed)
			}
			if !tc.healthy && (r.Err == nil || !strings.Contains(r.Err.Error(), tc.status)) {
				t.Errorf("error %v does not name the status %s", r.Err, tc.status)
			}
		})
	}
}

func TestProbeOverTCP(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	s := startSipp(t, "tcp", scenario(t, "options.xml", "status", "200", "reason", "OK")...)
	r := e.Probe(t.Context(), Trunk{Address: "sip:" + s.addr, Transport: "tcp"})
	s.wait(t)
	if !r.Healthy() || r.StatusCode != 200 || r.RTT <= 0 {
		t.Errorf("probe %+v: want a healthy 200 with its round trip", r)
	}
}

func TestProbeDigestAuth(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	for _, tc := range []struct {
		name, password string
		healthy        bool
	}{
		{"right password", "secret", true},
		{"wrong password", "guess", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startSipp(t, "udp", scenario(t, "options_auth.xml", "user", "alice", "pass", "secret")...)
			r := e.Probe(t.Context(), Trunk{Address: "sip:" + s.addr, Username: "alice", Password: tc.password})
			s.wait(t)
			if r.Healthy() != tc.healthy || r.AuthFailed == tc.healthy || !r.Reachable {
				t.Errorf("probe %+v: want healthy %v", r, tc.healthy)
			}
		})
	}
}

// A trunk that challenges us when we have no credentials is refusing us.
func TestProbeChallengedWithoutCredentials(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	s := startSipp(t, "udp", scenario(t, "options.xml", "status", "401", "reason", "Unauthorized")...)
	r := e.Probe(t.Context(), Trunk{Address: "sip:" + s.addr})
	s.wait(t)
	if !r.AuthFailed || !r.Reachable || r.Err == nil || !strings.Contains(r.Err.Error(), "none are configured") {
		t.Errorf("probe %+v: want auth failed for lack of credentials", r)
	}
}

func TestProbeUnreachable(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	for _, transport := range []string{"udp", "tcp"} {
		t.Run(transport, func(t *testing.T) {
			addr := "sip:127.0.0.1:" + strconv.Itoa(freePort(t, transport))
			start := time.Now()
			r := e.Probe(t.Context(), Trunk{Address: addr, Transport: transport})
			if r.Reachable || r.Healthy() || r.Err == nil || r.StatusCode != 0 {
				t.Errorf("probe %+v: want unreachable with an error", r)
			}
			// A refused connection reads as a silent trunk: which ports
			// are open is not the organization's to learn.
			if r.Err.Error() != "no answer to OPTIONS within 5s" || r.Cause == nil {
				t.Errorf("probe error %q (cause %v): want the silent trunk's message, the system's error apart", r.Err, r.Cause)
			}
			if took := time.Since(start); took > DefaultProbeTimeout+2*time.Second {
				t.Errorf("probe took %s, longer than its timeout", took)
			}
		})
	}
}

func TestProbeBadAddress(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	r := e.Probe(t.Context(), Trunk{Address: "sip:"})
	if r.Reachable || r.Err == nil || !strings.Contains(r.Err.Error(), "not a sip:host") {
		t.Errorf("probe %+v: want an address error", r)
	}
}

// The listener race is recognised through sipgo's wrapping, and nothing
// else is taken for it.
func TestIsListenerRace(t *testing.T) {
	bind := &net.OpError{Op: "listen", Net: "udp", Err: os.NewSyscallError("bind", syscall.EADDRINUSE)}
	if !isListenerRace(fmt.Errorf("client transcation failed to request connection: %w", bind)) {
		t.Error("EADDRINUSE from the client's own bind not recognised")
	}
	refused := &net.OpError{Op: "read", Net: "udp", Err: os.NewSyscallError("recvfrom", syscall.ECONNREFUSED)}
	if isListenerRace(fmt.Errorf("x: %w", refused)) || isListenerRace(errors.New("address already in use")) {
		t.Error("another error taken for the listener race")
	}
}
