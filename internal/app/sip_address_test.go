package app_test

import (
	"context"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/app"
	"github.com/switchboard-dev/switchboard/internal/egress"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// TestSIPTrunkAddressPolicyInProduction: outside development mode, a trunk
// on loopback (an internal service's port, say) is refused before anything
// is sent to it: Ready=False AddressRefused, and its calls fail
// dispatch_failed naming the policy, never what a connection did. A
// private address is refused too, unless it is in a network the operator
// declared (--sip-private-networks): that trunk is probed as any other.
// (The rest of the suite runs in development mode, where the sipp callees
// on loopback are trunks like any other.)
func TestSIPTrunkAddressPolicyInProduction(t *testing.T) {
	withOperator(t, func(o *app.Options) {
		o.Webhooks.AllowInsecure = false
		o.SIP.PrivateNetworks = egress.TrustedHosts{Networks: []netip.Prefix{netip.MustParsePrefix("10.255.0.0/16")}}
		o.SIP.ProbeInterval = longProbeInterval
	})
	g := NewWithT(t)
	service := listenUDP(t)
	o := sipOrg(t, service.addr(), nil, nil)

	tr := waitTrunkReady(t, o.ns, "carrier", metav1.ConditionFalse, switchboardv1.ReasonAddressRefused)
	g.Expect(testsupport.Ready(g, tr.Status.Conditions).Message).To(Equal(
		"the trunk's host 127.0.0.1 is a loopback address; trunks must be publicly reachable, " +
			"or in a private network the operator allows (--sip-private-networks)"))

	id := o.createCall(t, "+14155550123", nil)
	g.Eventually(func() any { return o.getCall(t, id)["status"] }, 10*time.Second, 50*time.Millisecond).Should(Equal("failed"))
	c := callResource(t, o.ns, id)
	g.Expect(c.Status.Failure).NotTo(BeNil())
	g.Expect(c.Status.Failure.ErrorCode).To(Equal("dispatch_failed"))
	g.Expect(c.Status.Failure.Message).To(HaveSuffix(`SIP trunk "carrier": the trunk's host 127.0.0.1 is a loopback address; ` +
		"trunks must be publicly reachable, or in a private network the operator allows (--sip-private-networks)"))
	g.Expect(c.Status.Failure.Message).NotTo(ContainSubstring("refused"), "the system's text")
	g.Expect(service.received()).To(BeZero(), "datagrams sent to the refused trunk")

	// A private network the operator did not declare is refused; the one
	// it declared is probed (nothing answers there: Unreachable).
	applyTrunk(t, o.ns, "undeclared", "10.254.0.1:5060", nil)
	tr = waitTrunkReady(t, o.ns, "undeclared", metav1.ConditionFalse, switchboardv1.ReasonAddressRefused)
	g.Expect(testsupport.Ready(g, tr.Status.Conditions).Message).To(HavePrefix("the trunk's host 10.254.0.1 is a private address;"))
	applyTrunk(t, o.ns, "pbx", "10.255.0.1:5060", nil)
	tr = waitTrunkReady(t, o.ns, "pbx", metav1.ConditionFalse, switchboardv1.ReasonUnreachable)
	g.Expect(testsupport.Ready(g, tr.Status.Conditions).Message).To(Equal("no answer to OPTIONS within 5s"))
}

// udpService counts the datagrams an internal service on loopback gets.
type udpService struct {
	conn    net.PacketConn
	packets atomic.Int32
}

func listenUDP(t *testing.T) *udpService {
	t.Helper()
	conn, err := (&net.ListenConfig{}).ListenPacket(context.Background(), "udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &udpService{conn: conn}
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, _, err := conn.ReadFrom(buf); err != nil {
				return
			}
			s.packets.Add(1)
		}
	}()
	t.Cleanup(func() { _ = conn.Close() })
	return s
}

func (s *udpService) addr() string { return s.conn.LocalAddr().String() }

func (s *udpService) received() int32 { return s.packets.Load() }
