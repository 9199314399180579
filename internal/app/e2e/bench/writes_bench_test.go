package bench_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/app"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
)

// BenchmarkCallWrites counts the apiserver writes an answered call costs,
// from the apiserver's own apiserver_request_total: b.N calls placed
// through the REST API with one webhook endpoint subscribed to every
// event, each followed until its three events have arrived and it has
// left the cluster (a short --call-retention). Nothing else writes to the
// apiserver meanwhile (the suite's own operator runs no reconcilers while
// benchmarking). Run it with `make bench-writes`.
func BenchmarkCallWrites(b *testing.B) {
	full, err := StartOperator(true, func(o *app.Options) {
		o.SimTimings = BenchTimings
		o.Retention.Calls = 100 * time.Millisecond
		o.CallNormalEvents = false // the default outside --dev
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(full.Stop)
	o := NewOrg(b)
	rc := NewReceiver(b, nil)
	ApplyEndpoint(b, o.Ns, rc.URL(), nil)
	time.Sleep(time.Second) // the endpoint's own set-up writes (Secret, status) settle
	before := ApiserverWrites(b)
	b.ResetTimer()
	for i := range b.N {
		if err := PostCallTo(http.DefaultClient, full.BaseURL, o, BenchNumber(i)); err != nil {
			b.Fatal(err)
		}
	}
	WaitEvents(b, rc, 3*b.N)
	WaitNoCalls(b, o.Ns)
	b.StopTimer()
	after := ApiserverWrites(b)
	total, lines := WritesBetween(before, after)
	b.ReportMetric(float64(total)/float64(b.N), "writes/call")
	for _, l := range lines {
		b.Logf("%-48s %6.2f per call", l.Key, float64(l.N)/float64(b.N))
	}
}
