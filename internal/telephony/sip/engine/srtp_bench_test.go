package engine

// Benchmarks of SIP over TLS and SRTP (make bench-sip). sipp has no SRTP,
// so the callee is a diago user agent in a process of its own (this test
// binary again, TestBenchCallee), whose CPU time is read from
// /proc/<pid>/stat and reported apart from ours. It listens on TLS with a
// certificate the benchmark makes, answers every call with the media the
// offer asks for (SRTP for an SDES offer, RTP otherwise) and echoes what it
// hears.
//
// BenchmarkSRTPCallSeconds: SWITCHBOARD_BENCH_SRTP_CALLS (default 100)
// concurrent recorded calls over one TLS connection, started 20 ms apart,
// each held SWITCHBOARD_BENCH_SRTP_TALK (default 10s) while the engine
// sends silence and records the echo; once with media rtp and once with
// srtp-required. It reports our CPU per call-second (cpu_us/call_s) and
// the callee's. Run it with -benchtime=1x.
//
// BenchmarkTLSSetup: SWITCHBOARD_BENCH_TLS_CALLS (default 100) calls one
// after the other over TLS with SRTP, each hung up 100 ms after its
// answer: the call set-up time (Place's start to the 200's arrival) at
// p50 and p95 over the calls that reused the connection, and the first
// call's (TCP and TLS handshakes, then the INVITE).

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/emiago/diago"
	"github.com/emiago/sipgo"

	"github.com/switchboard-dev/switchboard/internal/telephony/sip/siptest"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

const benchCalleeEnv = "SWITCHBOARD_BENCH_CALLEE_DIR"

// TestBenchCallee is the benchmarks' TLS callee when run by them (the
// folder in SWITCHBOARD_BENCH_CALLEE_DIR holds its certificate and port);
// otherwise it skips.
func TestBenchCallee(t *testing.T) {
	dir := os.Getenv(benchCalleeEnv)
	if dir == "" {
		t.Skip("the TLS callee of BenchmarkSRTPCallSeconds and BenchmarkTLSSetup, run by them")
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	port, err := os.ReadFile(filepath.Join(dir, "port"))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(string(port))
	ua, err := sipgo.NewUA(sipgo.WithUserAgent("bench-callee"))
	if err != nil {
		t.Fatal(err)
	}
	dg := diago.NewDiago(ua, diago.WithTransport(diago.Transport{Transport: "tls", BindHost: "127.0.0.1", BindPort: p,
		TLSConf: &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}, TLSURINoSIPS: true,
		MediaSRTP: 1}))
	_ = dg.Serve(context.Background(), func(d *diago.DialogServerSession) {
		if d.Answer() == nil {
			_ = d.Echo()
		}
	})
}

// benchCallee is a running TestBenchCallee.
type benchCallee struct {
	addr  string
	roots *x509.CertPool
	cmd   *exec.Cmd
}

func startBenchCallee(b *testing.B) *benchCallee {
	b.Helper()
	ca := newTestCA(b, "bench CA")
	cert, key := ca.server(b)
	dir := b.TempDir()
	port := siptest.FreePort(b, "tcp")
	for name, data := range map[string][]byte{"cert.pem": cert, "key.pem": key, "port": []byte(strconv.Itoa(port))} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	cmd := exec.CommandContext(context.Background(), os.Args[0], "-test.run=^TestBenchCallee$", "-test.count=1") //nolint:gosec // this test binary
	cmd.Env = append(os.Environ(), benchCalleeEnv+"="+dir)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	c := &benchCallee{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), roots: ca.pool(), cmd: cmd}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if conn, err := (&net.Dialer{}).DialContext(b.Context(), "tcp", c.addr); err == nil {
			_ = conn.Close()
			return c
		}
		if time.Now().After(deadline) {
			b.Fatal("the bench callee does not listen")
		}
	}
}

func (c *benchCallee) trunk(media string) Trunk {
	return Trunk{Address: "sip:" + c.addr, Transport: "tls", TLS: &TrunkTLS{Roots: c.roots}, Media: media}
}

// cpu is the callee's CPU time so far.
func (c *benchCallee) cpu(b *testing.B) time.Duration {
	return pidCPU(b, c.cmd.Process.Pid)
}

func BenchmarkSRTPCallSeconds(b *testing.B) {
	calls := testsupport.EnvPositive(b, "SWITCHBOARD_BENCH_SRTP_CALLS", 100)
	talk := envDuration(b, "SWITCHBOARD_BENCH_SRTP_TALK", 10*time.Second)
	for _, media := range []string{MediaRTP, MediaSRTPRequired} {
		b.Run(media, func(b *testing.B) {
			callee := startBenchCallee(b)
			e := newEngine(b, EngineConfig{})
			for range b.N {
				self0, callee0 := selfCPU(b), callee.cpu(b)
				results := placeConcurrently(b, e, callee.trunk(media), calls, talk)
				self, calleeCPU := selfCPU(b)-self0, callee.cpu(b)-callee0
				failed := 0
				for _, r := range results {
					if !r.Answered || r.HangupBy != HangupByMaxDuration {
						failed++
					}
				}
				callSeconds := float64(calls) * talk.Seconds()
				b.ReportMetric(float64(self.Microseconds())/callSeconds, "cpu_us/call_s")
				b.ReportMetric(float64(calleeCPU.Microseconds())/callSeconds, "callee_cpu_us/call_s")
				b.ReportMetric(float64(failed), "failed")
			}
		})
	}
}

// placeConcurrently places calls recorded calls 20 ms apart, each held
// talk, and returns their results once all ended.
func placeConcurrently(b *testing.B, e *Engine, trunk Trunk, calls int, talk time.Duration) []Result {
	dir := b.TempDir()
	results := make([]Result, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			res, err := e.Place(b.Context(), trunk, CallSpec{From: "+14155550100", To: "+14155550123",
				MaxDuration: talk, RecordPath: filepath.Join(dir, fmt.Sprintf("%d.wav", i))})
			if err != nil {
				b.Error(err)
			}
			results[i] = res
		})
		time.Sleep(20 * time.Millisecond)
	}
	wg.Wait()
	return results
}

func BenchmarkTLSSetup(b *testing.B) {
	calls := testsupport.EnvPositive(b, "SWITCHBOARD_BENCH_TLS_CALLS", 100)
	callee := startBenchCallee(b)
	for range b.N {
		e := newEngine(b, EngineConfig{}) // a new engine: the first call opens the connection
		var setups []time.Duration
		for range calls {
			start := time.Now()
			var answered time.Time
			res, err := e.Place(b.Context(), callee.trunk(MediaSRTPRequired), CallSpec{From: "+14155550100",
				To: "+14155550123", MaxDuration: 100 * time.Millisecond, OnAnswer: func(at time.Time) { answered = at }})
			if err != nil || !res.Answered {
				b.Fatalf("call %d: %+v, %v", len(setups), res, err)
			}
			setups = append(setups, answered.Sub(start))
		}
		_ = e.Close()
		first, reused := setups[0], slices.Sorted(slices.Values(setups[1:]))
		b.ReportMetric(ms(first), "first_setup_ms")
		b.ReportMetric(ms(reused[len(reused)/2]), "p50_setup_ms")
		b.ReportMetric(ms(reused[len(reused)*95/100]), "p95_setup_ms")
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
