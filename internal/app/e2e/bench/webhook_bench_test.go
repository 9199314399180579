package bench_test

import (
	"fmt"
	"testing"

	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
)

// BenchmarkWebhookDeliveries measures deliveries per second. b.N is the
// number of deliveries.
//
//   - stage=pipeline: calls created as fast as the apiserver takes them,
//     each making three events, each event a delivery sent to the
//     receiver: the whole path from a call to its events.
//   - stage=delivery: deliveries queued in the history store for calls that
//     already ended: the delivery worker alone (claim, send, save).
//   - stage=store: the same writes without Switchboard (each delivery
//     queued, then saved once with its attempt), measured before the
//     worker starts: the ceiling the history store (SQLite) sets on the
//     machine.
func BenchmarkWebhookDeliveries(b *testing.B) {
	b.Run("stage=store", BenchStoreCeiling)
	StartFullOperator(b)
	b.Run("stage=delivery", BenchDeliveryStage)
	b.Run("stage=pipeline", BenchPipeline)
}

// BenchmarkWebhookLatency places calls through the REST API at a steady
// rate for five seconds and measures, for each call.started and call.ended
// event, the time from the state change (the call object's started_at and
// ended_at) to the receiver. It reports p50 and p99 over all of them, and
// of the POSTs that placed the calls.
func BenchmarkWebhookLatency(b *testing.B) {
	full := StartFullOperator(b)
	for _, rate := range []int{10, 25, 50, 100, 150} {
		b.Run(fmt.Sprintf("calls-per-s=%d", rate), func(b *testing.B) { BenchLatency(b, full, rate) })
	}
}
