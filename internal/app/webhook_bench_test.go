package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/app"
	"github.com/switchboard-dev/switchboard/internal/callid"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/telephony/sim"
	"github.com/switchboard-dev/switchboard/internal/webhook"
	"github.com/switchboard-dev/switchboard/internal/webhook/deliveries"
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
		o.CallNormalEvents = false // the default outside --dev
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(op.stop)
	return op
}

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
	b.Run("stage=store", benchStoreCeiling)
	startFullOperator(b)
	b.Run("stage=delivery", benchDeliveryStage)
	b.Run("stage=pipeline", benchPipeline)
}

func benchPipeline(b *testing.B) {
	o := newOrg(b)
	received := countingReceiver(b, o.ns)
	calls := (b.N + 2) / 3
	b.ResetTimer()
	start := time.Now()
	runCreates(b, 16, calls, func(i int) error {
		return k8s.Create(context.Background(), rawCall(o, benchNumber(i)))
	})
	waitReceived(b, received, int64(calls*3))
	b.ReportMetric(float64(calls*3)/time.Since(start).Seconds(), "deliveries/s")
}

func benchDeliveryStage(b *testing.B) {
	o := newOrg(b)
	calls := endedCalls(b, o, (b.N+2)/3)
	received := countingReceiver(b, o.ns)
	ep := endpointOf(b, o.ns)
	n := len(calls) * 3
	b.ResetTimer()
	start := time.Now()
	runCreates(b, 16, n, func(i int) error {
		c := &calls[i/3]
		d := deliveries.ForCall(c, webhook.Kinds[i%3], ep, callid.Of(c))
		d.CreationTimestamp = metav1.NewTime(time.Now())
		return historyStore.EnqueueDeliveries(context.Background(), []*history.Delivery{d})
	})
	waitReceived(b, received, int64(n))
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "deliveries/s")
}

func benchStoreCeiling(b *testing.B) {
	ns := resNamespaceB(b)
	call := &switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "call-0", UID: "bench"}}
	ep := &switchboardv1.WebhookEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "receiver", UID: "bench"}}
	b.ResetTimer()
	start := time.Now()
	runCreates(b, 16, b.N, func(i int) error {
		d := deliveries.ForCall(call, webhook.Kinds[i%3], ep, "call_0")
		d.Name, d.Spec.DeliveryID = fmt.Sprintf("%s-%d", d.Name, i), fmt.Sprintf("%s-%d", d.Spec.DeliveryID, i)
		d.CreationTimestamp = metav1.NewTime(time.Now())
		if err := historyStore.EnqueueDeliveries(context.Background(), []*history.Delivery{d}); err != nil {
			return err
		}
		deliveries.Record(&d.Status, webhook.Result{StatusCode: 200, Duration: time.Millisecond}, time.Now(),
			history.TriggerScheduled, webhook.DefaultSchedule)
		return historyStore.SaveDelivery(context.Background(), d, time.Time{})
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "deliveries/s")
}

// countingReceiver subscribes a receiver that answers 200 at once to every
// event of namespace ns, and counts what it gets.
func countingReceiver(b *testing.B, ns string) *atomic.Int64 {
	var received atomic.Int64
	rc := newReceiver(b, func(_ int, w http.ResponseWriter, _ *http.Request) {
		received.Add(1)
		w.WriteHeader(http.StatusOK)
	})
	applyEndpoint(b, ns, rc.url(), nil)
	return &received
}

func waitReceived(b *testing.B, received *atomic.Int64, want int64) {
	deadline := time.Now().Add(10 * time.Minute)
	for received.Load() < want {
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d deliveries arrived", received.Load(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.StopTimer()
}

// endedCalls places n calls (no endpoint yet, so no events) and waits
// until every one is analyzed and has emitted all its (zero) deliveries.
func endedCalls(b *testing.B, o *org, n int) []switchboardv1.Call {
	runCreates(b, 16, n, func(i int) error {
		return k8s.Create(context.Background(), rawCall(o, benchNumber(i)))
	})
	deadline := time.Now().Add(5 * time.Minute)
	for {
		var list switchboardv1.CallList
		if err := k8s.List(context.Background(), &list, client.InNamespace(o.ns)); err != nil {
			b.Fatal(err)
		}
		done := 0
		for i := range list.Items {
			if len(list.Items[i].Status.EmittedEvents) == len(webhook.Kinds) {
				done++
			}
		}
		if done == n {
			return list.Items
		}
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d calls ended", done, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func endpointOf(b *testing.B, ns string) *switchboardv1.WebhookEndpoint {
	var list switchboardv1.WebhookEndpointList
	if err := k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil || len(list.Items) != 1 {
		b.Fatalf("want one endpoint in %s: %v", ns, err)
	}
	return &list.Items[0]
}

func resNamespaceB(b *testing.B) string {
	return controlPlane.NewOrganization(b, "bench-")
}

// BenchmarkWebhookLatency places calls through the REST API at a steady
// rate for five seconds and measures, for each call.started and call.ended
// event, the time from the state change (the call object's started_at and
// ended_at) to the receiver. It reports p50 and p99 over all of them, and
// of the POSTs that placed the calls.
func BenchmarkWebhookLatency(b *testing.B) {
	full := startFullOperator(b)
	for _, rate := range []int{10, 25, 50, 100, 150} {
		b.Run(fmt.Sprintf("calls-per-s=%d", rate), func(b *testing.B) { benchLatency(b, full, rate) })
	}
}

func benchLatency(b *testing.B, full *runningOperator, rate int) {
	const seconds = 5
	o := newOrg(b)
	rc := newReceiver(b, nil)
	applyEndpoint(b, o.ns, rc.url(), nil)
	httpc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	latencies := map[string][]time.Duration{}
	b.ResetTimer()
	for range b.N {
		before := len(rc.deliveries())
		tick := time.NewTicker(time.Second / time.Duration(rate))
		type posted struct {
			took time.Duration
			err  error
		}
		posts := make(chan posted, rate*seconds)
		for i := range rate * seconds {
			<-tick.C
			go func() {
				start := time.Now()
				err := postCallTo(httpc, full.baseURL, o, benchNumber(i))
				posts <- posted{time.Since(start), err}
			}()
		}
		tick.Stop()
		for range rate * seconds {
			p := <-posts
			if p.err != nil {
				b.Fatal(p.err)
			}
			latencies["post"] = append(latencies["post"], p.took)
		}
		deadline := time.Now().Add(5 * time.Minute)
		for len(rc.deliveries())-before < rate*seconds*3 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		for event, ls := range eventLatencies(rc.deliveries()[before:]) {
			latencies[event] = append(latencies[event], ls...)
			latencies["all"] = append(latencies["all"], ls...)
		}
	}
	b.StopTimer()
	if len(latencies["all"]) == 0 {
		b.Fatal("no events arrived")
	}
	for _, series := range []struct{ key, unit string }{{"all", ""}, {"call.started", "started-"}, {"call.ended", "ended-"},
		{"post", "post-"}} {
		ls := latencies[series.key]
		slices.Sort(ls)
		b.ReportMetric(ms(ls[len(ls)/2]), series.unit+"p50-ms")
		b.ReportMetric(ms(ls[len(ls)*99/100]), series.unit+"p99-ms")
	}
}

// eventLatencies: started and ended events, by kind, from the state change
// the call object records to the arrival at the receiver.
func eventLatencies(ds []delivery) map[string][]time.Duration {
	out := map[string][]time.Duration{}
	for _, d := range ds {
		field := map[string]string{"call.started": "started_at", "call.ended": "ended_at"}[d.event]
		at, ok := d.call()[field].(string)
		if !ok {
			continue
		}
		if t, err := time.Parse(time.RFC3339, at); err == nil {
			out[d.event] = append(out[d.event], d.at.Sub(t))
		}
	}
	return out
}

func postCallTo(httpc *http.Client, baseURL string, o *org, number string) error {
	_, err := placeCall(httpc, baseURL, o, number)
	return err
}

// placeCall posts a call and returns its id.
func placeCall(httpc *http.Client, baseURL string, o *org, number string) (string, error) {
	body := `{"agent_id":"` + o.agentID + `","to_number":"` + number +
		`","variables":{"customer_name":"Ada"},"metadata":{"order":7}}`
	req, err := http.NewRequestWithContext(context.Background(), "POST", baseURL+"/v1/calls", strings.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+o.key)
	resp, err := httpc.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusCreated {
		return "", &statusError{resp.StatusCode}
	}
	var created struct {
		CallID string `json:"call_id"`
	}
	err = json.NewDecoder(resp.Body).Decode(&created)
	// Read to the end, so that the connection is reused.
	_, _ = io.Copy(io.Discard, resp.Body)
	return created.CallID, err
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
