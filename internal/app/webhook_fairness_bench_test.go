package app_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"
)

// The noisy neighbour, measured (`make bench-fairness`): organization B at
// its endpoint limit, 20 endpoints all pointing at a receiver that answers
// after 9.5 s, places 30 calls (1,800 deliveries); meanwhile organization A
// places calls at a steady rate to one fast receiver. The benchmark reports
// the latency of A's call.started and call.ended events, from the state
// change (the call object's started_at, ended_at) to A's receiver.
const (
	fairnessNoisyEndpoints = 20
	fairnessNoisyCalls     = 30
	fairnessQuietRate      = 5 // calls per second
	fairnessQuietSeconds   = 30
)

func BenchmarkWebhookFairness(b *testing.B) {
	full := startFullOperator(b)
	httpc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	for range b.N {
		quiet, noisy := newOrg(b), newOrg(b)
		slow := newSlowReceiver(b, slowAnswer)
		slowEndpoints(b, noisy, slow, fairnessNoisyEndpoints)
		fast := newReceiver(b, nil)
		applyEndpoint(b, quiet.ns, fast.url(), nil)
		b.ResetTimer()

		for i := range fairnessNoisyCalls {
			if _, err := placeCall(httpc, full.baseURL, noisy, benchNumber(i)); err != nil {
				b.Fatal(err)
			}
		}
		waitFor(b, 30*time.Second, "B's deliveries reach its receiver", func() bool { return slow.holding() > 0 })
		calls := fairnessQuietRate * fairnessQuietSeconds
		tick := time.NewTicker(time.Second / fairnessQuietRate)
		for i := range calls {
			<-tick.C
			if _, err := placeCall(httpc, full.baseURL, quiet, benchNumber(1000+i)); err != nil {
				b.Fatal(err)
			}
		}
		tick.Stop()
		waitFor(b, 5*time.Minute, "A's events arrive", func() bool { return len(fast.deliveries()) >= 3*calls })
		b.StopTimer()

		var latencies []time.Duration
		for _, ls := range eventLatencies(fast.deliveries()) {
			latencies = append(latencies, ls...)
		}
		slices.Sort(latencies)
		b.ReportMetric(ms(latencies[len(latencies)/2]), "A-p50-ms")
		b.ReportMetric(ms(latencies[len(latencies)*99/100]), "A-p99-ms")
		b.ReportMetric(ms(latencies[len(latencies)-1]), "A-max-ms")
		most, _ := slow.most()
		b.ReportMetric(float64(most), "B-most-in-flight")
		b.ReportMetric(float64(slow.received()), "B-deliveries-sent")
		fmt.Printf("A: %d events of %d calls at %d calls/s; B: %d of %d deliveries sent, at most %d at once\n",
			len(latencies), calls, fairnessQuietRate, slow.received(), fairnessNoisyCalls*fairnessNoisyEndpoints*3, most)
	}
}

func waitFor(b *testing.B, limit time.Duration, what string, done func() bool) {
	b.Helper()
	deadline := time.Now().Add(limit)
	for !done() {
		if time.Now().After(deadline) {
			b.Fatalf("timed out after %s waiting until %s", limit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
