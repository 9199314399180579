package app_test

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
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/app"
	"github.com/switchboard-dev/switchboard/internal/devenv"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/history/pgtest"
	"github.com/switchboard-dev/switchboard/internal/telephony/sim"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

const (
	failoverCalls = 200
	failoverLease = 30 * time.Second
)

func TestLeaderFailoverWithCallsInFlight(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	store, err := history.Open(ctx, pgtest.NewServer(t).DSN())
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = store.Close() })

	// The suite's operator makes way for two replicas of one installation.
	makeWayForReplicas(t)
	replicaOptions := func(o *app.Options) {
		o.History = store
		// A long lease: only a handover can bring the survivor in within
		// the bound below, and the new leader's first burst of reconciles
		// (every Call in the cluster, on a loaded machine under -race)
		// cannot delay its renewals past the deadline. A replica that loses
		// its lease stops, and here no kubelet would restart it.
		o.LeaderElection = app.LeaderElectionOptions{Enabled: true, Namespace: devenv.LeaderElectionNamespace, Lease: failoverLease}
		o.SimTimings = sim.Timings{Ring: 2 * time.Second, Talk: 6 * time.Second, Voicemail: 6 * time.Second}
		o.MaxConcurrentCalls = 64
	}
	replica := func(id string) func(o *app.Options) {
		return func(o *app.Options) {
			o.Worker.ID = id
			replicaOptions(o)
		}
	}
	leader, err := startOperator(true, replica("failover-leader"))
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(leader.stop)
	testsupport.WaitLeaseHolder(t, k8s, "", nil)
	survivor, err := startOperator(true, replica("failover-survivor"))
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(survivor.stop)
	operator = survivor // the suite's helpers talk to it

	o := newOrg(t)
	rc := newReceiver(t, nil)
	applyEndpoint(t, o.ns, rc.url(), nil)
	httpc := &http.Client{Timeout: 10 * time.Second}
	ids := placeThrough(t, httpc, survivor.baseURL, o, failoverCalls)

	// The leader stops with the calls ringing or connected (each lasts 8 s).
	unavailable := watchAvailability(httpc, survivor.baseURL, o.key)
	stoppedAt := time.Now()
	leader.stop()
	stopTook := time.Since(stoppedAt)
	late, err := placeCall(httpc, survivor.baseURL, o, "+14155559999")
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() switchboardv1.CallPhase {
		var c switchboardv1.Call
		_ = k8s.Get(ctx, client.ObjectKey{Namespace: o.ns, Name: callName(late)}, &c)
		return c.CurrentPhase()
	}, time.Minute, 50*time.Millisecond).ShouldNot(Equal(switchboardv1.CallQueued))
	resumed := time.Since(stoppedAt)
	ids = append(ids, late)

	// Every call reaches a final state and is analyzed.
	g.Eventually(func() int { return countFinal(t, survivor.baseURL, o.key, ids) }, 3*time.Minute, time.Second).
		Should(Equal(len(ids)))
	failures := unavailable()
	t.Logf("leader stopped with %d calls in flight: REST unavailable for %d of the survivor's requests; "+
		"the leader took %.1f s to stop; reconciling resumed %.1f s after the stop (lease %s)",
		failoverCalls, failures, stopTook.Seconds(), resumed.Seconds(), failoverLease)
	g.Expect(failures).To(BeZero(), "the survivor's REST API failed during the failover")
	// The stopped leader released its lease: the survivor took over sooner
	// than even the default lease would lapse after a crash.
	g.Expect(resumed).To(BeNumerically("<", app.DefaultLeaderElectionLease),
		"the survivor waited for the lease to lapse instead of being handed it")

	// Every event arrives, each under one delivery id however often sent.
	g.Eventually(func() int { return len(eventIDs(rc, ids)) }, 3*time.Minute, time.Second).Should(Equal(3 * len(ids)))
	for key, deliveryIDs := range eventIDs(rc, ids) {
		g.Expect(deliveryIDs).To(HaveLen(1), "%s was delivered under several ids: %v", key, deliveryIDs)
	}
	// No call was dialed twice: one Dialing Event each, at most (the dead
	// leader's last Events may be lost, never doubled).
	var evs eventsv1.EventList
	g.Expect(k8s.List(ctx, &evs, client.InNamespace(o.ns))).To(Succeed())
	dialed := map[string]int{}
	for _, e := range evs.Items {
		if e.Reason == "Dialing" {
			dialed[e.Regarding.Name]++
		}
	}
	for name, n := range dialed {
		g.Expect(n).To(Equal(1), "%s was dialed %d times", name, n)
	}
}

// placeThrough places n calls through one replica's REST API, 16 at a time.
func placeThrough(t *testing.T, httpc *http.Client, baseURL string, o *org, n int) []string {
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
			id, err := placeCall(httpc, baseURL, o, benchNumber(i))
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

// watchAvailability polls the replica's REST API every 50 ms until the
// returned function is called, which says how many requests failed.
func watchAvailability(httpc *http.Client, baseURL, key string) func() int {
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

// countFinal counts the calls that are final and, unless failed, analyzed.
func countFinal(t *testing.T, baseURL, key string, ids []string) int {
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	n := 0
	for call := range listCalls(t, baseURL, key) {
		id, _ := call["call_id"].(string)
		status, _ := call["status"].(string)
		if want[id] && switchboardv1.CallPhase(status).Final() && (status == "failed" || call["analysis"] != nil) {
			n++
		}
	}
	return n
}

// eventIDs maps each (call, event) of ids the receiver got to the distinct
// delivery ids it came under.
func eventIDs(rc *receiver, ids []string) map[string][]string {
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	seen := map[string]map[string]bool{}
	for _, d := range rc.deliveries() {
		id, _ := d.call()["call_id"].(string)
		if !want[id] {
			continue
		}
		key := id + " " + d.event
		if seen[key] == nil {
			seen[key] = map[string]bool{}
		}
		seen[key][d.id] = true
	}
	out := map[string][]string{}
	for key, set := range seen {
		for id := range set {
			out[key] = append(out[key], id)
		}
	}
	return out
}
