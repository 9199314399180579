package apptest

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

// BenchTimings keep calls short so that events, not calls, are measured.
var BenchTimings = sim.Timings{Ring: 100 * time.Millisecond, Talk: 200 * time.Millisecond, Voicemail: 100 * time.Millisecond}

func StartFullOperator(b *testing.B) *RunningOperator {
	b.Helper()
	op, err := StartOperator(true, func(o *app.Options) {
		o.SimTimings = BenchTimings
		o.MaxConcurrentCalls = 64
		o.CallNormalEvents = false // the default outside --dev
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(op.Stop)
	return op
}

func BenchPipeline(b *testing.B) {
	o := NewOrg(b)
	received := CountingReceiver(b, o.Ns)
	calls := (b.N + 2) / 3
	b.ResetTimer()
	start := time.Now()
	RunCreates(b, 16, calls, func(i int) error {
		return K8s.Create(context.Background(), RawCall(o, BenchNumber(i)))
	})
	WaitReceived(b, received, int64(calls*3))
	b.ReportMetric(float64(calls*3)/time.Since(start).Seconds(), "deliveries/s")
}

func BenchDeliveryStage(b *testing.B) {
	o := NewOrg(b)
	calls := EndedCalls(b, o, (b.N+2)/3)
	received := CountingReceiver(b, o.Ns)
	ep := EndpointOf(b, o.Ns)
	n := len(calls) * 3
	b.ResetTimer()
	start := time.Now()
	RunCreates(b, 16, n, func(i int) error {
		c := &calls[i/3]
		d := deliveries.ForCall(c, webhook.Kinds[i%3], ep, callid.Of(c))
		d.CreationTimestamp = metav1.NewTime(time.Now())
		return HistoryStore.EnqueueDeliveries(context.Background(), []*history.Delivery{d})
	})
	WaitReceived(b, received, int64(n))
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "deliveries/s")
}

func BenchStoreCeiling(b *testing.B) {
	ns := ResNamespaceB(b)
	call := &switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "call-0", UID: "bench"}}
	ep := &switchboardv1.WebhookEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "receiver", UID: "bench"}}
	b.ResetTimer()
	start := time.Now()
	RunCreates(b, 16, b.N, func(i int) error {
		d := deliveries.ForCall(call, webhook.Kinds[i%3], ep, "call_0")
		d.Name, d.Spec.DeliveryID = fmt.Sprintf("%s-%d", d.Name, i), fmt.Sprintf("%s-%d", d.Spec.DeliveryID, i)
		d.CreationTimestamp = metav1.NewTime(time.Now())
		if err := HistoryStore.EnqueueDeliveries(context.Background(), []*history.Delivery{d}); err != nil {
			return err
		}
		deliveries.Record(&d.Status, webhook.Result{StatusCode: 200, Duration: time.Millisecond}, time.Now(),
			history.TriggerScheduled, webhook.DefaultSchedule)
		return HistoryStore.SaveDelivery(context.Background(), d, time.Time{})
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "deliveries/s")
}

// CountingReceiver subscribes a receiver that answers 200 at once to every
// event of namespace ns, and counts what it gets.
func CountingReceiver(b *testing.B, ns string) *atomic.Int64 {
	var received atomic.Int64
	rc := NewReceiver(b, func(_ int, w http.ResponseWriter, _ *http.Request) {
		received.Add(1)
		w.WriteHeader(http.StatusOK)
	})
	ApplyEndpoint(b, ns, rc.URL(), nil)
	return &received
}

func WaitReceived(b *testing.B, received *atomic.Int64, want int64) {
	deadline := time.Now().Add(10 * time.Minute)
	for received.Load() < want {
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d deliveries arrived", received.Load(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.StopTimer()
}

// EndedCalls places n calls (no endpoint yet, so no events) and waits
// until every one is analyzed and has emitted all its (zero) deliveries.
func EndedCalls(b *testing.B, o *Org, n int) []switchboardv1.Call {
	RunCreates(b, 16, n, func(i int) error {
		return K8s.Create(context.Background(), RawCall(o, BenchNumber(i)))
	})
	deadline := time.Now().Add(5 * time.Minute)
	for {
		var list switchboardv1.CallList
		if err := K8s.List(context.Background(), &list, client.InNamespace(o.Ns)); err != nil {
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

func EndpointOf(b *testing.B, ns string) *switchboardv1.WebhookEndpoint {
	var list switchboardv1.WebhookEndpointList
	if err := K8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil || len(list.Items) != 1 {
		b.Fatalf("want one endpoint in %s: %v", ns, err)
	}
	return &list.Items[0]
}

func ResNamespaceB(b *testing.B) string {
	return ControlPlane.NewOrganization(b, "bench-")
}

func BenchLatency(b *testing.B, full *RunningOperator, rate int) {
	const seconds = 5
	o := NewOrg(b)
	rc := NewReceiver(b, nil)
	ApplyEndpoint(b, o.Ns, rc.URL(), nil)
	httpc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	latencies := map[string][]time.Duration{}
	b.ResetTimer()
	for range b.N {
		before := len(rc.Deliveries())
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
				err := PostCallTo(httpc, full.BaseURL, o, BenchNumber(i))
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
		for len(rc.Deliveries())-before < rate*seconds*3 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		for event, ls := range EventLatencies(rc.Deliveries()[before:]) {
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
		b.ReportMetric(Ms(ls[len(ls)/2]), series.unit+"p50-ms")
		b.ReportMetric(Ms(ls[len(ls)*99/100]), series.unit+"p99-ms")
	}
}

// EventLatencies: started and ended events, by kind, from the state change
// the call object records to the arrival at the receiver.
func EventLatencies(ds []Delivery) map[string][]time.Duration {
	out := map[string][]time.Duration{}
	for _, d := range ds {
		field := map[string]string{"call.started": "started_at", "call.ended": "ended_at"}[d.Event]
		at, ok := d.Call()[field].(string)
		if !ok {
			continue
		}
		if t, err := time.Parse(time.RFC3339, at); err == nil {
			out[d.Event] = append(out[d.Event], d.At.Sub(t))
		}
	}
	return out
}

func PostCallTo(httpc *http.Client, baseURL string, o *Org, number string) error {
	_, err := PlaceCall(httpc, baseURL, o, number)
	return err
}

// PlaceCall posts a call and returns its id.
func PlaceCall(httpc *http.Client, baseURL string, o *Org, number string) (string, error) {
	body := `{"agent_id":"` + o.AgentID + `","to_number":"` + number +
		`","variables":{"customer_name":"Ada"},"metadata":{"order":7}}`
	req, err := http.NewRequestWithContext(context.Background(), "POST", baseURL+"/v1/calls", strings.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+o.Key)
	resp, err := httpc.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusCreated {
		return "", &StatusError{resp.StatusCode}
	}
	var created struct {
		CallID string `json:"call_id"`
	}
	err = json.NewDecoder(resp.Body).Decode(&created)
	// Read to the end, so that the connection is reused.
	_, _ = io.Copy(io.Discard, resp.Body)
	return created.CallID, err
}

type StatusError struct{ Code int }

func (e *StatusError) Error() string { return "POST /v1/calls: " + http.StatusText(e.Code) }

// RunCreates runs n operations over workers goroutines.
func RunCreates(b *testing.B, workers, n int, op func(i int) error) {
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
