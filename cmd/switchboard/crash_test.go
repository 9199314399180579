package main

// TestLeaderCrash runs two replicas of the real binary against one
// apiserver and one PostgreSQL and kills the leader's process (SIGKILL: no
// handover, nothing flushed) while calls ring and talk on both. The other
// replica takes the lease once it lapses unrenewed; its own calls end on
// the carrier's terms, the dead one's end worker_lost, each dialed once.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/app"
	"github.com/switchboard-dev/switchboard/internal/devenv"
	"github.com/switchboard-dev/switchboard/internal/history/pgtest"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

const (
	crashLease = 4 * time.Second
	crashCalls = 12
)

func TestLeaderCrash(t *testing.T) {
	testsupport.Needs(t, "a control plane (envtest) and PostgreSQL")
	g := NewWithT(t)
	bin := buildBinary(t)
	cp, err := testsupport.StartControlPlane(filepath.Join("..", ".."), app.NewScheme())
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = cp.Stop() })
	replica := replicaCommand(bin, cp.ManagerKubeconfig(t), pgtest.NewServer(t).DSN(), t.TempDir())

	leader := replica(t, "leader")
	holder := testsupport.WaitLeaseHolder(t, cp.Client, "", func() string { return tail(leader.logs.String()) })
	follower := replica(t, "follower")

	ns := cp.NewOrganization(t, "crash-")
	agentID := testsupport.CreateAgent(t, cp.Client, ns, "reminder", func(*switchboardv1.AgentSpec) {}).ResolvedID()
	for i := range crashCalls {
		testsupport.CreateCall(t, cp.Client, ns, fmt.Sprintf("call-%02d", i), agentID, fmt.Sprintf("+1415555%04d", 1100+i))
	}
	// The leader dies with every call dialed: ringing (2 s) or talking (6 s).
	g.Eventually(func() int { return countPhase(t, cp.Client, ns, switchboardv1.CallQueued) }, time.Minute, 50*time.Millisecond).
		Should(BeZero(), "the leader never dialed the calls\n%s", tail(leader.logs.String()))
	g.Expect(countPhase(t, cp.Client, ns, switchboardv1.CallEnded)).To(BeZero(), "calls ended before the crash")
	carriedBy := workerOf(t, cp.Client, ns)
	g.Expect(leader.cmd.Process.Signal(syscall.SIGKILL)).To(Succeed())
	killed := time.Now()
	_ = leader.wait()

	testsupport.WaitLeaseHolder(t, cp.Client, holder, func() string { return tail(follower.logs.String()) })
	t.Logf("the follower took the lease %.1f s after the leader was killed (lease %s)", time.Since(killed).Seconds(), crashLease)
	// The follower's calls end on the carrier's terms; the dead leader's
	// were cut off with it: worker_lost.
	for i := range crashCalls {
		name := fmt.Sprintf("call-%02d", i)
		c := testsupport.WaitCallFinished(t, cp.Client, ns, name)
		g.Expect(c.Status.Phase).To(Equal(switchboardv1.CallEnded), "%s\n%s", c.Name, tail(follower.logs.String()))
		g.Expect(c.Status.Analysis).NotTo(BeNil(), c.Name)
		if carriedBy[name] == leader.worker {
			g.Expect(c.Status.DisconnectionReason).To(Equal("worker_lost"), c.Name)
		} else {
			g.Expect(string(c.Status.Disposition)).To(Equal("answered"), c.Name)
		}
	}
	dialed := dialingEvents(t, cp.Client, ns)
	g.Expect(dialed).To(HaveLen(crashCalls), "Dialing Events per call: %v", dialed)
	for name, n := range dialed {
		g.Expect(n).To(Equal(1), "%s was dialed %d times", name, n)
	}
}

// replicaCommand returns what starts one replica as a Deployment runs it:
// leader election, the history in PostgreSQL, no SIP, the simulated
// carrier with calls of 8 s (2 ringing, 6 talking), a worker Lease as long
// as the leader's; args add to or override those flags.
func replicaCommand(bin, kubeconfig, dsn, dir string) func(t *testing.T, worker string, args ...string) *replicaProcess {
	return func(t *testing.T, worker string, args ...string) *replicaProcess {
		t.Helper()
		addr := testsupport.FreeAddr(t)
		cmd := exec.Command(bin, append([]string{"--leader-elect", "--leader-election-namespace=" + devenv.LeaderElectionNamespace,
			"--leader-elect-lease-duration=" + crashLease.String(), "--history-dsn=" + dsn,
			"--worker-id=" + worker, "--worker-lease-duration=" + crashLease.String(),
			"--api-addr=" + addr, "--metrics-bind-address=0", "--health-probe-bind-address=0",
			"--recording-dir=" + filepath.Join(dir, worker, "recordings"), "--sip=false", "--call-normal-events=true",
			"--sim-ring=2s", "--sim-talk=6s"}, args...)...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig,
			"SWITCHBOARD_RECORDING_SIGNING_KEY=0123456789abcdef0123456789abcdef")
		logs := &testsupport.Buffer{}
		cmd.Stdout, cmd.Stderr = logs, logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		p := &replicaProcess{cmd: cmd, logs: logs, base: "http://" + addr, worker: worker, exited: exited}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = p.wait()
		})
		return p
	}
}

// replicaProcess is one running replica of the binary.
type replicaProcess struct {
	cmd    *exec.Cmd
	logs   *testsupport.Buffer
	base   string // its REST API
	worker string
	exited chan error
	done   bool
	err    error
}

// wait waits for the process to exit and returns how it did.
func (p *replicaProcess) wait() error {
	if !p.done {
		p.err, p.done = <-p.exited, true
	}
	return p.err
}

// dialingEvents counts the Dialing Events of each Call of ns.
func dialingEvents(t *testing.T, c client.Client, ns string) map[string]int {
	t.Helper()
	var evs eventsv1.EventList
	if err := c.List(context.Background(), &evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	dialed := map[string]int{}
	for _, e := range evs.Items {
		if e.Reason == "Dialing" {
			dialed[e.Regarding.Name]++
		}
	}
	return dialed
}

// workerOf maps each Call of ns to the worker it is assigned to.
func workerOf(t *testing.T, c client.Client, ns string) map[string]string {
	t.Helper()
	var calls switchboardv1.CallList
	if err := c.List(context.Background(), &calls, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, call := range calls.Items {
		out[call.Name] = call.Labels[switchboardv1.WorkerLabel]
	}
	return out
}

// countPhase counts the Calls of ns in phase.
func countPhase(t *testing.T, c client.Client, ns string, phase switchboardv1.CallPhase) int {
	t.Helper()
	var calls switchboardv1.CallList
	if err := c.List(context.Background(), &calls, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, call := range calls.Items {
		if call.CurrentPhase() == phase {
			n++
		}
	}
	return n
}

// buildBinary builds the switchboard binary into a folder of t's (the
// build cache makes every build after the first a link).
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "switchboard")
	if out, err := exec.Command("go", "build", "-tags", "dev", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}
