package apptest

// Two replicas against one apiserver and one PostgreSQL: the leader is
// stopped in place with 200 calls in flight, its work cut off mid-way (as
// in a rollout or a drained node; no drain here). The other replica serves
// the REST API throughout, is handed the lease, and every call ends: its
// own on the carrier's terms, the stopped worker's as worker_lost; every
// event is delivered with the id it was first given; no call is dialed twice.

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

const (
	FailoverCalls = 200
	FailoverLease = 30 * time.Second
)

// PlaceThrough places n calls through one replica's REST API, 16 at a time.
func PlaceThrough(t *testing.T, httpc *http.Client, baseURL string, o *Org, n int) []string {
	t.Helper()
	ids := make([]string, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	var failed atomic.Int32
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			id, err := PlaceCall(httpc, baseURL, o, BenchNumber(i))
			if err != nil {
				failed.Add(1)
				return
			}
			ids[i] = id
		}()
	}
	wg.Wait()
	NewWithT(t).Expect(failed.Load()).To(BeZero())
	return ids
}

// WatchAvailability polls the replica's REST API every 50 ms until the
// returned function is called, which says how many requests failed.
func WatchAvailability(httpc *http.Client, baseURL, key string) func() int {
	var failures atomic.Int32
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			req, _ := http.NewRequestWithContext(context.Background(), "GET", baseURL+"/v1/concurrency", nil)
			req.Header.Set("Authorization", "Bearer "+key)
			resp, err := httpc.Do(req)
			if err != nil {
				failures.Add(1)
				continue
			}
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				failures.Add(1)
			}
		}
	}()
	return func() int {
		close(done)
		<-stopped
		return int(failures.Load())
	}
}

// CountFinal counts the calls that are final and, unless failed, analyzed.
func CountFinal(t *testing.T, baseURL, key string, ids []string) int {
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	n := 0
	for call := range ListCalls(t, baseURL, key) {
		id, _ := call["call_id"].(string)
		status, _ := call["status"].(string)
		if want[id] && switchboardv1.CallPhase(status).Final() && (status == "failed" || call["analysis"] != nil) {
			n++
		}
	}
	return n
}

// EventIDs maps each (call, event) of ids the receiver got to the distinct
// delivery ids it came under.
func EventIDs(rc *Receiver, ids []string) map[string][]string {
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	seen := map[string]map[string]bool{}
	for _, d := range rc.Deliveries() {
		id, _ := d.Call()["call_id"].(string)
		if !want[id] {
			continue
		}
		key := id + " " + d.Event
		if seen[key] == nil {
			seen[key] = map[string]bool{}
		}
		seen[key][d.ID] = true
	}
	out := map[string][]string{}
	for key, set := range seen {
		for id := range set {
			out[key] = append(out[key], id)
		}
	}
	return out
}
