package app_test

import (
	"net"
	"testing"
	"time"

	sipmsg "github.com/emiago/sipgo/sip"
	. "github.com/onsi/gomega"

	"github.com/switchboard-dev/switchboard/internal/app"
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
	carrier := startOptionsAnswerer(t)

	// The suite's operator (elected by no one) makes way for two replicas.
	makeWayForReplicas(t)
	replica := func(id string, sipPort int) func(*app.Options) {
		return func(o *app.Options) {
			o.Worker.ID = id
			o.LeaderElection = app.LeaderElectionOptions{Enabled: true, Namespace: devenv.LeaderElectionNamespace}
			o.SIP.BindPort, o.SIP.ProbeInterval = sipPort, 200*time.Millisecond
		}
	}
	firstPort, secondPort := testsupport.FreePort(t, "udp"), testsupport.FreePort(t, "udp")
	first, err := startOperator(true, replica("probe-first", firstPort))
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(first.stop)
	leader := testsupport.WaitLeaseHolder(t, k8s, "", nil)
	second, err := startOperator(true, replica("probe-second", secondPort))
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(second.stop)
	operator = second

	o := newOrg(t)
	applyTrunk(t, o.ns, "carrier", carrier.addr, nil)
	// Ten probes at 200 ms: a follower probing too would have sent some.
	g.Expect(carrier.next(t, 10)).To(HaveEach(firstPort), "probes from the leader's port %d only (the follower's is %d)", firstPort, secondPort)

	first.stop()
	testsupport.WaitLeaseHolder(t, k8s, leader, nil)
	carrier.drain()
	g.Expect(carrier.next(t, 5)).To(HaveEach(secondPort), "the new leader probes, and only it")
}

// optionsAnswerer is a SIP carrier on loopback UDP that answers OPTIONS
// 200 OK and reports the source port of each.
type optionsAnswerer struct {
	addr  string
	ports chan int
}

func startOptionsAnswerer(t *testing.T) *optionsAnswerer {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	a := &optionsAnswerer{addr: conn.LocalAddr().String(), ports: make(chan int, 1024)}
	go func() {
		buf := make([]byte, 65535)
		for {
			n, from, err := conn.ReadFrom(buf)
			if err != nil {
				return
			}
			msg, err := sipmsg.ParseMessage(buf[:n])
			req, ok := msg.(*sipmsg.Request)
			if err != nil || !ok || req.Method != sipmsg.OPTIONS {
				continue
			}
			res := sipmsg.NewResponseFromRequest(req, sipmsg.StatusOK, "OK", nil)
			_, _ = conn.WriteTo([]byte(res.String()), from)
			select {
			case a.ports <- from.(*net.UDPAddr).Port:
			default:
			}
		}
	}()
	return a
}

// next returns the source ports of the next n OPTIONS.
func (a *optionsAnswerer) next(t *testing.T, n int) []int {
	t.Helper()
	ports := make([]int, 0, n)
	for len(ports) < n {
		select {
		case p := <-a.ports:
			ports = append(ports, p)
		case <-time.After(30 * time.Second):
			t.Fatalf("%d OPTIONS in 30 s, want %d (ports %v)", len(ports), n, ports)
		}
	}
	return ports
}

// drain forgets the OPTIONS received so far.
func (a *optionsAnswerer) drain() {
	for {
		select {
		case <-a.ports:
		default:
			return
		}
	}
}
