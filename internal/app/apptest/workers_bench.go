package apptest

import (
	"context"
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
	"github.com/switchboard-dev/switchboard/internal/workers"
)

// RemoteWorker keeps, for the benchmark's length, the Lease of a worker in
// another process with room for every call: the Calls assigned to it are
// never dialed here.
func RemoteWorker(b *testing.B) {
	EnsureNamespace(b, app.DefaultNamespace)
	ctx, stop := context.WithCancel(context.Background())
	hb := &workers.Heartbeat{Client: K8s, Namespace: app.DefaultNamespace, Name: "bench-remote", Capacity: 1 << 30,
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

// Place creates the i-th call of a run and returns its resource name once
// its create returned.
type Place func(b *testing.B, o *Org, i int) (string, error)

// ApplyUnassigned creates a Call as kubectl applies it: no worker, no
// acceptance time.
func ApplyUnassigned(b *testing.B, o *Org, i int) (string, error) {
	c := RawCall(o, BenchNumber(i))
	c.Spec.Source = ""
	return c.Name, K8s.Create(context.Background(), c)
}

// BenchAssignment places b.N calls at the benchmark's rate and reports
// their waits for a worker beside the operator's metric over them.
func BenchAssignment(b *testing.B, create Place) {
	o := NewOrg(b)
	seen := WatchAssigned(b, o.Ns)
	rate := AssignmentRate()
	created := make([]time.Time, b.N)
	took := make([]time.Duration, b.N)
	names := make([]string, b.N)
	before := AssignmentHistogram(b)
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
	waits, bornAssigned := WaitAssigned(b, seen, names, created)
	b.StopTimer()
	metric := AssignmentHistogram(b).Minus(before)
	slices.Sort(waits)
	slices.Sort(took)
	b.ReportMetric(float64(rate), "calls/s")
	b.ReportMetric(Ms(took[len(took)/2]), "create-p50-ms")
	b.ReportMetric(Ms(took[len(took)*99/100]), "create-p99-ms")
	b.ReportMetric(Ms(waits[len(waits)/2]), "p50-ms")
	b.ReportMetric(Ms(waits[len(waits)*99/100]), "p99-ms")
	b.ReportMetric(Ms(Mean(waits)), "mean-ms")
	b.ReportMetric(100*float64(bornAssigned)/float64(b.N), "%-born-assigned")
	b.ReportMetric(float64(metric.Count), "metric-count")
	b.ReportMetric(metric.MeanMS(), "metric-mean-ms")
	b.ReportMetric(metric.QuantileBoundMS(0.99), "metric-p99-under-ms")
	DeleteCalls(b, o.Ns)
}

// WaitAssigned waits up to a minute for every call to be seen with its
// worker and returns each one's wait after its create (none for a call
// labelled when first seen: the REST API assigned it in its create), and
// how many those were.
// Calls still unassigned fail the benchmark, told apart from calls
// assigned but not seen.
func WaitAssigned(b *testing.B, seen func(string) (Sighting, bool), names []string, created []time.Time) ([]time.Duration, int) {
	deadline := time.Now().Add(time.Minute)
	for {
		waits, born := make([]time.Duration, 0, len(names)), 0
		for i, name := range names {
			if s, ok := seen(name); ok {
				wait := max(0, s.At.Sub(created[i]))
				if s.Born { // it never existed without its worker
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
				len(waits), len(names), Unassigned(b, names))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Unassigned counts the named Calls the apiserver holds without a worker.
func Unassigned(b *testing.B, names []string) int {
	var list switchboardv1.CallList
	if err := K8s.List(context.Background(), &list); err != nil {
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

// DeleteCalls removes what a run left: Calls of a worker that never dials.
func DeleteCalls(b *testing.B, ns string) {
	if err := K8s.DeleteAllOf(context.Background(), &switchboardv1.Call{}, client.InNamespace(ns)); err != nil {
		b.Error(err)
	}
}

// AssignmentRate is the calls per second BenchmarkAssignment places:
// SWITCHBOARD_BENCH_RATE, default 100 (the goal).
func AssignmentRate() int {
	if n, err := strconv.Atoi(os.Getenv("SWITCHBOARD_BENCH_RATE")); err == nil && n > 0 {
		return n
	}
	return 100
}

// Sighting is when a Call was first seen with a worker, and whether it
// had one when first seen at all.
type Sighting struct {
	At   time.Time
	Born bool
}

// WatchAssigned follows the Calls of ns with an informer (which watches
// again if the apiserver drops its watch, as it does a watcher that falls
// behind) and returns when each was first seen with a worker.
func WatchAssigned(b *testing.B, ns string) func(name string) (Sighting, bool) {
	informers, err := cache.New(RestConfig, cache.Options{Scheme: app.NewScheme(),
		DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		b.Fatal(err)
	}
	informer, err := informers.GetInformer(context.Background(), &switchboardv1.Call{})
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	at := map[string]Sighting{}
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
			at[call.Name] = Sighting{At: time.Now(), Born: first}
		}
	}
	if _, err := informer.AddEventHandler(ToolscacheFuncs(note)); err != nil {
		b.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	b.Cleanup(stop)
	go func() { _ = informers.Start(ctx) }()
	if !informers.WaitForCacheSync(ctx) {
		b.Fatal("the benchmark's informer did not sync")
	}
	return func(name string) (Sighting, bool) {
		mu.Lock()
		defer mu.Unlock()
		s, ok := at[name]
		return s, ok
	}
}

// Histogram is switchboard_call_assignment_seconds as gathered.
type Histogram struct {
	Count  uint64
	Sum    float64
	Bounds []float64
	Counts []uint64 // cumulative, per bound
}

func AssignmentHistogram(b *testing.B) Histogram {
	families, err := metrics.Registry.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "switchboard_call_assignment_seconds" || len(f.GetMetric()) != 1 {
			continue
		}
		h := f.GetMetric()[0].GetHistogram()
		out := Histogram{Count: h.GetSampleCount(), Sum: h.GetSampleSum()}
		for _, bucket := range h.GetBucket() {
			out.Bounds = append(out.Bounds, bucket.GetUpperBound())
			out.Counts = append(out.Counts, bucket.GetCumulativeCount())
		}
		return out
	}
	b.Fatal("switchboard_call_assignment_seconds is not registered")
	return Histogram{}
}

// Minus is what h observed since before.
func (h Histogram) Minus(before Histogram) Histogram {
	out := Histogram{Count: h.Count - before.Count, Sum: h.Sum - before.Sum, Bounds: h.Bounds}
	for i := range h.Counts {
		if i < len(before.Counts) {
			out.Counts = append(out.Counts, h.Counts[i]-before.Counts[i])
		} else { // nothing observed before
			out.Counts = append(out.Counts, h.Counts[i])
		}
	}
	return out
}

func (h Histogram) MeanMS() float64 {
	if h.Count == 0 {
		return 0
	}
	return 1000 * h.Sum / float64(h.Count)
}

// QuantileBoundMS is the smallest bucket bound with at least q of the
// observations under it (+Inf: over the largest).
func (h Histogram) QuantileBoundMS(q float64) float64 {
	for i, c := range h.Counts {
		if float64(c) >= q*float64(h.Count) {
			return 1000 * h.Bounds[i]
		}
	}
	return -1
}

// ToolscacheFuncs calls note on every add and update.
func ToolscacheFuncs(note func(any)) toolscache.ResourceEventHandlerFuncs {
	return toolscache.ResourceEventHandlerFuncs{AddFunc: note, UpdateFunc: func(_, obj any) { note(obj) }}
}
