package app_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/app"
	"github.com/switchboard-dev/switchboard/internal/telephony/sim"
)

// The webhook benchmarks run a whole operator (reconcilers included) with a
// short carrier, and a local HTTPS receiver that answers 200 at once. Run
// them with `make bench-webhooks`.

// benchTimings keep calls short so that events, not calls, are measured.
var benchTimings = sim.Timings{Ring: 100 * time.Millisecond, Talk: 200 * time.Millisecond, Voicemail: 100 * time.Millisecond}

func startFullOperator(b *testing.B) *runningOperator {
	b.Helper()
	op, err := startOperator(true, func(o *app.Options) {
		o.SimTimings = benchTimings
		o.MaxConcurrentCalls = 64
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(op.stop)
	return op
}

// BenchmarkWebhookDeliveries measures deliveries per second through the
// whole pipeline: calls created as fast as the apiserver takes them, each
// producing three events, each event a WebhookDelivery sent to the
// receiver. b.N is the number of deliveries.
func BenchmarkWebhookDeliveries(b *testing.B) {
	startFullOperator(b)
	o := newOrg(b)
	var received atomic.Int64
	rc := newReceiver(b, func(_ int, w http.ResponseWriter, _ *http.Request) {
		received.Add(1)
		w.WriteHeader(http.StatusOK)
	})
	applyEndpoint(b, o.ns, rc.url(), nil)
	calls := (b.N + 2) / 3
	want := int64(calls * 3)
	b.ResetTimer()
	start := time.Now()
	runCreates(b, 16, calls, func(i int) error {
		return k8s.Create(context.Background(), rawCall(o, benchNumber(i)))
	})
	for received.Load() < want {
		if time.Since(start) > 10*time.Minute {
			b.Fatalf("only %d of %d deliveries arrived", received.Load(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(want)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(float64(calls)/elapsed.Seconds(), "calls/s")
}

// BenchmarkWebhookLatency places 100 calls per second through the REST
// API for five seconds and measures, for each call.started and call.ended
// event, the time from the state change (the call object's started_at and
// ended_at) to the receiver. It reports p50 and p99 over all of them.
func BenchmarkWebhookLatency(b *testing.B) {
	full := startFullOperator(b)
	o := newOrg(b)
	var latencies []time.Duration
	rc := newReceiver(b, nil)
	applyEndpoint(b, o.ns, rc.url(), nil)
	const rate, seconds = 100, 5
	httpc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	b.ResetTimer()
	for range b.N {
		before := len(rc.deliveries())
		tick := time.NewTicker(time.Second / rate)
		errs := make(chan error, rate*seconds)
		for i := range rate * seconds {
			<-tick.C
			go func() { errs <- postCallTo(httpc, full.baseURL, o, benchNumber(i)) }()
		}
		tick.Stop()
		for range rate * seconds {
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
		}
		deadline := time.Now().Add(2 * time.Minute)
		for len(rc.deliveries())-before < rate*seconds*3 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		latencies = append(latencies, eventLatencies(rc.deliveries()[before:])...)
	}
	b.StopTimer()
	if len(latencies) == 0 {
		b.Fatal("no events arrived")
	}
	slices.Sort(latencies)
	b.ReportMetric(ms(latencies[len(latencies)/2]), "p50-ms")
	b.ReportMetric(ms(latencies[len(latencies)*99/100]), "p99-ms")
	b.ReportMetric(float64(len(latencies))/float64(b.N), "events-timed")
}

// eventLatencies: started and ended events, from the state change the
// call object records to the arrival at the receiver.
func eventLatencies(ds []delivery) []time.Duration {
	var out []time.Duration
	for _, d := range ds {
		field := map[string]string{"call.started": "started_at", "call.ended": "ended_at"}[d.event]
		at, ok := d.call()[field].(string)
		if !ok {
			continue
		}
		if t, err := time.Parse(time.RFC3339, at); err == nil {
			out = append(out, d.at.Sub(t))
		}
	}
	return out
}

func postCallTo(httpc *http.Client, baseURL string, o *org, number string) error {
	body := `{"agent_id":"` + o.agentID + `","to_number":"` + number + `","variables":{"customer_name":"Ada"}}`
	req, err := http.NewRequestWithContext(context.Background(), "POST", baseURL+"/v1/calls", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+o.key)
	resp, err := httpc.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return &statusError{resp.StatusCode}
	}
	return nil
}

type statusError struct{ code int }

func (e *statusError) Error() string { return "POST /v1/calls: " + http.StatusText(e.code) }

// runCreates runs n operations over workers goroutines.
func runCreates(b *testing.B, workers, n int, op func(i int) error) {
	var next atomic.Int64
	errs := make(chan error, workers)
	for range workers {
		go func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				if err := op(int(i)); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
}
