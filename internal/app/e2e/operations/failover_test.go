package operations_test

// Two replicas against one apiserver and one PostgreSQL: the leader is
// stopped in place with 200 calls in flight, its work cut off mid-way (as
// in a rollout or a drained node; no drain here). The other replica serves
// the REST API throughout, is handed the lease, and every call ends: its
// own on the carrier's terms, the stopped worker's as worker_lost; every
// event is delivered with the id it was first given; no call is dialed twice.

import (
	"context"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/app"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
	"github.com/switchboard-dev/switchboard/internal/devenv"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/history/pgtest"
	"github.com/switchboard-dev/switchboard/internal/telephony/sim"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

func TestLeaderFailoverWithCallsInFlight(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	store, err := history.Open(ctx, pgtest.NewServer(t).DSN())
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = store.Close() })

	// The suite's operator makes way for two replicas of one installation.
	MakeWayForReplicas(t)
	replicaOptions := func(o *app.Options) {
		o.History = store
		// A long lease: only a handover can bring the survivor in within
		// the bound below, and the new leader's first burst of reconciles
		// (every Call in the cluster, on a loaded machine under -race)
		// cannot delay its renewals past the deadline. A replica that loses
		// its lease stops, and here no kubelet would restart it.
		o.LeaderElection = app.LeaderElectionOptions{Enabled: true, Namespace: devenv.LeaderElectionNamespace, Lease: FailoverLease}
		o.SimTimings = sim.Timings{Ring: 2 * time.Second, Talk: 6 * time.Second, Voicemail: 6 * time.Second}
		o.MaxConcurrentCalls = 64
	}
	replica := func(id string) func(o *app.Options) {
		return func(o *app.Options) {
			o.Worker.ID = id
			replicaOptions(o)
		}
	}
	leader, err := StartOperator(true, replica("failover-leader"))
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(leader.Stop)
	testsupport.WaitLeaseHolder(t, K8s, "", nil)
	survivor, err := StartOperator(true, replica("failover-survivor"))
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(survivor.Stop)
	Operator = survivor // the suite's helpers talk to it

	o := NewOrg(t)
	rc := NewReceiver(t, nil)
	ApplyEndpoint(t, o.Ns, rc.URL(), nil)
	httpc := &http.Client{Timeout: 10 * time.Second}
	ids := PlaceThrough(t, httpc, survivor.BaseURL, o, FailoverCalls)

	// The leader stops with the calls ringing or connected (each lasts 8 s).
	unavailable := WatchAvailability(httpc, survivor.BaseURL, o.Key)
	stoppedAt := time.Now()
	leader.Stop()
	stopTook := time.Since(stoppedAt)
	late, err := PlaceCall(httpc, survivor.BaseURL, o, "+14155559999")
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() switchboardv1.CallPhase {
		var c switchboardv1.Call
		_ = K8s.Get(ctx, client.ObjectKey{Namespace: o.Ns, Name: CallName(late)}, &c)
		return c.CurrentPhase()
	}, time.Minute, 50*time.Millisecond).ShouldNot(Equal(switchboardv1.CallQueued))
	resumed := time.Since(stoppedAt)
	ids = append(ids, late)

	// Every call reaches a final state and is analyzed.
	g.Eventually(func() int { return CountFinal(t, survivor.BaseURL, o.Key, ids) }, 3*time.Minute, time.Second).
		Should(Equal(len(ids)))
	failures := unavailable()
	t.Logf("leader stopped with %d calls in flight: REST unavailable for %d of the survivor's requests; "+
		"the leader took %.1f s to stop; reconciling resumed %.1f s after the stop (lease %s)",
		FailoverCalls, failures, stopTook.Seconds(), resumed.Seconds(), FailoverLease)
	g.Expect(failures).To(BeZero(), "the survivor's REST API failed during the failover")
	// The stopped leader released its lease: the survivor took over sooner
	// than even the default lease would lapse after a crash.
	g.Expect(resumed).To(BeNumerically("<", app.DefaultLeaderElectionLease),
		"the survivor waited for the lease to lapse instead of being handed it")

	// Every event arrives, each under one delivery id however often sent.
	g.Eventually(func() int { return len(EventIDs(rc, ids)) }, 3*time.Minute, time.Second).Should(Equal(3 * len(ids)))
	for key, deliveryIDs := range EventIDs(rc, ids) {
		g.Expect(deliveryIDs).To(HaveLen(1), "%s was delivered under several ids: %v", key, deliveryIDs)
	}
	// No call was dialed twice: one Dialing Event each, at most (the dead
	// leader's last Events may be lost, never doubled).
	var evs eventsv1.EventList
	g.Expect(K8s.List(ctx, &evs, client.InNamespace(o.Ns))).To(Succeed())
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
