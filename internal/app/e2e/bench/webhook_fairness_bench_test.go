package bench_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
)

func BenchmarkWebhookFairness(b *testing.B) {
	full := StartFullOperator(b)
	httpc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	for range b.N {
		quiet, noisy := NewOrg(b), NewOrg(b)
		slow := NewSlowReceiver(b, SlowAnswer)
		SlowEndpoints(b, noisy, slow, FairnessNoisyEndpoints)
		fast := NewReceiver(b, nil)
		ApplyEndpoint(b, quiet.Ns, fast.URL(), nil)
		b.ResetTimer()

		for i := range FairnessNoisyCalls {
			if _, err := PlaceCall(httpc, full.BaseURL, noisy, BenchNumber(i)); err != nil {
				b.Fatal(err)
			}
		}
		WaitFor(b, 30*time.Second, "B's deliveries reach its receiver", func() bool { return slow.Holding() > 0 })
		calls := FairnessQuietRate * FairnessQuietSeconds
		tick := time.NewTicker(time.Second / FairnessQuietRate)
		for i := range calls {
			<-tick.C
			if _, err := PlaceCall(httpc, full.BaseURL, quiet, BenchNumber(1000+i)); err != nil {
				b.Fatal(err)
			}
		}
		tick.Stop()
		WaitFor(b, 5*time.Minute, "A's events arrive", func() bool { return len(fast.Deliveries()) >= 3*calls })
		b.StopTimer()

		var latencies []time.Duration
		for _, ls := range EventLatencies(fast.Deliveries()) {
			latencies = append(latencies, ls...)
		}
		slices.Sort(latencies)
		b.ReportMetric(Ms(latencies[len(latencies)/2]), "A-p50-ms")
		b.ReportMetric(Ms(latencies[len(latencies)*99/100]), "A-p99-ms")
		b.ReportMetric(Ms(latencies[len(latencies)-1]), "A-max-ms")
		most, _ := slow.Most()
		b.ReportMetric(float64(most), "B-most-in-flight")
		b.ReportMetric(float64(slow.Received()), "B-deliveries-sent")
		fmt.Printf("A: %d events of %d calls at %d calls/s; B: %d of %d deliveries sent, at most %d at once\n",
			len(latencies), calls, FairnessQuietRate, slow.Received(), FairnessNoisyCalls*FairnessNoisyEndpoints*3, most)
	}
}
