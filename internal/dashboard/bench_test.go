package dashboard_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// benchCallsEnv sets how many calls BenchmarkPages stores; the default
// makes a quick run, `make bench-dashboard` stores a million.
const benchCallsEnv = "SWITCHBOARD_DASHBOARD_BENCH_CALLS"

// BenchmarkPages measures the calls page and a call's page of an
// organization with many archived calls, served by a running operator
// (the REST API's process, without reconcilers) and read over HTTP as a
// browser reads them: p50 and p99 of the whole server-side render.
func BenchmarkPages(b *testing.B) {
	suite.Need(b)
	n := testsupport.BenchCount(b, benchCallsEnv, 20_000)
	o := newOrg(b)
	start := time.Now()
	for i := range n {
		if err := store.SaveCall(context.Background(), testsupport.BenchCall(o.ns, i)); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("stored %d calls in %s", n, time.Since(start).Round(time.Second))
	c := signInClient(b, o.key)
	rng := rand.New(rand.NewPCG(1, 2))
	pages := []struct {
		name string
		path func() string
	}{
		{"calls-page", func() string { return "/dashboard/calls" }},
		{"calls-page-failed", func() string { return "/dashboard/calls?status=failed" }},
		{"call-page", func() string { return "/dashboard/calls/" + testsupport.BenchCallID(rng.IntN(n)) }},
	}
	for _, p := range pages {
		b.Run(p.name, func(b *testing.B) {
			testsupport.Measure(b, func() error {
				resp, err := c.http.Get(baseURL + p.path()) //nolint:noctx // benchmark
				if err != nil {
					return err
				}
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					return fmt.Errorf("%s: %d", p.name, resp.StatusCode)
				}
				return nil
			})
		})
	}
}
