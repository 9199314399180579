package app_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/app"
	"github.com/switchboard-dev/switchboard/internal/callid"
	"github.com/switchboard-dev/switchboard/internal/calls/placementgate"
	"github.com/switchboard-dev/switchboard/internal/devenv"
)

// ceilingWriters is how many clients write at once in both stages: the
// apiserver's ceiling is measured at the concurrency the API is driven at.
const ceilingWriters = 32

// BenchmarkCeiling measures, in one run, how close Switchboard comes to
// the apiserver's own ceiling on the per-call path. b.N calls each:
//
//   - ceiling: the four writes an answered call costs the apiserver
//     (create, two status patches, delete) straight through the client,
//     ceilingWriters at once, nothing else running: calls/s.
//   - switchboard: answered simulated calls placed through the REST API by
//     ceilingWriters clients, each followed until its three events reached
//     one webhook endpoint and it has left the cluster: calls/s.
//
// and reports their ratio, the CPU each stage cost per call in
// kube-apiserver, etcd and the benchmark's process (the operator with its
// load generator and receiver): on a shared machine, where calls/s move
// with the neighbours' load, CPU per call is the steadier figure; and the
// apiserver's requests and writes per answered call in Switchboard's
// stage. SWITCHBOARD_CEILING_PROFILE=DIR writes CPU,
// mutex and block profiles of the end-to-end stage alone (the operator
// runs in the benchmark's process) into DIR. SWITCHBOARD_CEILING_REPLICAS=N runs N replicas
// of the operator (leader election on; the POSTs spread over them, and
// each replica is a call worker). Two settings tell where the apiserver's
// extra work per call in Switchboard's stage goes: SWITCHBOARD_CEILING_CONTENT=call
// has the ceiling write what Switchboard writes to a Call (its worker
// label, acceptance annotation, call id, Ready condition, extracted
// values), and SWITCHBOARD_CEILING_WATCH=1 has one client watch the Calls
// meanwhile, as each replica's informer does. Run it
// with `make bench-ceiling`.
func BenchmarkCeiling(b *testing.B) {
	replicas, err := strconv.Atoi(envOr("SWITCHBOARD_CEILING_REPLICAS", "1"))
	if err != nil || replicas < 1 {
		b.Fatalf("SWITCHBOARD_CEILING_REPLICAS: want a number of replicas, at least 1")
	}
	o := newOrg(b)
	// The suite's API-only operator would watch every Call written here:
	// nothing but the stage measured runs.
	operator.stop()
	b.Cleanup(func() {
		if op, err := startOperator(false); err == nil {
			operator = op
		}
	})
	if os.Getenv("SWITCHBOARD_CEILING_WATCH") != "" {
		defer watchCalls(b, o.ns)()
	}
	b.ResetTimer()
	cpu := startCPU()
	ceiling := measureCeiling(b, o, os.Getenv("SWITCHBOARD_CEILING_CONTENT") == "call")
	b.StopTimer()
	cpu.report(b, "ceiling-")
	urls := startReplicas(b, replicas)
	rc := newReceiver(b, nil)
	applyEndpoint(b, o.ns, rc.url(), nil)
	time.Sleep(time.Second) // the endpoint's own set-up writes (Secret, status) settle
	stopProfiles := profileStage(b, os.Getenv("SWITCHBOARD_CEILING_PROFILE"))
	cpu, requests := startCPU(), apiserverRequests(b, true)
	b.StartTimer()
	switchboard := measureSwitchboard(b, urls, o, rc)
	b.StopTimer()
	cpu.report(b, "")
	total, lines := writesBetween(requests, apiserverRequests(b, true))
	b.ReportMetric(total/float64(b.N), "apiserver-requests/call")
	writes := 0.0
	for _, l := range lines {
		if isWrite(l.key) {
			writes += l.n
		}
		b.Logf("%-48s %6.2f per call", l.key, l.n/float64(b.N))
	}
	b.ReportMetric(writes/float64(b.N), "apiserver-writes/call")
	stopProfiles()
	b.ReportMetric(ceiling, "ceiling-calls/s")
	b.ReportMetric(switchboard, "switchboard-calls/s")
	b.ReportMetric(switchboard/ceiling, "ratio")
}

// cpuUse is the CPU used so far by the control plane and this process.
type cpuUse struct{ apiserver, etcd, self time.Duration }

func startCPU() cpuUse {
	return cpuUse{cpuTime(childPID("kube-apiserver")), cpuTime(childPID("etcd")), cpuTime(os.Getpid())}
}

// report reports the CPU used since u per call, in milliseconds.
func (u cpuUse) report(b *testing.B, prefix string) {
	now := startCPU()
	perCall := func(d time.Duration) float64 { return ms(d) / float64(b.N) }
	b.ReportMetric(perCall(now.apiserver-u.apiserver), prefix+"apiserver-cpu-ms/call")
	b.ReportMetric(perCall(now.etcd-u.etcd), prefix+"etcd-cpu-ms/call")
	if prefix == "" {
		b.ReportMetric(perCall(now.self-u.self), "operator-cpu-ms/call")
	}
}

// profileStage starts CPU, mutex and block profiling into dir ("": none)
// and returns what stops it and writes the files.
func profileStage(b *testing.B, dir string) func() {
	if dir == "" {
		return func() {}
	}
	cpu, err := os.Create(filepath.Join(dir, "cpu.pprof"))
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		b.Fatal(err)
	}
	runtime.SetMutexProfileFraction(5)
	runtime.SetBlockProfileRate(int(time.Millisecond))
	return func() {
		pprof.StopCPUProfile()
		_ = cpu.Close()
		for _, name := range []string{"mutex", "block"} {
			f, err := os.Create(filepath.Join(dir, name+".pprof"))
			if err != nil {
				b.Fatal(err)
			}
			_ = pprof.Lookup(name).WriteTo(f, 0)
			_ = f.Close()
		}
		runtime.SetMutexProfileFraction(0)
		runtime.SetBlockProfileRate(0)
	}
}

// isWrite: a line of writesBetween that counts a write.
func isWrite(key string) bool {
	verb, _, _ := strings.Cut(key, " ")
	switch verb {
	case "POST", "PUT", "PATCH", "DELETE", "APPLY":
		return true
	}
	return false
}

// watchCalls watches the Calls of ns until the returned func is called,
// reading every event, as an operator's informer does.
func watchCalls(b *testing.B, ns string) func() {
	wc, err := client.NewWithWatch(restConfig, client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	w, err := wc.Watch(context.Background(), &switchboardv1.CallList{}, client.InNamespace(ns))
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		for range w.ResultChan() {
		}
	}()
	return w.Stop
}

// measureCeiling writes b.N answered calls' apiserver writes and returns
// calls per second; content adds what Switchboard writes besides
// (asSwitchboard).
func measureCeiling(b *testing.B, o *org, content bool) float64 {
	start := time.Now()
	runCreates(b, ceilingWriters, b.N, func(i int) error { return ceilingCall(o, benchNumber(i), content) })
	return float64(b.N) / time.Since(start).Seconds()
}

// ceilingCall makes the apiserver writes of one answered call to number
// straight through the client: its create, the two status patches the
// call reconciler writes, its delete.
func ceilingCall(o *org, number string, content bool) error {
	ctx := context.Background()
	call := rawCall(o, number)
	if content {
		call.Labels = map[string]string{switchboardv1.WorkerLabel: "ceiling-0"}
		call.Annotations = map[string]string{"switchboard.dev/accepted-at": time.Now().Format(time.RFC3339Nano)}
	}
	if err := k8s.Create(ctx, call); err != nil {
		return err
	}
	for _, step := range []func(*switchboardv1.CallStatus){dialed, ended} {
		before := call.DeepCopy()
		step(&call.Status)
		if content {
			asSwitchboard(call)
		}
		if err := k8s.Status().Patch(ctx, call, client.MergeFrom(before)); err != nil {
			return err
		}
	}
	return k8s.Delete(ctx, call)
}

// dialed and ended are the status the call reconciler writes for an
// answered simulated call: when it is dialed, and when it has ended,
// recorded and been analyzed.
func dialed(s *switchboardv1.CallStatus) {
	now := metav1.NowMicro()
	s.Phase, s.FromNumber, s.StartedAt, s.AnsweredAt = switchboardv1.CallInProgress, "+14155550100", &now, &now
	s.EmittedEvents = []string{"call.started"}
}

func ended(s *switchboardv1.CallStatus) {
	now, at := metav1.NowMicro(), metav1.Now()
	ms := int64(200)
	s.Phase, s.Disposition, s.EndedAt, s.DurationMS, s.Duration = switchboardv1.CallEnded, switchboardv1.DispositionAnswered, &now, &ms, "0s"
	s.DisconnectionReason = "user_hangup"
	s.Recording = &switchboardv1.CallRecording{Key: "recordings/x.wav", ContentType: "audio/wav", SizeBytes: 6444, StoredAt: &at}
	s.Analysis = &switchboardv1.CallAnalysis{Summary: "The call was answered.", AnalyzedAt: &at}
	s.EmittedEvents = []string{"call.started", "call.ended", "call.analyzed"}
}

// asSwitchboard adds to a call's status what the call reconciler writes
// beside dialed's and ended's: the call id, the observed generation, the
// Ready condition and, once analyzed, the extracted values.
func asSwitchboard(c *switchboardv1.Call) {
	c.Status.CallID = callid.Of(c)
	c.Status.ObservedGeneration = c.Generation
	ready := metav1.Condition{Type: switchboardv1.ReadyCondition, Status: metav1.ConditionFalse,
		Reason: switchboardv1.ReasonInProgress, Message: "The call is ringing or connected.", ObservedGeneration: c.Generation}
	if a := c.Status.Analysis; a != nil {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionTrue, switchboardv1.ReasonCompleted, a.Summary
		value := func(raw string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(raw)} }
		a.ExtractedData = []switchboardv1.ExtractedValue{{Name: "customer_name", Value: value(`"Ada"`)},
			{Name: "confirmed", Value: value(`true`)}, {Name: "party_size", Value: value(`4`)}}
	}
	apimeta.SetStatusCondition(&c.Status.Conditions, ready)
}

// pipelineOptions make an operator whose calls pass through the whole
// per-call path quickly: short simulated calls, a 100 ms call retention.
func pipelineOptions(opts *app.Options) {
	opts.SimTimings = benchTimings
	opts.MaxConcurrentCalls = 64
	opts.Retention.Calls = 100 * time.Millisecond
	opts.CallNormalEvents = false // the default outside --dev
}

// startReplicas starts n whole operators (reconcilers, a 100 ms call
// retention, short simulated calls) and returns their API's base URLs.
// More than one elect a leader that runs the reconcilers.
func startReplicas(b *testing.B, n int) []string {
	if n > 1 {
		ensureNamespace(b, devenv.LeaderElectionNamespace)
	}
	var urls []string
	for i := range n {
		op, err := startOperator(true, pipelineOptions, func(opts *app.Options) {
			opts.LeaderElection = app.LeaderElectionOptions{Enabled: n > 1, Namespace: devenv.LeaderElectionNamespace}
			// Each replica is its own call worker: calls spread over them.
			opts.Worker.ID = fmt.Sprintf("ceiling-%d", i)
			// Room for every call placed: a worker's load is known only
			// at its Lease's renewals (every 5 s by default), and calls
			// of 0.3 s would otherwise wait queued for room long free
			// (the default capacity, 100 here, held the stage to 25
			// calls/s). The per-call path is measured, not the capacity.
			opts.Worker.Capacity = 100_000
		})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(op.stop)
		urls = append(urls, op.baseURL)
	}
	return urls
}

// measureSwitchboard places b.N calls through the REST APIs at urls, in
// turn, and returns calls per second until every event arrived and every
// Call left the cluster.
func measureSwitchboard(b *testing.B, urls []string, o *org, rc *receiver) float64 {
	httpc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: ceilingWriters}}
	var placed atomic.Int64
	start := time.Now()
	runCreates(b, ceilingWriters, b.N, func(i int) error {
		if err := postCallTo(httpc, urls[i%len(urls)], o, benchNumber(i)); err != nil {
			return fmt.Errorf("call %d: %w", i, err)
		}
		placed.Add(1)
		return nil
	})
	b.Logf("every call placed after %v", time.Since(start))
	waitEvents(b, rc, 3*b.N)
	b.Logf("every event delivered after %v", time.Since(start))
	waitNoCalls(b, o.ns)
	b.Logf("every Call archived and deleted after %v", time.Since(start))
	return float64(placed.Load()) / time.Since(start).Seconds()
}

// BenchmarkSaturation sends POST /v1/calls from 32, then 64, clients back
// to back for SWITCHBOARD_SATURATION_DURATION (10 s) against one whole
// operator: more than the cluster absorbs on this machine. A client that
// gets 503 waits its Retry-After, as the API asks. It reports p50/p99 of
// every answer and of the 201s, the share answered 503 and the calls
// admitted per second, then checks that every admitted call delivered its
// three events. SWITCHBOARD_SATURATION_GATE sets --max-placements-in-flight
// (default: the binary's; -1 measures without the gate). Run it with
// `make bench-saturation`.
func BenchmarkSaturation(b *testing.B) {
	duration := envDuration(b, "SWITCHBOARD_SATURATION_DURATION", 10*time.Second)
	gate, err := strconv.Atoi(envOr("SWITCHBOARD_SATURATION_GATE", strconv.Itoa(placementgate.DefaultInFlight)))
	if err != nil || gate == 0 {
		b.Fatalf("SWITCHBOARD_SATURATION_GATE: want a number of placements, or -1 for no bound")
	}
	full, err := startOperator(true, pipelineOptions, func(opts *app.Options) { opts.MaxPlacementsInFlight = gate })
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(full.stop)
	for _, clients := range []int{32, 64} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			o := newOrg(b)
			rc := newReceiver(b, nil)
			applyEndpoint(b, o.ns, rc.url(), nil)
			b.ResetTimer()
			admitted := 0
			for i := range b.N {
				creates := apiserverCallCreates(b)
				r := burst(b, full.baseURL, o, clients, duration, i)
				r.report(b, duration)
				reportCreates(b, creates)
				admitted += r.admitted
			}
			b.StopTimer()
			// Admitted is placed: every one of them delivers its events.
			waitEvents(b, rc, 3*admitted)
		})
	}
}

// burstResult is what the clients of one burst were answered.
type burstResult struct {
	all, created []time.Duration
	busy         int // 503s
	admitted     int
}

// burst has clients post calls back to back for duration; a 503 makes the
// client wait its Retry-After. Calls are numbered from round*1,000,000.
func burst(b *testing.B, baseURL string, o *org, clients int, duration time.Duration, round int) *burstResult {
	httpc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	var next atomic.Int64
	next.Store(int64(round) * 1_000_000)
	results := make(chan *burstResult, clients)
	end := time.Now().Add(duration)
	for range clients {
		go func() {
			r := &burstResult{}
			defer func() { results <- r }()
			for time.Now().Before(end) {
				start := time.Now()
				_, err := placeCall(httpc, baseURL, o, benchNumber(int(next.Add(1))))
				took := time.Since(start)
				r.all = append(r.all, took)
				var status *statusError
				switch {
				case err == nil:
					r.created, r.admitted = append(r.created, took), r.admitted+1
				case errors.As(err, &status) && status.code == http.StatusServiceUnavailable:
					r.busy++
					time.Sleep(time.Second) // Retry-After: 1
				default:
					b.Error(err)
					return
				}
			}
		}()
	}
	total := &burstResult{}
	for range clients {
		r := <-results
		total.all, total.created = append(total.all, r.all...), append(total.created, r.created...)
		total.busy += r.busy
		total.admitted += r.admitted
	}
	return total
}

func (r *burstResult) report(b *testing.B, duration time.Duration) {
	if len(r.created) == 0 {
		b.Fatal("no call was admitted")
	}
	slices.Sort(r.all)
	slices.Sort(r.created)
	p := func(ds []time.Duration, q float64) float64 { return ms(ds[int(q*float64(len(ds)-1))]) }
	b.ReportMetric(p(r.all, 0.5), "p50-ms")
	b.ReportMetric(p(r.all, 0.99), "p99-ms")
	b.ReportMetric(p(r.created, 0.99), "201-p99-ms")
	b.ReportMetric(100*float64(r.busy)/float64(len(r.all)), "%503")
	b.ReportMetric(float64(r.admitted)/duration.Seconds(), "admitted-calls/s")
}
