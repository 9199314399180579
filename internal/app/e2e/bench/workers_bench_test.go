package bench_test

import (
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/app"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
	"github.com/switchboard-dev/switchboard/internal/callid"
)

// BenchmarkAssignment measures how long a call waits for its worker at a
// steady rate (SWITCHBOARD_BENCH_RATE calls/s, default 100), on both paths:
//
//   - applied: Calls created as kubectl applies them, without a worker; the
//     leader assigns each. The wait runs from the create's return until an
//     informer sees the Call labelled.
//   - rest: calls placed through POST /v1/calls, assigned inside their
//     create by a pick from the cached Leases: a Call first seen already
//     labelled waited for nothing after its create (the benchmark counts
//     them), and what it waited inside is the pick, which the metric
//     observes. The POSTs' latency is reported beside it.
//
// Each reports p50/p99 and, to show they agree, what the operator's
// switchboard_call_assignment_seconds observed over the same calls: its
// mean and the bucket bound its p99 falls under.
//
// The calls go to a worker of another process (a Lease this benchmark
// renews, as that replica would, with room for every call), so that only
// the assignment loads this machine: carrying 100 calls/s through their
// whole lives is past this apiserver's ceiling (`make bench-ceiling`), and
// the wait measured would be that backlog's. SWITCHBOARD_BENCH_DIAL=1 has
// the benchmark's own operator carry them instead. Run it with
// `make bench-assignment`.
func BenchmarkAssignment(b *testing.B) {
	dial := os.Getenv("SWITCHBOARD_BENCH_DIAL") == "1"
	Operator.Stop()
	op, err := StartOperator(true, func(o *app.Options) {
		o.Worker.ID = "bench-local"
		o.Worker.Capacity = 100_000 // room for every call: the wait measured is the assignment's
		if !dial {
			o.Worker.Capacity = 1 // the calls go to the remote worker
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	Operator = op
	b.Cleanup(func() {
		Operator.Stop()
		if Operator, err = StartOperator(false); err != nil { // the benchmarks' operator: the API alone
			b.Error(err)
		}
	})
	if !dial {
		RemoteWorker(b)
	}
	b.Run("path=applied", func(b *testing.B) { BenchAssignment(b, ApplyUnassigned) })
	b.Run("path=rest", func(b *testing.B) {
		httpc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
		BenchAssignment(b, func(b *testing.B, o *Org, i int) (string, error) {
			id, err := PlaceCall(httpc, Operator.BaseURL, o, BenchNumber(i))
			return callid.ResourceName(id), err
		})
	})
}
