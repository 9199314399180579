package app_test

import (
	"context"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/app"
	"github.com/switchboard-dev/switchboard/internal/callid"
	"github.com/switchboard-dev/switchboard/internal/workers"
)

// BenchmarkAssignment measures how long a call waits for its worker at a
// steady rate (SWITCHBOARD_BENCH_RATE calls/s, default 100), on both paths:
//
//   - applied: Calls created as kubectl applies them, without a worker; the
//     leader assigns each. The wait runs from the create's return until an
//     informer sees the Call labelled.
//   - rest: calls placed through POST /v1/calls, assigned inside their
//     create by a pick from the cached Leases: a Call first seen already
//     labelled waited for nothing after its create (the benchmark counts
//     them), and what it waited inside is the pick, which the metric
//     observes. The POSTs' latency is reported beside it.
//
// Each reports p50/p99 and, to show they agree, what the operator's
// switchboard_call_assignment_seconds observed over the same calls: its
// mean and the bucket bound its p99 falls under.
//
// The calls go to a worker of another process (a Lease this benchmark
// renews, as that replica would, with room for every call), so that only
// the assignment loads this machine: carrying 100 calls/s through their
// whole lives is past this apiserver's ceiling (`make bench-ceiling`), and
// the wait measured would be that backlog's. SWITCHBOARD_BENCH_DIAL=1 has
// the benchmark's own operator carry them instead. Run it with
// `make bench-assignment`.
func BenchmarkAssignment(b *testing.B) {
	dial := os.Getenv("SWITCHBOARD_BENCH_DIAL") == "1"
	operator.stop()
	op, err := startOperator(true, func(o *app.Options) {
		o.Worker.ID = "bench-local"
		o.Worker.Capacity = 100_000 // room for every call: the wait measured is the assignment's
		if !dial {
			o.Worker.Capacity = 1 // the calls go to the remote worker
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	operator = op
	b.Cleanup(func() {
		operator.stop()
		if operator, err = startOperator(false); err != nil { // the benchmarks' operator: the API alone
			b.Error(err)
		}
	})
	if !dial {
		remoteWorker(b)
	}
	b.Run("path=applied", func(b *testing.B) { benchAssignment(b, applyUnassigned) })
	b.Run("path=rest", func(b *testing.B) {
		httpc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
		benchAssignment(b, func(b *testing.B, o *org, i int) (string, error) {
			id, err := placeCall(httpc, operator.baseURL, o, benchNumber(i))
			return callid.ResourceName(id), err
		})
	})
}

// remoteWorker keeps, for the benchmark's length, the Lease of a worker in
// another process with room for every call: the Calls assigned to it are
// never dialed here.
func remoteWorker(b *testing.B) {
	ensureNamespace(b, app.DefaultNamespace)
	ctx, stop := context.WithCancel(context.Background())
	hb := &workers.Heartbeat{Client: k8s, Namespace: app.DefaultNamespace, Name: "bench-remote", Capacity: 1 << 30,
		Load: func() workers.Load { return workers.Load{} }, Lease: workers.DefaultLease, Clock: clock.RealClock{}, Log: logr.Discard()}
	done := make(chan error, 1)
	go func() { done <- hb.Start(ctx) }()
	b.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			b.Error(err)
		}
	})
}

// place creates the i-th call of a run and returns its resource name once
// its create returned.
type place func(b *testing.B, o *org, i int) (string, error)

// applyUnassigned creates a Call as kubectl applies it: no worker, no
// acceptance time.
func applyUnassigned(b *testing.B, o *org, i int) (string, error) {
	c := rawCall(o, benchNumber(i))
	c.Spec.Source = ""
	return c.Name, k8s.Create(context.Background(), c)
}

// benchAssignment places b.N calls at the benchmark's rate and reports
// their waits for a worker beside the operator's metric over them.
func benchAssignment(b *testing.B, create place) {
	o := newOrg(b)
	seen := watchAssigned(b, o.ns)
	rate := assignmentRate()
	created := make([]time.Time, b.N)
	took := make([]time.Duration, b.N)
	names := make([]string, b.N)
	before := assignmentHistogram(b)
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	var wg sync.WaitGroup
	b.ResetTimer()
	for i := range b.N {
		<-tick.C
		wg.Go(func() {
			t0 := time.Now()
			name, err := create(b, o, i)
			if err != nil {
				b.Error(err)
				return
			}
			created[i], took[i], names[i] = time.Now(), time.Since(t0), name
		})
	}
	wg.Wait()
	waits, bornAssigned := waitAssigned(b, seen, names, created)
	b.StopTimer()
	metric := assignmentHistogram(b).minus(before)
	slices.Sort(waits)
	slices.Sort(took)
	b.ReportMetric(float64(rate), "calls/s")
	b.ReportMetric(ms(took[len(took)/2]), "create-p50-ms")
	b.ReportMetric(ms(took[len(took)*99/100]), "create-p99-ms")
	b.ReportMetric(ms(waits[len(waits)/2]), "p50-ms")
	b.ReportMetric(ms(waits[len(waits)*99/100]), "p99-ms")
	b.ReportMetric(ms(mean(waits)), "mean-ms")
	b.ReportMetric(100*float64(bornAssigned)/float64(b.N), "%-born-assigned")
	b.ReportMetric(float64(metric.count), "metric-count")
	b.ReportMetric(metric.meanMS(), "metric-mean-ms")
	b.ReportMetric(metric.quantileBoundMS(0.99), "metric-p99-under-ms")
	deleteCalls(b, o.ns)
}

// waitAssigned waits up to a minute for every call to be seen with its
// worker and returns each one's wait after its create (none for a call
// labelled when first seen: the REST API assigned it in its create), and
// how many those were.
// Calls still unassigned fail the benchmark, told apart from calls
// assigned but not seen.
func waitAssigned(b *testing.B, seen func(string) (sighting, bool), names []string, created []time.Time) ([]time.Duration, int) {
	deadline := time.Now().Add(time.Minute)
	for {
		waits, born := make([]time.Duration, 0, len(names)), 0
		for i, name := range names {
			if s, ok := seen(name); ok {
				wait := max(0, s.at.Sub(created[i]))
				if s.born { // it never existed without its worker
					wait, born = 0, born+1
				}
				waits = append(waits, wait)
			}
		}
		if len(waits) == len(names) {
			return waits, born
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d calls seen with a worker within a minute; %d have none in the apiserver",
				len(waits), len(names), unassigned(b, names))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// unassigned counts the named Calls the apiserver holds without a worker.
func unassigned(b *testing.B, names []string) int {
	var list switchboardv1.CallList
	if err := k8s.List(context.Background(), &list); err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, c := range list.Items {
		if slices.Contains(names, c.Name) && c.Labels[switchboardv1.WorkerLabel] == "" {
			n++
		}
	}
	return n
}

// deleteCalls removes what a run left: Calls of a worker that never dials.
func deleteCalls(b *testing.B, ns string) {
	if err := k8s.DeleteAllOf(context.Background(), &switchboardv1.Call{}, client.InNamespace(ns)); err != nil {
		b.Error(err)
	}
}

// assignmentRate is the calls per second BenchmarkAssignment places:
// SWITCHBOARD_BENCH_RATE, default 100 (the goal).
func assignmentRate() int {
	if n, err := strconv.Atoi(os.Getenv("SWITCHBOARD_BENCH_RATE")); err == nil && n > 0 {
		return n
	}
	return 100
}

// sighting is when a Call was first seen with a worker, and whether it
// had one when first seen at all.
type sighting struct {
	at   time.Time
	born bool
}

// watchAssigned follows the Calls of ns with an informer (which watches
// again if the apiserver drops its watch, as it does a watcher that falls
// behind) and returns when each was first seen with a worker.
func watchAssigned(b *testing.B, ns string) func(name string) (sighting, bool) {
	informers, err := cache.New(restConfig, cache.Options{Scheme: app.NewScheme(),
		DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		b.Fatal(err)
	}
	informer, err := informers.GetInformer(context.Background(), &switchboardv1.Call{})
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	at := map[string]sighting{}
	firstSeen := map[string]bool{}
	note := func(obj any) {
		call, ok := obj.(*switchboardv1.Call)
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		labelled := call.Labels[switchboardv1.WorkerLabel] != ""
		first := !firstSeen[call.Name]
		firstSeen[call.Name] = true
		if _, done := at[call.Name]; labelled && !done {
			at[call.Name] = sighting{at: time.Now(), born: first}
		}
	}
	if _, err := informer.AddEventHandler(toolscacheFuncs(note)); err != nil {
		b.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	b.Cleanup(stop)
	go func() { _ = informers.Start(ctx) }()
	if !informers.WaitForCacheSync(ctx) {
		b.Fatal("the benchmark's informer did not sync")
	}
	return func(name string) (sighting, bool) {
		mu.Lock()
		defer mu.Unlock()
		s, ok := at[name]
		return s, ok
	}
}

// histogram is switchboard_call_assignment_seconds as gathered.
type histogram struct {
	count  uint64
	sum    float64
	bounds []float64
	counts []uint64 // cumulative, per bound
}

func assignmentHistogram(b *testing.B) histogram {
	families, err := metrics.Registry.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "switchboard_call_assignment_seconds" || len(f.GetMetric()) != 1 {
			continue
		}
		h := f.GetMetric()[0].GetHistogram()
		out := histogram{count: h.GetSampleCount(), sum: h.GetSampleSum()}
		for _, bucket := range h.GetBucket() {
			out.bounds = append(out.bounds, bucket.GetUpperBound())
			out.counts = append(out.counts, bucket.GetCumulativeCount())
		}
		return out
	}
	b.Fatal("switchboard_call_assignment_seconds is not registered")
	return histogram{}
}

// minus is what h observed since before.
func (h histogram) minus(before histogram) histogram {
	out := histogram{count: h.count - before.count, sum: h.sum - before.sum, bounds: h.bounds}
	for i := range h.counts {
		if i < len(before.counts) {
			out.counts = append(out.counts, h.counts[i]-before.counts[i])
		} else { // nothing observed before
			out.counts = append(out.counts, h.counts[i])
		}
	}
	return out
}

func (h histogram) meanMS() float64 {
	if h.count == 0 {
		return 0
	}
	return 1000 * h.sum / float64(h.count)
}

// quantileBoundMS is the smallest bucket bound with at least q of the
// observations under it (+Inf: over the largest).
func (h histogram) quantileBoundMS(q float64) float64 {
	for i, c := range h.counts {
		if float64(c) >= q*float64(h.count) {
			return 1000 * h.bounds[i]
		}
	}
	return -1
}

// toolscacheFuncs calls note on every add and update.
func toolscacheFuncs(note func(any)) toolscache.ResourceEventHandlerFuncs {
	return toolscache.ResourceEventHandlerFuncs{AddFunc: note, UpdateFunc: func(_, obj any) { note(obj) }}
}
