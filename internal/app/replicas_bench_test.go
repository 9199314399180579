package app_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/zaf/g711"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/app"
	"github.com/switchboard-dev/switchboard/internal/devenv"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/siptest"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// BenchmarkReplicas holds SWITCHBOARD_REPLICAS_CALLS (100) concurrent
// recorded SIP calls to a sipp callee over one, two, then three replicas
// in this process (each its own call worker with its own SIP listener and
// RTP ports; leader election on past one). The callee streams a tone for
// SWITCHBOARD_REPLICAS_TALK (20 s) and hangs up; the calls are placed at
// 30 a second, spread over the replicas' APIs, and all are up at once. On
// one machine the replicas share its cores, so more replicas cannot carry
// more; what the benchmark shows is what each added replica costs: the
// calls on each, the replicas' CPU while idle, and the CPU per
// call-second over the calls' whole lives (idle CPU taken out) against
// one replica's (the issue allows 10 % per added replica). Run it with
// `make bench-replicas`.
func BenchmarkReplicas(b *testing.B) {
	calls := testsupport.EnvPositive(b, "SWITCHBOARD_REPLICAS_CALLS", 100)
	talk := envDuration(b, "SWITCHBOARD_REPLICAS_TALK", 20*time.Second)
	tone := writeUlawTone(b)
	operator.stop()
	b.Cleanup(func() {
		var err error
		if operator, err = startOperator(false); err != nil { // the benchmarks' operator: the API alone
			b.Error(err)
		}
	})
	ensureNamespace(b, devenv.LeaderElectionNamespace)
	var one float64 // CPU ms per call-second with one replica
	for _, n := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			// A callee per run: sipp stops itself after a minute.
			callee := siptest.StartSipp(b, "udp", append([]string{"-buff_size", "4194304"},
				siptest.Scenario(b, scenarioFile("bench_stream.xml"), "tone", tone, "talk_ms", strconv.Itoa(int(talk.Milliseconds())))...)...)
			urls := startCallWorkers(b, n, calls)
			o := newOrg(b)
			applyTrunk(b, o.ns, "carrier", callee.Addr, func(s *switchboardv1.SIPTrunkSpec) { s.CallsPerSecond = ptr.To[int32](50) })
			a := createAgent(b, o.ns, "held", func(s *switchboardv1.AgentSpec) {
				s.TrunkRef = &switchboardv1.LocalObjectReference{Name: "carrier"}
				s.Greeting = ""
			})
			o.agent, o.agentID = a, a.ResolvedID()
			perCallSecond := holdCalls(b, urls, o, calls, talk)
			if n == 1 {
				one = perCallSecond
			} else if one > 0 {
				b.ReportMetric(100*(perCallSecond/one-1)/float64(n-1), "%-overhead-per-added-replica")
			}
		})
	}
}

// startCallWorkers starts n operators that are call workers with room for
// calls each, and returns their API's base URLs; they stop when b ends.
// The first is the suite's operator meanwhile.
func startCallWorkers(b *testing.B, n, calls int) []string {
	var urls []string
	for i := range n {
		op, err := startOperator(true, func(opts *app.Options) {
			opts.LeaderElection = app.LeaderElectionOptions{Enabled: n > 1, Namespace: devenv.LeaderElectionNamespace}
			opts.Worker.ID = fmt.Sprintf("replica-%d", i)
			opts.Worker.Capacity = calls + 10
			opts.MaxConcurrentCalls = calls + 10
			opts.CallNormalEvents = false
		})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(op.stop)
		if i == 0 {
			operator = op // the suite's helpers (newOrg) talk to it
		}
		urls = append(urls, op.baseURL)
	}
	return urls
}

// holdCalls measures the replicas idle for a few seconds, then places
// calls at 30 a second over urls, checks that all are up at once, and
// waits for each to end with its recording stored. It returns the CPU this
// process spent per call-second over the calls' whole lives (placement,
// media, recording, post-call), the idle replicas' own CPU taken out.
func holdCalls(b *testing.B, urls []string, o *org, calls int, talk time.Duration) float64 {
	idle := cpuRate(b, 5*time.Second) // the measurement itself: nothing runs meanwhile
	httpc := &http.Client{Timeout: time.Minute}
	pace := time.NewTicker(time.Second / 30)
	defer pace.Stop()
	b.ResetTimer()
	cpu0, t0 := cpuTime(os.Getpid()), time.Now()
	for i := range calls {
		<-pace.C
		if err := postCallTo(httpc, urls[i%len(urls)], o, benchNumber(i)); err != nil {
			b.Fatalf("call %d: %v", i, err)
		}
	}
	live := waitCalls(b, o.ns, talk, func(live []switchboardv1.Call) bool { return len(live) == calls && allAnswered(live) })
	perReplica := map[string]int{}
	for _, c := range live {
		perReplica[c.Labels[switchboardv1.WorkerLabel]]++
	}
	waitRecorded(b, o.ns, calls, talk)
	elapsed := time.Since(t0)
	cpu := cpuTime(os.Getpid()) - cpu0 - time.Duration(idle*float64(elapsed))
	b.StopTimer()
	most := 0
	for _, n := range perReplica {
		most = max(most, n)
	}
	perCallSecond := ms(cpu) / (float64(calls) * talk.Seconds())
	b.ReportMetric(float64(calls)/float64(len(urls)), "calls/replica")
	b.ReportMetric(float64(most), "most-calls-on-a-replica")
	b.ReportMetric(1000*idle, "idle-cpu-ms/s")
	b.ReportMetric(perCallSecond, "operator-cpu-ms/call-second")
	b.Logf("calls per worker: %v", perReplica)
	return perCallSecond
}

// cpuRate is the share of a core this process uses over d.
func cpuRate(b *testing.B, d time.Duration) float64 {
	b.Helper()
	cpu0, t0 := cpuTime(os.Getpid()), time.Now()
	time.Sleep(d)
	return float64(cpuTime(os.Getpid())-cpu0) / float64(time.Since(t0))
}

// allAnswered: every call is in progress, answered.
func allAnswered(calls []switchboardv1.Call) bool {
	for _, c := range calls {
		if c.Status.AnsweredAt == nil || c.CurrentPhase() != switchboardv1.CallInProgress {
			return false
		}
	}
	return true
}

// waitCalls lists the Calls of ns until done says so of them, within
// talk (at least 30 s), and returns them.
func waitCalls(b *testing.B, ns string, talk time.Duration, done func([]switchboardv1.Call) bool) []switchboardv1.Call {
	deadline := time.Now().Add(max(talk, 30*time.Second))
	for {
		var list switchboardv1.CallList
		if err := k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			b.Fatal(err)
		}
		if done(list.Items) {
			return list.Items
		}
		if time.Now().After(deadline) {
			b.Fatalf("the calls did not get there in time: %d listed", len(list.Items))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitRecorded waits for every call to end answered with its recording
// stored.
func waitRecorded(b *testing.B, ns string, calls int, talk time.Duration) {
	waitCalls(b, ns, talk+30*time.Second, func(live []switchboardv1.Call) bool {
		recorded := 0
		for _, c := range live {
			if c.Status.Disposition == switchboardv1.DispositionAnswered && c.Status.Recording != nil {
				recorded++
			}
		}
		return recorded == calls
	})
}

// writeUlawTone writes a second of a 400 Hz tone as raw PCMU, which the
// callee loops.
func writeUlawTone(b *testing.B) string {
	ulaw := make([]byte, 8000)
	for i := range ulaw {
		ulaw[i] = g711.EncodeUlawFrame(int16(8000 * math.Sin(2*math.Pi*400*float64(i)/8000)))
	}
	path := filepath.Join(b.TempDir(), "tone.ulaw")
	if err := os.WriteFile(path, ulaw, 0o600); err != nil {
		b.Fatal(err)
	}
	return path
}
