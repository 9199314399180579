package apptest

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/callid"
)

// BenchNumber is the i-th of a million distinct valid numbers, none of which
// the simulated carrier refuses (their last four digits are 1000-9999).
func BenchNumber(i int) string {
	return fmt.Sprintf("+1415%03d%04d", 200+i/9000%700, 1000+i%9000)
}

// RawCall is the Call the REST API creates for the benchmark request.
func RawCall(o *Org, number string) *switchboardv1.Call {
	return &switchboardv1.Call{
		ObjectMeta: metav1.ObjectMeta{Namespace: o.Ns, Name: callid.ResourceName(callid.New())},
		Spec: switchboardv1.CallSpec{AgentID: o.AgentID, ToNumber: number, Source: switchboardv1.SourceAPI,
			Variables: JSONObject(`{"customer_name":"Ada"}`), Metadata: JSONObject(`{"order":7}`)},
	}
}

func PostCall(httpc *http.Client, o *Org, number string) error {
	return PostCallTo(httpc, Operator.BaseURL, o, number)
}

// RunConcurrent runs b.N operations over workers goroutines and reports
// throughput and latency percentiles.
func RunConcurrent(b *testing.B, workers int, op func(i int) error) {
	latencies := make([]time.Duration, b.N)
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(b.N); i = next.Add(1) - 1 {
				t0 := time.Now()
				if err := op(int(i)); err != nil {
					failed.Store(err)
					return
				}
				latencies[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if err, ok := failed.Load().(error); ok {
		b.Fatal(err)
	}
	slices.Sort(latencies)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
	b.ReportMetric(Ms(latencies[len(latencies)/2]), "p50-ms")
	b.ReportMetric(Ms(latencies[len(latencies)*99/100]), "p99-ms")
}

func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
