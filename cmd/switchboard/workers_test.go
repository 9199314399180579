package main

// TestCallsSpreadOverReplicas runs three replicas of the real binary
// against one apiserver and one PostgreSQL, as a Deployment of three pods
// does. Calls placed through all three REST APIs spread over all three
// workers; one replica is stopped (SIGTERM) mid-call and drains: its calls
// finish, it takes no new ones, then it exits 0; another is killed
// (SIGKILL): its calls end worker_lost within its Lease's time, none is
// dialed twice, and no event is lost; new calls keep flowing throughout.

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/app"
	"github.com/switchboard-dev/switchboard/internal/callid"
	"github.com/switchboard-dev/switchboard/internal/devenv"
	"github.com/switchboard-dev/switchboard/internal/history/pgtest"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
	"github.com/switchboard-dev/switchboard/internal/workers"
)

const (
	// spreadCalls are placed before the stop and the kill, spreadLate
	// after. The issue asks for 300; on this project's 2-core machines,
	// shared with the control plane, PostgreSQL and the other tests, 150
	// live calls over three processes keep the test within its minutes.
	spreadCalls = 300
	spreadLate  = 30
	// spreadTalk keeps every call live well past the stop and the kill.
	spreadTalk = 20 * time.Second
)

func TestCallsSpreadOverReplicas(t *testing.T) {
	testsupport.Needs(t, "a control plane (envtest) and PostgreSQL")
	g := NewWithT(t)
	bin := buildBinary(t)
	cp, err := testsupport.StartControlPlane(filepath.Join("..", ".."), app.NewScheme())
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = cp.Stop() })
	replica := replicaCommand(bin, cp.ManagerKubeconfig(t), pgtest.NewServer(t).DSN(), t.TempDir())
	args := []string{"--sim-talk=" + spreadTalk.String(), "--webhook-allow-insecure=true", "--drain-timeout=2m",
		"--max-active-calls-per-replica=300",
		// The organization places its 300 calls in seconds: no limits here.
		"--quota-create-rate=0", "--quota-create-burst=0", "--quota-active-calls=0",
		// What is asserted is that no event is lost: an attempt that failed
		// on this loaded machine is retried within seconds, not minutes.
		"--webhook-retry-schedule=0s,1s,2s,5s,10s,20s"}
	// The first is the leader: the other two are stopped and killed.
	stays := replica(t, "worker-a", args...)
	testsupport.WaitLeaseHolder(t, cp.Client, "", func() string { return tail(stays.logs.String()) })
	drains, dies := replica(t, "worker-b", args...), replica(t, "worker-c", args...)
	replicas := []*replicaProcess{stays, drains, dies}

	ns := cp.NewOrganization(t, "spread-")
	key := createAPIKey(t, cp.Client, ns)
	agentID := testsupport.CreateAgent(t, cp.Client, ns, "reminder", func(*switchboardv1.AgentSpec) {}).ResolvedID()
	for _, r := range replicas {
		waitForKey(t, r, key)
	}
	pool := &workers.Pool{Reader: cp.Client, Namespace: devenv.LeaderElectionNamespace, Clock: clock.RealClock{}}
	waitWorkers(t, pool, "all three alive", func(ws map[string]workers.Worker) bool { return len(ws) == 3 })
	events := newEventLog(t)
	createEndpoint(t, stays.base, key, events.url)
	// Each worker queues a call's events for the endpoints its cache
	// holds: the calls start once every replica has the endpoint.
	for _, r := range replicas {
		waitForEndpoint(t, r, key, events.url)
	}

	// Placed through all three APIs, the calls spread over all three workers.
	ids := placeAll(t, replicas, key, agentID, spreadCalls, 0)
	carried := countByWorker(t, cp.Client, ns)
	t.Logf("%d calls over three workers: %v", spreadCalls, carried)
	for _, r := range replicas {
		g.Expect(carried[r.worker]).To(BeNumerically(">", 0), "worker %s got no call: %v", r.worker, carried)
		g.Expect(carried[r.worker]).To(BeNumerically("<=", spreadCalls/2), "worker %s carries more than half: %v", r.worker, carried)
	}
	g.Eventually(func() int { return countPhase(t, cp.Client, ns, switchboardv1.CallQueued) }, time.Minute, 100*time.Millisecond).
		Should(BeZero(), "calls never went out")
	before := workerOf(t, cp.Client, ns)

	// One replica stops: it drains. Another dies.
	g.Expect(drains.cmd.Process.Signal(syscall.SIGTERM)).To(Succeed())
	waitWorkers(t, pool, "worker-b draining", func(ws map[string]workers.Worker) bool { return ws[drains.worker].Draining })
	g.Expect(dies.cmd.Process.Signal(syscall.SIGKILL)).To(Succeed())
	killed := time.Now()
	_ = dies.wait()

	// New calls keep flowing, through the draining replica's API too; none
	// goes to it.
	late := placeAll(t, []*replicaProcess{stays, drains}, key, agentID, spreadLate, spreadCalls)
	for name, w := range workerOf(t, cp.Client, ns) {
		if _, old := before[name]; !old {
			g.Expect(w).NotTo(Equal(drains.worker), "%s went to the draining worker", name)
		}
	}

	// The draining replica's calls finish on the carrier's terms, then it exits 0.
	g.Eventually(drains.exited, 2*time.Minute).Should(Receive(BeNil()), "the draining replica did not exit 0\n%s", tail(drains.logs.String()))
	drains.done = true
	var lostEnds []time.Duration
	for name, w := range before {
		c := testsupport.WaitCallFinished(t, cp.Client, ns, name)
		switch w {
		case drains.worker:
			g.Expect(string(c.Status.Disposition)).To(Equal("answered"), "%s drained\n%s", name, tail(drains.logs.String()))
			g.Expect(c.Status.DisconnectionReason).NotTo(Equal("worker_lost"), name)
		case dies.worker:
			g.Expect(c.Status.DisconnectionReason).To(Equal("worker_lost"), name)
			lostEnds = append(lostEnds, c.Status.EndedAt.Sub(killed))
		default:
			g.Expect(string(c.Status.Disposition)).To(Equal("answered"), name)
		}
	}
	for _, name := range late {
		c := testsupport.WaitCallFinished(t, cp.Client, ns, callName(name))
		g.Expect(string(c.Status.Disposition)).To(Equal("answered"), "%s placed after the stop and the kill", name)
	}
	slowest := slices.Max(lostEnds)
	t.Logf("the killed worker's %d calls ended worker_lost at most %.1f s after the kill (worker Lease %s)",
		len(lostEnds), slowest.Seconds(), crashLease)
	// The Lease lapses, then the leader's next sweep (a third of it) ends
	// them; the margin is for a loaded machine, not for the design.
	g.Expect(slowest).To(BeNumerically("<", 2*crashLease+10*time.Second))

	// Every call was dialed once at most (a killed process may lose its
	// last Events, never double them), and every event arrived.
	for name, n := range dialingEvents(t, cp.Client, ns) {
		g.Expect(n).To(Equal(1), "%s was dialed %d times", name, n)
	}
	all := append(ids, late...)
	g.Eventually(func() []string { return missingEvents(t, cp.Client, ns, events, all, before) }, time.Minute, 200*time.Millisecond).
		Should(BeEmpty(), "calls without all three events; their call.started deliveries: %s",
			startedDeliveries(t, stays, key, missingEvents(t, cp.Client, ns, events, all, before)))
}

// startedDeliveries is what the delivery log says of the call.started
// deliveries of the calls missing describes (for a failure's message).
func startedDeliveries(t *testing.T, r *replicaProcess, key string, missing []string) string {
	_, endpoints, _ := send("GET", r.base+"/v1/webhook-endpoints", key, "")
	id := between(endpoints, `"id":"`, `"`)
	_, log, _ := send("GET", r.base+"/v1/webhook-endpoints/"+id+"/deliveries?event=call.started", key, "")
	var out []string
	for _, m := range missing {
		callID, _, _ := strings.Cut(m, " ")
		if i := strings.Index(log, callID); i >= 0 {
			out = append(out, log[max(0, i-400):min(len(log), i+400)])
		} else {
			out = append(out, callID+": not in the delivery log's first page of call.started")
		}
	}
	return strings.Join(out, "\n")
}

// missingEvents describes the calls of ids whose three events have not all
// arrived: which worker carried them, how they ended.
func missingEvents(t *testing.T, c client.Client, ns string, events *eventLog, ids []string, carried map[string]string) []string {
	var out []string
	for _, id := range ids {
		if events.has(id, []string{"call.started", "call.ended", "call.analyzed"}) {
			continue
		}
		var call switchboardv1.Call
		_ = c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: callName(id)}, &call)
		events.mu.Lock()
		got := fmt.Sprint(events.got[id])
		events.mu.Unlock()
		out = append(out, fmt.Sprintf("%s (carried by %q, now %q): %s %s %s, emitted %v, received %s", id, carried[callName(id)],
			call.Labels[switchboardv1.WorkerLabel], call.Status.Phase, call.Status.Disposition, call.Status.DisconnectionReason,
			call.Status.EmittedEvents, got))
	}
	return out
}

// createAPIKey creates an API key of ns, as a platform team does.
func createAPIKey(t *testing.T, c client.Client, ns string) string {
	t.Helper()
	key := "sk_spread_0123456789abcdef0123456789_" + ns
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api-key"},
		Type: switchboardv1.APIKeySecretType, Data: map[string][]byte{switchboardv1.APIKeySecretKey: []byte(key)}}
	if err := c.Create(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	return key
}

// waitForKey waits until r's REST API serves and knows key.
func waitForKey(t *testing.T, r *replicaProcess, key string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if status, _, err := send("GET", r.base+"/v1/calls", key, ""); err == nil && status == 200 {
			return
		}
	}
	t.Fatalf("%s never accepted the key\n%s", r.worker, tail(r.logs.String()))
}

// waitForEndpoint waits until r's API lists the webhook endpoint of url.
func waitForEndpoint(t *testing.T, r *replicaProcess, key, url string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if status, body, err := send("GET", r.base+"/v1/webhook-endpoints", key, ""); err == nil && status == 200 &&
			strings.Contains(body, url) {
			return
		}
	}
	t.Fatalf("%s never listed the endpoint\n%s", r.worker, tail(r.logs.String()))
}

// placeAll places n calls through the replicas' APIs in turn, 8 at a time,
// numbered from first; it returns their call ids.
func placeAll(t *testing.T, through []*replicaProcess, key, agentID string, n, first int) []string {
	t.Helper()
	ids := make([]string, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			body := fmt.Sprintf(`{"agent_id":%q,"to_number":"+1415555%04d","variables":{"customer_name":"Ada"}}`, agentID, 2000+first+i)
			status, answer, err := placeRetryingBusy(through[i%len(through)].base, key, body)
			if err != nil || status != 201 {
				errs <- fmt.Errorf("POST /v1/calls through %s: %d %s %v", through[i%len(through)].worker, status, answer, err)
				return
			}
			ids[i] = between(answer, `"call_id":"`, `"`)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return ids
}

// placeRetryingBusy posts a call as a client that follows the API's
// contract does: a 503 server_busy from the placement gate (which adapts
// to how fast creates are, so a loaded machine meets it) created nothing,
// and is tried again after its Retry-After (1 s), for up to a minute.
func placeRetryingBusy(base, key, body string) (int, string, error) {
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Second) {
		status, answer, err := send("POST", base+"/v1/calls", key, body)
		if err != nil || status != 503 || !strings.Contains(answer, `"server_busy"`) || time.Now().After(deadline) {
			return status, answer, err
		}
	}
}

// countByWorker counts the Calls of ns per worker.
func countByWorker(t *testing.T, c client.Client, ns string) map[string]int {
	out := map[string]int{}
	for _, w := range workerOf(t, c, ns) {
		out[w]++
	}
	return out
}

// waitWorkers waits until the workers' Leases are as described.
func waitWorkers(t *testing.T, p *workers.Pool, what string, ok func(map[string]workers.Worker) bool) {
	t.Helper()
	var last map[string]workers.Worker
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		ws, err := p.Workers(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		last = map[string]workers.Worker{}
		for _, w := range ws {
			if w.Alive(time.Now()) {
				last[w.Name] = w
			}
		}
		if ok(last) {
			return
		}
	}
	t.Fatalf("the workers were never %s: %+v", what, last)
}

// callName is the Call resource's name of a call id.
func callName(id string) string { return callid.ResourceName(id) }
