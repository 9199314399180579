package apptest

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/zaf/g711"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/app"
	"github.com/switchboard-dev/switchboard/internal/devenv"
)

// StartCallWorkers starts n operators that are call workers with room for
// calls each, and returns their API's base URLs; they stop when b ends.
// The first is the suite's operator meanwhile.
func StartCallWorkers(b *testing.B, n, calls int) []string {
	var urls []string
	for i := range n {
		op, err := StartOperator(true, func(opts *app.Options) {
			opts.LeaderElection = app.LeaderElectionOptions{Enabled: n > 1, Namespace: devenv.LeaderElectionNamespace}
			opts.Worker.ID = fmt.Sprintf("replica-%d", i)
			opts.Worker.Capacity = calls + 10
			opts.MaxConcurrentCalls = calls + 10
			opts.CallNormalEvents = false
		})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(op.Stop)
		if i == 0 {
			Operator = op // the suite's helpers (newOrg) talk to it
		}
		urls = append(urls, op.BaseURL)
	}
	return urls
}

// HoldCalls measures the replicas idle for a few seconds, then places
// calls at 30 a second over urls, checks that all are up at once, and
// waits for each to end with its recording stored. It returns the CPU this
// process spent per call-second over the calls' whole lives (placement,
// media, recording, post-call), the idle replicas' own CPU taken out.
func HoldCalls(b *testing.B, urls []string, o *Org, calls int, talk time.Duration) float64 {
	idle := CPURate(b, 5*time.Second) // the measurement itself: nothing runs meanwhile
	httpc := &http.Client{Timeout: time.Minute}
	pace := time.NewTicker(time.Second / 30)
	defer pace.Stop()
	b.ResetTimer()
	cpu0, t0 := CPUTime(os.Getpid()), time.Now()
	for i := range calls {
		<-pace.C
		if err := PostCallTo(httpc, urls[i%len(urls)], o, BenchNumber(i)); err != nil {
			b.Fatalf("call %d: %v", i, err)
		}
	}
	live := WaitCalls(b, o.Ns, talk, func(live []switchboardv1.Call) bool { return len(live) == calls && AllAnswered(live) })
	perReplica := map[string]int{}
	for _, c := range live {
		perReplica[c.Labels[switchboardv1.WorkerLabel]]++
	}
	WaitRecorded(b, o.Ns, calls, talk)
	elapsed := time.Since(t0)
	cpu := CPUTime(os.Getpid()) - cpu0 - time.Duration(idle*float64(elapsed))
	b.StopTimer()
	most := 0
	for _, n := range perReplica {
		most = max(most, n)
	}
	perCallSecond := Ms(cpu) / (float64(calls) * talk.Seconds())
	b.ReportMetric(float64(calls)/float64(len(urls)), "calls/replica")
	b.ReportMetric(float64(most), "most-calls-on-a-replica")
	b.ReportMetric(1000*idle, "idle-cpu-ms/s")
	b.ReportMetric(perCallSecond, "operator-cpu-ms/call-second")
	b.Logf("calls per worker: %v", perReplica)
	return perCallSecond
}

// CPURate is the share of a core this process uses over d.
func CPURate(b *testing.B, d time.Duration) float64 {
	b.Helper()
	cpu0, t0 := CPUTime(os.Getpid()), time.Now()
	time.Sleep(d)
	return float64(CPUTime(os.Getpid())-cpu0) / float64(time.Since(t0))
}

// AllAnswered: every call is in progress, answered.
func AllAnswered(calls []switchboardv1.Call) bool {
	for _, c := range calls {
		if c.Status.AnsweredAt == nil || c.CurrentPhase() != switchboardv1.CallInProgress {
			return false
		}
	}
	return true
}

// WaitCalls lists the Calls of ns until done says so of them, within
// talk (at least 30 s), and returns them.
func WaitCalls(b *testing.B, ns string, talk time.Duration, done func([]switchboardv1.Call) bool) []switchboardv1.Call {
	deadline := time.Now().Add(max(talk, 30*time.Second))
	for {
		var list switchboardv1.CallList
		if err := K8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			b.Fatal(err)
		}
		if done(list.Items) {
			return list.Items
		}
		if time.Now().After(deadline) {
			b.Fatalf("the calls did not get there in time: %d listed", len(list.Items))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// WaitRecorded waits for every call to end answered with its recording
// stored.
func WaitRecorded(b *testing.B, ns string, calls int, talk time.Duration) {
	WaitCalls(b, ns, talk+30*time.Second, func(live []switchboardv1.Call) bool {
		recorded := 0
		for _, c := range live {
			if c.Status.Disposition == switchboardv1.DispositionAnswered && c.Status.Recording != nil {
				recorded++
			}
		}
		return recorded == calls
	})
}

// WriteUlawTone writes a second of a 400 Hz tone as raw PCMU, which the
// callee loops.
func WriteUlawTone(b *testing.B) string {
	ulaw := make([]byte, 8000)
	for i := range ulaw {
		ulaw[i] = g711.EncodeUlawFrame(int16(8000 * math.Sin(2*math.Pi*400*float64(i)/8000)))
	}
	path := filepath.Join(b.TempDir(), "tone.ulaw")
	if err := os.WriteFile(path, ulaw, 0o600); err != nil {
		b.Fatal(err)
	}
	return path
}
