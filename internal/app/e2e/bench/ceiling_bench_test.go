package bench_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/app"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
	"github.com/switchboard-dev/switchboard/internal/calls/placementgate"
)

// BenchmarkCeiling measures, in one run, how close Switchboard comes to
// the apiserver's own ceiling on the per-call path. b.N calls each:
//
//   - ceiling: the four writes an answered call costs the apiserver
//     (create, two status patches, delete) straight through the client,
//     ceilingWriters at once, nothing else running: calls/s.
//   - switchboard: answered simulated calls placed through the REST API by
//     ceilingWriters clients, each followed until its three events reached
//     one webhook endpoint and it has left the cluster: calls/s.
//
// and reports their ratio, the CPU each stage cost per call in
// kube-apiserver, etcd and the benchmark's process (the operator with its
// load generator and receiver): on a shared machine, where calls/s move
// with the neighbours' load, CPU per call is the steadier figure; and the
// apiserver's requests and writes per answered call in Switchboard's
// stage. SWITCHBOARD_CEILING_PROFILE=DIR writes CPU,
// mutex and block profiles of the end-to-end stage alone (the operator
// runs in the benchmark's process) into DIR. SWITCHBOARD_CEILING_REPLICAS=N runs N replicas
// of the operator (leader election on; the POSTs spread over them, and
// each replica is a call worker). Two settings tell where the apiserver's
// extra work per call in Switchboard's stage goes: SWITCHBOARD_CEILING_CONTENT=call
// has the ceiling write what Switchboard writes to a Call (its worker
// label, acceptance annotation, call id, Ready condition, extracted
// values), and SWITCHBOARD_CEILING_WATCH=1 has one client watch the Calls
// meanwhile, as each replica's informer does. Run it
// with `make bench-ceiling`.
func BenchmarkCeiling(b *testing.B) {
	replicas, err := strconv.Atoi(EnvOr("SWITCHBOARD_CEILING_REPLICAS", "1"))
	if err != nil || replicas < 1 {
		b.Fatalf("SWITCHBOARD_CEILING_REPLICAS: want a number of replicas, at least 1")
	}
	o := NewOrg(b)
	// The suite's API-only operator would watch every Call written here:
	// nothing but the stage measured runs.
	Operator.Stop()
	b.Cleanup(func() {
		if op, err := StartOperator(false); err == nil {
			Operator = op
		}
	})
	if os.Getenv("SWITCHBOARD_CEILING_WATCH") != "" {
		defer WatchCalls(b, o.Ns)()
	}
	b.ResetTimer()
	cpu := StartCPU()
	ceiling := MeasureCeiling(b, o, os.Getenv("SWITCHBOARD_CEILING_CONTENT") == "call")
	b.StopTimer()
	cpu.Report(b, "ceiling-")
	urls := StartReplicas(b, replicas)
	rc := NewReceiver(b, nil)
	ApplyEndpoint(b, o.Ns, rc.URL(), nil)
	time.Sleep(time.Second) // the endpoint's own set-up writes (Secret, status) settle
	stopProfiles := ProfileStage(b, os.Getenv("SWITCHBOARD_CEILING_PROFILE"))
	cpu, requests := StartCPU(), ApiserverRequests(b, true)
	b.StartTimer()
	switchboard := MeasureSwitchboard(b, urls, o, rc)
	b.StopTimer()
	cpu.Report(b, "")
	total, lines := WritesBetween(requests, ApiserverRequests(b, true))
	b.ReportMetric(total/float64(b.N), "apiserver-requests/call")
	writes := 0.0
	for _, l := range lines {
		if IsWrite(l.Key) {
			writes += l.N
		}
		b.Logf("%-48s %6.2f per call", l.Key, l.N/float64(b.N))
	}
	b.ReportMetric(writes/float64(b.N), "apiserver-writes/call")
	stopProfiles()
	b.ReportMetric(ceiling, "ceiling-calls/s")
	b.ReportMetric(switchboard, "switchboard-calls/s")
	b.ReportMetric(switchboard/ceiling, "ratio")
}

// BenchmarkSaturation sends POST /v1/calls from 32, then 64, clients back
// to back for SWITCHBOARD_SATURATION_DURATION (10 s) against one whole
// operator: more than the cluster absorbs on this machine. A client that
// gets 503 waits its Retry-After, as the API asks. It reports p50/p99 of
// every answer and of the 201s, the share answered 503 and the calls
// admitted per second, then checks that every admitted call delivered its
// three events. SWITCHBOARD_SATURATION_GATE sets --max-placements-in-flight
// (default: the binary's; -1 measures without the gate). Run it with
// `make bench-saturation`.
func BenchmarkSaturation(b *testing.B) {
	duration := EnvDuration(b, "SWITCHBOARD_SATURATION_DURATION", 10*time.Second)
	gate, err := strconv.Atoi(EnvOr("SWITCHBOARD_SATURATION_GATE", strconv.Itoa(placementgate.DefaultInFlight)))
	if err != nil || gate == 0 {
		b.Fatalf("SWITCHBOARD_SATURATION_GATE: want a number of placements, or -1 for no bound")
	}
	full, err := StartOperator(true, PipelineOptions, func(opts *app.Options) { opts.MaxPlacementsInFlight = gate })
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(full.Stop)
	for _, clients := range []int{32, 64} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			o := NewOrg(b)
			rc := NewReceiver(b, nil)
			ApplyEndpoint(b, o.Ns, rc.URL(), nil)
			b.ResetTimer()
			admitted := 0
			for i := range b.N {
				creates := ApiserverCallCreates(b)
				r := Burst(b, full.BaseURL, o, clients, duration, i)
				r.Report(b, duration)
				ReportCreates(b, creates)
				admitted += r.Admitted
			}
			b.StopTimer()
			// Admitted is placed: every one of them delivers its events.
			WaitEvents(b, rc, 3*admitted)
		})
	}
}
