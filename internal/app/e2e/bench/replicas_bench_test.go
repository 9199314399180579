package bench_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
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
	talk := EnvDuration(b, "SWITCHBOARD_REPLICAS_TALK", 20*time.Second)
	tone := WriteUlawTone(b)
	Operator.Stop()
	b.Cleanup(func() {
		var err error
		if Operator, err = StartOperator(false); err != nil { // the benchmarks' operator: the API alone
			b.Error(err)
		}
	})
	EnsureNamespace(b, devenv.LeaderElectionNamespace)
	var one float64 // CPU ms per call-second with one replica
	for _, n := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			// A callee per run: sipp stops itself after a minute.
			callee := siptest.StartSipp(b, "udp", append([]string{"-buff_size", "4194304"},
				siptest.Scenario(b, ScenarioFile("bench_stream.xml"), "tone", tone, "talk_ms", strconv.Itoa(int(talk.Milliseconds())))...)...)
			urls := StartCallWorkers(b, n, calls)
			o := NewOrg(b)
			ApplyTrunk(b, o.Ns, "carrier", callee.Addr, func(s *switchboardv1.SIPTrunkSpec) { s.CallsPerSecond = ptr.To[int32](50) })
			a := CreateAgent(b, o.Ns, "held", func(s *switchboardv1.AgentSpec) {
				s.TrunkRef = &switchboardv1.LocalObjectReference{Name: "carrier"}
				s.Greeting = ""
			})
			o.Agent, o.AgentID = a, a.ResolvedID()
			perCallSecond := HoldCalls(b, urls, o, calls, talk)
			if n == 1 {
				one = perCallSecond
			} else if one > 0 {
				b.ReportMetric(100*(perCallSecond/one-1)/float64(n-1), "%-overhead-per-added-replica")
			}
		})
	}
}
