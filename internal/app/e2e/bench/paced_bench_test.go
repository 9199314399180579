package bench_test

import (
	"errors"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/app"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
	"github.com/switchboard-dev/switchboard/internal/calls/placementgate"
)

// pacedInFlight bounds the POSTs the paced load has in flight: a backlog
// past it is the operator falling behind, counted, not a queue that grows.
const pacedInFlight = 512

// BenchmarkPaced measures POST /v1/calls below the ceiling, as most days
// look: first the ceiling (the four apiserver writes of an answered call,
// straight through the client, nothing else running, as BenchmarkCeiling
// measures it), then, against one whole operator with the placement gate
// at its default, calls posted at a steady rate, a fraction of that
// ceiling (SWITCHBOARD_PACED_FRACTION, 0.5), for
// SWITCHBOARD_PACED_DURATION (10 s), each on a schedule of its own (an
// open loop: a slow answer does not slow the next request). It reports the
// POSTs' p50, p90 and p99 beside the ceiling and the rate, the share
// answered 503 (none is expected below the ceiling) and the apiserver's own
// time for the creates. SWITCHBOARD_PACED_GATE sets
// --max-placements-in-flight (-1: no gate), SWITCHBOARD_PACED_PROFILE=DIR
// writes CPU, mutex and block profiles of the paced stage, and
// SWITCHBOARD_PACED_RECONCILERS=0 runs the REST API alone (the calls are
// created and nothing else), to tell the front door's time from the time
// the rest of the per-call path takes from it on a shared CPU. Run it with
// `make bench-paced`.
func BenchmarkPaced(b *testing.B) {
	duration := EnvDuration(b, "SWITCHBOARD_PACED_DURATION", 10*time.Second)
	fraction, err := strconv.ParseFloat(EnvOr("SWITCHBOARD_PACED_FRACTION", "0.5"), 64)
	if err != nil || fraction <= 0 {
		b.Fatalf("SWITCHBOARD_PACED_FRACTION: want a positive fraction of the ceiling")
	}
	gate, err := strconv.Atoi(EnvOr("SWITCHBOARD_PACED_GATE", strconv.Itoa(placementgate.DefaultInFlight)))
	if err != nil || gate == 0 {
		b.Fatalf("SWITCHBOARD_PACED_GATE: want a number of placements, or -1 for no bound")
	}
	o := NewOrg(b)
	Operator.Stop() // nothing but the stage measured runs
	b.Cleanup(func() {
		if op, err := StartOperator(false); err == nil {
			Operator = op
		}
	})
	ceilingCalls, err := strconv.Atoi(EnvOr("SWITCHBOARD_PACED_CEILING_CALLS", "400"))
	if err != nil || ceilingCalls <= 0 {
		b.Fatalf("SWITCHBOARD_PACED_CEILING_CALLS: want a number of calls")
	}
	ceiling := ceilingOf(b, o, ceilingCalls)
	rate := fraction * ceiling
	reconcilers := EnvOr("SWITCHBOARD_PACED_RECONCILERS", "1") != "0"
	full, err := StartOperator(reconcilers, PipelineOptions, func(opts *app.Options) { opts.MaxPlacementsInFlight = gate })
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(full.Stop)
	var rc *Receiver
	if reconcilers {
		rc = NewReceiver(b, nil)
		ApplyEndpoint(b, o.Ns, rc.URL(), nil)
		time.Sleep(time.Second) // the endpoint's own set-up writes settle
	}
	b.ResetTimer()
	admitted := 0
	for i := range b.N {
		stopProfiles := ProfileStage(b, os.Getenv("SWITCHBOARD_PACED_PROFILE"))
		creates := ApiserverCallCreates(b)
		r := paced(b, full.BaseURL, o, rate, duration, i)
		ReportCreates(b, creates)
		stopProfiles()
		r.report(b)
		admitted += r.created
	}
	b.StopTimer()
	b.ReportMetric(ceiling, "ceiling-calls/s")
	b.ReportMetric(rate, "paced-calls/s")
	if reconcilers {
		WaitEvents(b, rc, 3*admitted) // admitted is placed: every one delivers its events
	}
}

// ceilingOf is BenchmarkCeiling's ceiling stage over n calls: calls/s.
func ceilingOf(b *testing.B, o *Org, n int) float64 {
	start := time.Now()
	RunCreates(b, CeilingWriters, n, func(i int) error { return CeilingCall(o, BenchNumber(1_000_000_000+i), false) })
	return float64(n) / time.Since(start).Seconds()
}

// pacedResult is how the paced POSTs were answered.
type pacedResult struct {
	took    []time.Duration
	created int
	busy    int // 503s
	behind  int // requests not sent: pacedInFlight were still unanswered
}

// paced posts calls at rate for duration, each at its own time. Calls are
// numbered from round*1,000,000.
func paced(b *testing.B, baseURL string, o *Org, rate float64, duration time.Duration, round int) *pacedResult {
	httpc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: pacedInFlight}}
	interval := time.Duration(float64(time.Second) / rate)
	n := int(duration / interval)
	r := &pacedResult{took: make([]time.Duration, 0, n)}
	var mu sync.Mutex
	var wg sync.WaitGroup
	slots := make(chan struct{}, pacedInFlight)
	start := time.Now()
	for i := range n {
		time.Sleep(time.Until(start.Add(time.Duration(i) * interval)))
		select {
		case slots <- struct{}{}:
		default:
			r.behind++
			continue
		}
		wg.Go(func() {
			defer func() { <-slots }()
			sent := time.Now()
			_, err := PlaceCall(httpc, baseURL, o, BenchNumber(round*1_000_000+i))
			took := time.Since(sent)
			var status *StatusError
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				r.took, r.created = append(r.took, took), r.created+1
			case errors.As(err, &status) && status.Code == http.StatusServiceUnavailable:
				r.took, r.busy = append(r.took, took), r.busy+1
			default:
				b.Error(err)
			}
		})
	}
	wg.Wait()
	return r
}

func (r *pacedResult) report(b *testing.B) {
	if r.created == 0 {
		b.Fatal("no call was admitted")
	}
	slices.Sort(r.took)
	p := func(q float64) float64 { return Ms(r.took[int(q*float64(len(r.took)-1))]) }
	b.ReportMetric(p(0.5), "p50-ms")
	b.ReportMetric(p(0.9), "p90-ms")
	b.ReportMetric(p(0.99), "p99-ms")
	b.ReportMetric(100*float64(r.busy)/float64(len(r.took)), "%503")
	b.ReportMetric(float64(r.behind), "not-sent")
}
