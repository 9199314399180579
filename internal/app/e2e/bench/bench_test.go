package bench_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"testing"

	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
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
		o := NewOrg(b)
		raw := func(b *testing.B) {
			RunConcurrent(b, workers, func(i int) error {
				return K8s.Create(context.Background(), RawCall(o, BenchNumber(i)))
			})
		}
		api := func(b *testing.B) {
			httpc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
			RunConcurrent(b, workers, func(i int) error { return PostCall(httpc, o, BenchNumber(i)) })
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
