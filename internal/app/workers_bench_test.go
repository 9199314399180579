package app_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/app"
)

// BenchmarkAssignment measures how long a call waits for its worker at a
// steady rate (assignmentRate). Calls applied as kubectl applies them carry no worker: the
// leader assigns each, and the time runs from the create's return to a
// watcher seeing the Call labelled. (Calls through the REST API are
// assigned in their create, by a pick from the cached Leases.) It reports
// p50 and p99; the goal is p99 under 50 ms.
func BenchmarkAssignment(b *testing.B) {
	operator.stop()
	// Room for every call: the wait measured is the assignment's, not
	// capacity's (a full worker's calls wait for room, by design).
	op, err := startOperator(true, func(o *app.Options) { o.Worker.Capacity = 100_000 })
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
	o := newOrg(b)
	seen := watchAssigned(b, o.ns)
	created := make([]time.Time, b.N)
	names := make([]string, b.N)
	tick := time.NewTicker(time.Second / time.Duration(assignmentRate()))
	defer tick.Stop()
	var wg sync.WaitGroup
	b.ResetTimer()
	for i := range b.N {
		<-tick.C
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := rawCall(o, benchNumber(i))
			c.Spec.Source = "" // as kubectl applies it
			if err := k8s.Create(context.Background(), c); err != nil {
				b.Error(err)
				return
			}
			created[i], names[i] = time.Now(), c.Name
		}()
	}
	wg.Wait()
	waits := make([]time.Duration, 0, b.N)
	for deadline := time.Now().Add(time.Minute); len(waits) < b.N && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		waits = waits[:0]
		for i, name := range names {
			if at, ok := seen(name); ok {
				waits = append(waits, max(0, at.Sub(created[i])))
			}
		}
	}
	b.StopTimer()
	if len(waits) < b.N {
		b.Fatalf("%d of %d calls assigned within a minute", len(waits), b.N)
	}
	slices.Sort(waits)
	b.ReportMetric(ms(waits[len(waits)/2]), "p50-ms")
	b.ReportMetric(ms(waits[len(waits)*99/100]), "p99-ms")
}

// assignmentRate is the calls per second BenchmarkAssignment applies:
// SWITCHBOARD_BENCH_RATE, default 20 (each call also runs its whole life
// here: past about 60 calls/s this machine's apiserver is saturated, and
// the wait measured is the backlog's).
func assignmentRate() int {
	if n, err := strconv.Atoi(os.Getenv("SWITCHBOARD_BENCH_RATE")); err == nil && n > 0 {
		return n
	}
	return 20
}

// watchAssigned watches the Calls of ns and returns when each was first
// seen with a worker.
func watchAssigned(b *testing.B, ns string) func(name string) (time.Time, bool) {
	c, err := client.NewWithWatch(restConfig, client.Options{Scheme: app.NewScheme()})
	if err != nil {
		b.Fatal(err)
	}
	w, err := c.Watch(context.Background(), &switchboardv1.CallList{}, client.InNamespace(ns))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(w.Stop)
	var mu sync.Mutex
	at := map[string]time.Time{}
	go func() {
		for ev := range w.ResultChan() {
			call, ok := ev.Object.(*switchboardv1.Call)
			if !ok || call.Labels[switchboardv1.WorkerLabel] == "" {
				continue
			}
			mu.Lock()
			if _, seen := at[call.Name]; !seen {
				at[call.Name] = time.Now()
			}
			mu.Unlock()
		}
	}()
	return func(name string) (time.Time, bool) {
		mu.Lock()
		defer mu.Unlock()
		t, ok := at[name]
		return t, ok
	}
}
