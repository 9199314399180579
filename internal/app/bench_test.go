package app_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/callid"
)

// BenchmarkCreateCall measures POST /v1/calls against the raw cost of
// creating the same Call resources straight through the client, in the
// same run and against the same envtest apiserver. Run it with `make bench`;
// it reports accepted calls per second and p50/p99 latency for each.
//
// Every object created makes the next create a little dearer (etcd and the
// watch caches grow), so `make bench` runs it several times on a fresh
// control plane, alternating which path goes first (SWITCHBOARD_BENCH_API_FIRST).
func BenchmarkCreateCall(b *testing.B) {
	for _, workers := range []int{8, 32} {
		o := newOrg(b)
		raw := func(b *testing.B) {
			runConcurrent(b, workers, func(i int) error {
				return k8s.Create(context.Background(), rawCall(o, benchNumber(i)))
			})
		}
		api := func(b *testing.B) {
			httpc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
			runConcurrent(b, workers, func(i int) error { return postCall(httpc, o, benchNumber(i)) })
		}
		paths := []struct {
			name string
			run  func(*testing.B)
		}{{"raw-client", raw}, {"rest-api", api}}
		if os.Getenv("SWITCHBOARD_BENCH_API_FIRST") != "" {
			slices.Reverse(paths)
		}
		for _, p := range paths {
			b.Run(fmt.Sprintf("workers=%d/path=%s", workers, p.name), p.run)
		}
	}
}

// benchNumber is the i-th of a million distinct valid numbers, none of which
// the simulated carrier refuses (their last four digits are 1000-9999).
func benchNumber(i int) string {
	return fmt.Sprintf("+1415%03d%04d", 200+i/9000%700, 1000+i%9000)
}

// rawCall is the Call the REST API creates for the benchmark request.
func rawCall(o *org, number string) *switchboardv1.Call {
	return &switchboardv1.Call{
		ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: callid.ResourceName(callid.New())},
		Spec: switchboardv1.CallSpec{AgentID: o.agentID, ToNumber: number, Source: switchboardv1.SourceAPI,
			Variables: jsonObject(`{"customer_name":"Ada"}`), Metadata: jsonObject(`{"order":7}`)},
	}
}

func postCall(httpc *http.Client, o *org, number string) error {
	return postCallTo(httpc, operator.baseURL, o, number)
}

// runConcurrent runs b.N operations over workers goroutines and reports
// throughput and latency percentiles.
func runConcurrent(b *testing.B, workers int, op func(i int) error) {
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
	b.ReportMetric(ms(latencies[len(latencies)/2]), "p50-ms")
	b.ReportMetric(ms(latencies[len(latencies)*99/100]), "p99-ms")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
