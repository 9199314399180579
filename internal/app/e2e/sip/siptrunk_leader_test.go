package sip_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/switchboard-dev/switchboard/internal/app"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
	"github.com/switchboard-dev/switchboard/internal/devenv"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// A SIPTrunk is probed once per interval by the installation, not once by
// every replica: its controller runs on the elected leader only, and when
// the leader stops, the next leader takes the probes over. The carrier
// here answers OPTIONS 200 and notes the port each came from: every
// replica sends from its own SIP port.
func TestSIPTrunkProbedByTheLeaderOnly(t *testing.T) {
	g := NewWithT(t)
	carrier := StartOptionsAnswerer(t)

	// The suite's operator (elected by no one) makes way for two replicas.
	MakeWayForReplicas(t)
	replica := func(id string, sipPort int) func(*app.Options) {
		return func(o *app.Options) {
			o.Worker.ID = id
			o.LeaderElection = app.LeaderElectionOptions{Enabled: true, Namespace: devenv.LeaderElectionNamespace}
			o.SIP.BindPort, o.SIP.ProbeInterval = sipPort, 200*time.Millisecond
		}
	}
	firstPort, secondPort := testsupport.FreePort(t, "udp"), testsupport.FreePort(t, "udp")
	first, err := StartOperator(true, replica("probe-first", firstPort))
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(first.Stop)
	leader := testsupport.WaitLeaseHolder(t, K8s, "", nil)
	second, err := StartOperator(true, replica("probe-second", secondPort))
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(second.Stop)
	Operator = second

	o := NewOrg(t)
	ApplyTrunk(t, o.Ns, "carrier", carrier.Addr, nil)
	// Ten probes at 200 ms: a follower probing too would have sent some.
	g.Expect(carrier.Next(t, 10)).To(HaveEach(firstPort), "probes from the leader's port %d only (the follower's is %d)", firstPort, secondPort)

	first.Stop()
	testsupport.WaitLeaseHolder(t, K8s, leader, nil)
	carrier.Drain()
	g.Expect(carrier.Next(t, 5)).To(HaveEach(secondPort), "the new leader probes, and only it")
}
