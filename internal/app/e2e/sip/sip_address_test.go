package sip_test

import (
	"net/netip"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/app"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
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
	WithOperator(t, func(o *app.Options) {
		o.Webhooks.AllowInsecure = false
		o.SIP.PrivateNetworks = egress.TrustedHosts{Networks: []netip.Prefix{netip.MustParsePrefix("10.255.0.0/16")}}
		o.SIP.ProbeInterval = LongProbeInterval
	})
	g := NewWithT(t)
	service := ListenUDP(t)
	o := SIPOrg(t, service.Addr(), nil, nil)

	tr := WaitTrunkReady(t, o.Ns, "carrier", metav1.ConditionFalse, switchboardv1.ReasonAddressRefused)
	g.Expect(testsupport.Ready(g, tr.Status.Conditions).Message).To(Equal(
		"the trunk's host 127.0.0.1 is a loopback address; trunks must be publicly reachable, " +
			"or in a private network the operator allows (--sip-private-networks)"))

	id := o.CreateCall(t, "+14155550123", nil)
	g.Eventually(func() any { return o.GetCall(t, id)["status"] }, 10*time.Second, 50*time.Millisecond).Should(Equal("failed"))
	c := CallResource(t, o.Ns, id)
	g.Expect(c.Status.Failure).NotTo(BeNil())
	g.Expect(c.Status.Failure.ErrorCode).To(Equal("dispatch_failed"))
	g.Expect(c.Status.Failure.Message).To(HaveSuffix(`SIP trunk "carrier": the trunk's host 127.0.0.1 is a loopback address; ` +
		"trunks must be publicly reachable, or in a private network the operator allows (--sip-private-networks)"))
	g.Expect(c.Status.Failure.Message).NotTo(ContainSubstring("refused"), "the system's text")
	g.Expect(service.Received()).To(BeZero(), "datagrams sent to the refused trunk")

	// A private network the operator did not declare is refused; the one
	// it declared is probed (nothing answers there: Unreachable).
	ApplyTrunk(t, o.Ns, "undeclared", "10.254.0.1:5060", nil)
	tr = WaitTrunkReady(t, o.Ns, "undeclared", metav1.ConditionFalse, switchboardv1.ReasonAddressRefused)
	g.Expect(testsupport.Ready(g, tr.Status.Conditions).Message).To(HavePrefix("the trunk's host 10.254.0.1 is a private address;"))
	ApplyTrunk(t, o.Ns, "pbx", "10.255.0.1:5060", nil)
	tr = WaitTrunkReady(t, o.Ns, "pbx", metav1.ConditionFalse, switchboardv1.ReasonUnreachable)
	g.Expect(testsupport.Ready(g, tr.Status.Conditions).Message).To(Equal("no answer to OPTIONS within 5s"))
}
