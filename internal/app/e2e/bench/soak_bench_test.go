package bench_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/app"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
	"github.com/switchboard-dev/switchboard/internal/telephony/sim"
)

// BenchmarkSoak places calls through the REST API at a steady rate for a
// long time (30 minutes at 50 calls/s by default) with a short
// --call-retention (5 minutes), one webhook endpoint subscribed to every
// event, and the simulated carrier's default timings. Every minute it
// prints the Calls in the cluster, the resident memory of kube-apiserver,
// etcd and the test process (the operator and the load generator; the
// receiver runs in a process of its own), the Go heap, the receiver's
// memory and the history store's size: after the
// first retention window they should stay flat. At the end it checks that
// every call placed is listed by GET /v1/calls exactly once and final, and
// that every one of its three events arrived. Run it with
// `make bench-soak` (SOAK_DURATION, SOAK_RATE, SOAK_RETENTION adjust it).
func BenchmarkSoak(b *testing.B) {
	duration := EnvDuration(b, "SWITCHBOARD_SOAK_DURATION", 30*time.Minute)
	retention := EnvDuration(b, "SWITCHBOARD_SOAK_RETENTION", 5*time.Minute)
	sample := EnvDuration(b, "SWITCHBOARD_SOAK_SAMPLE", time.Minute)
	rate, err := strconv.Atoi(EnvOr("SWITCHBOARD_SOAK_RATE", "50"))
	if err != nil || rate <= 0 {
		b.Fatalf("SWITCHBOARD_SOAK_RATE: want a positive number of calls per second")
	}
	full, err := StartOperator(true, func(o *app.Options) {
		o.SimTimings = sim.DefaultTimings()
		o.MaxConcurrentCalls = 64
		o.Retention.Calls = retention
		o.Retention.Recordings = 2 * retention // keeps the disk bounded too
		o.CallNormalEvents = false             // the default outside --dev
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(full.Stop)
	o := NewOrg(b)
	events := StartReceiverProcess(b)
	ApplyEndpoint(b, o.Ns, events.URL(), nil)

	b.ResetTimer()
	for range b.N {
		s := &Soak{B: b, BaseURL: full.BaseURL, Org: o, Events: events, Start: time.Now()}
		s.StoreBefore = StoreBytes()
		s.Run(duration, rate, sample)
		s.Check()
	}
}
