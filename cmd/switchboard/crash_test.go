package main

// TestLeaderCrash runs two replicas of the real binary against one
// apiserver and one PostgreSQL and kills the leader's process (SIGKILL: no
// handover, nothing flushed) while its calls ring and talk. The other
// replica takes the lease once it lapses unrenewed, and every call ends on
// the carrier's terms, dialed once.

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

	leader, leaderLogs := replica(t)
	holder := testsupport.WaitLeaseHolder(t, cp.Client, "", func() string { return tail(leaderLogs.String()) })
	_, followerLogs := replica(t)

	ns := cp.NewOrganization(t, "crash-")
	agentID := testsupport.CreateAgent(t, cp.Client, ns, "reminder", func(*switchboardv1.AgentSpec) {}).ResolvedID()
	for i := range crashCalls {
		testsupport.CreateCall(t, cp.Client, ns, fmt.Sprintf("call-%02d", i), agentID, fmt.Sprintf("+1415555%04d", 1100+i))
	}
	// The leader dies with every call dialed: ringing (2 s) or talking (6 s).
	g.Eventually(func() int { return countPhase(t, cp.Client, ns, switchboardv1.CallQueued) }, time.Minute, 50*time.Millisecond).
		Should(BeZero(), "the leader never dialed the calls\n%s", tail(leaderLogs.String()))
	g.Expect(countPhase(t, cp.Client, ns, switchboardv1.CallEnded)).To(BeZero(), "calls ended before the crash")
	g.Expect(leader.Process.Signal(syscall.SIGKILL)).To(Succeed())
	killed := time.Now()
	_ = leader.Wait()

	testsupport.WaitLeaseHolder(t, cp.Client, holder, func() string { return tail(followerLogs.String()) })
	t.Logf("the follower took the lease %.1f s after the leader was killed (lease %s)", time.Since(killed).Seconds(), crashLease)
	for i := range crashCalls {
		c := testsupport.WaitCallFinished(t, cp.Client, ns, fmt.Sprintf("call-%02d", i))
		g.Expect(c.Status.Phase).To(Equal(switchboardv1.CallEnded), "%s\n%s", c.Name, tail(followerLogs.String()))
		g.Expect(string(c.Status.Disposition)).To(Equal("answered"), c.Name)
		g.Expect(c.Status.Analysis).NotTo(BeNil(), c.Name)
	}
	var evs eventsv1.EventList
	g.Expect(cp.Client.List(context.Background(), &evs, client.InNamespace(ns))).To(Succeed())
	dialed := map[string]int{}
	for _, e := range evs.Items {
		if e.Reason == "Dialing" {
			dialed[e.Regarding.Name]++
		}
	}
	g.Expect(dialed).To(HaveLen(crashCalls), "Dialing Events per call: %v", dialed)
	for name, n := range dialed {
		g.Expect(n).To(Equal(1), "%s was dialed %d times", name, n)
	}
}

// replicaCommand returns what starts one replica as a Deployment runs it:
// leader election, the history in PostgreSQL, no SIP, the simulated
// carrier with calls of 8 s (2 ringing, 6 talking).
func replicaCommand(bin, kubeconfig, dsn, dir string) func(t *testing.T) (*exec.Cmd, *testsupport.Buffer) {
	return func(t *testing.T) (*exec.Cmd, *testsupport.Buffer) {
		t.Helper()
		cmd := exec.Command(bin, "--leader-elect", "--leader-election-namespace="+devenv.LeaderElectionNamespace,
			"--leader-elect-lease-duration="+crashLease.String(), "--history-dsn="+dsn,
			"--api-addr="+testsupport.FreeAddr(t), "--metrics-bind-address=0", "--health-probe-bind-address=0",
			"--recording-dir="+filepath.Join(dir, "recordings"), "--sip=false", "--call-normal-events=true",
			"--sim-ring=2s", "--sim-talk=6s")
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig,
			"SWITCHBOARD_RECORDING_SIGNING_KEY=0123456789abcdef0123456789abcdef")
		logs := &testsupport.Buffer{}
		cmd.Stdout, cmd.Stderr = logs, logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
		return cmd, logs
	}
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
