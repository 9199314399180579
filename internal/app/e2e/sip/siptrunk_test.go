package sip_test

// SIPTrunks as a platform team sees them: apply-time validation, and the
// Ready condition, columns and Events the operator reports after probing
// real SIP peers (sipp) with OPTIONS.

import (
	"context"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"strconv"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/app"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/siptest"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// TestSIPTrunkStatus runs one operator with SIP enabled for the trunk
// cases driven by changes (restarting it per case would cost more than the
// cases).
func TestSIPTrunkStatus(t *testing.T) {
	WithOperator(t, func(o *app.Options) {
		o.SIP.ProbeInterval = LongProbeInterval
	})
	t.Run("reachable trunk shows in kubectl get", testTrunkReachable)
	t.Run("dead trunk is unreachable", testTrunkUnreachable)
	t.Run("missing Secret, then created", testTrunkSecretAppears)
	t.Run("wrong password, then fixed", testTrunkWrongPassword)
	t.Run("address changed", testTrunkAddressChanged)
}

// A trunk that was down is probed again after the interval and turns Ready
// once it answers, with no change to the trunk.
func TestSIPTrunkReprobedPeriodically(t *testing.T) {
	WithOperator(t, func(o *app.Options) {
		o.SIP.ProbeInterval = ShortProbeInterval
	})
	g := NewWithT(t)
	ns := ResNamespace(t)
	port := siptest.FreePort(t, "udp")
	testsupport.CreateTrunk(t, K8s, ns, "carrier", "sip:127.0.0.1:"+strconv.Itoa(port), "")
	down := WaitTrunkReady(t, ns, "carrier", metav1.ConditionFalse, switchboardv1.ReasonUnreachable)
	siptest.StartSippOn(t, "udp", port, siptest.InlineScenario(t, OptionsOK)...)
	up := WaitTrunkReady(t, ns, "carrier", metav1.ConditionTrue, switchboardv1.ReasonReachable)
	g.Expect(up.Status.LastProbeAt.After(down.Status.LastProbeAt.Time)).To(BeTrue())
	g.Expect(up.Generation).To(Equal(down.Generation))
}

func testTrunkReachable(t *testing.T) {
	g := NewWithT(t)
	ns := ResNamespace(t)
	addr := StartSippTrunk(t, OptionsOK)
	testsupport.CreateTrunk(t, K8s, ns, "carrier", "sip:"+addr, "")
	tr := WaitTrunkReady(t, ns, "carrier", metav1.ConditionTrue, switchboardv1.ReasonReachable)
	g.Expect(tr.Status.LastProbeAt).NotTo(BeNil())
	g.Expect(tr.Status.ObservedGeneration).To(Equal(tr.Generation))
	g.Expect(testsupport.Ready(g, tr.Status.Conditions).Message).To(ContainSubstring("200"))

	out := ControlPlane.Kubectl(t).MustRun(t, "get", "siptrunks", "-n", ns).Stdout
	lines := strings.Split(strings.TrimSpace(out), "\n")
	g.Expect(lines).To(HaveLen(2), out)
	g.Expect(lines[0]).To(MatchRegexp(`^NAME\s+ADDRESS\s+TRANSPORT\s+READY\s+REASON\s+ACTIVE\s+QUEUED\s+MAX\s+CPS\s+AGE\s*$`), out)
	// No max and no CPS: those columns are empty.
	g.Expect(strings.Fields(lines[1])[:7]).To(Equal([]string{"carrier", "sip:" + addr, "udp", "True", "Reachable", "0", "0"}), out)
}

func testTrunkUnreachable(t *testing.T) {
	g := NewWithT(t)
	ns := ResNamespace(t)
	testsupport.CreateTrunk(t, K8s, ns, "dead", "sip:127.0.0.1:"+strconv.Itoa(siptest.FreePort(t, "udp")), "")
	tr := WaitTrunkReady(t, ns, "dead", metav1.ConditionFalse, switchboardv1.ReasonUnreachable)
	g.Expect(testsupport.Ready(g, tr.Status.Conditions).Message).To(ContainSubstring("no answer to OPTIONS"))

	kc := ControlPlane.Kubectl(t)
	var out string
	g.Eventually(func() string {
		out = kc.MustRun(t, "describe", "siptrunk", "dead", "-n", ns).Stdout
		return out
	}, ResWait, 100*time.Millisecond).Should(MatchRegexp(`(?m)^\s+Warning\s+Unreachable\s+`), func() string { return out })
}

// A trunk whose Secret does not exist yet says so, and turns Ready as soon
// as the Secret is created: the operator watches it.
func testTrunkSecretAppears(t *testing.T) {
	g := NewWithT(t)
	ns := ResNamespace(t)
	addr := StartSippTrunk(t, OptionsAuth)
	testsupport.CreateTrunk(t, K8s, ns, "carrier", "sip:"+addr, "carrier-credentials")
	tr := WaitTrunkReady(t, ns, "carrier", metav1.ConditionFalse, switchboardv1.ReasonCredentialsMissing)
	g.Expect(testsupport.Ready(g, tr.Status.Conditions).Message).To(ContainSubstring(ns + "/carrier-credentials"))
	g.Expect(tr.Status.LastProbeAt).To(BeNil(), "a trunk without its credentials was probed")

	CreateCredentials(t, ns, "carrier-credentials", "alice", "right-password")
	WaitTrunkReady(t, ns, "carrier", metav1.ConditionTrue, switchboardv1.ReasonReachable)
}

// A rejected password is reported; fixing it in the Secret brings a new
// probe at once (the interval is an hour here).
func testTrunkWrongPassword(t *testing.T) {
	g := NewWithT(t)
	ns := ResNamespace(t)
	addr := StartSippTrunk(t, OptionsAuth)
	CreateCredentials(t, ns, "carrier-credentials", "alice", "wrong-password")
	testsupport.CreateTrunk(t, K8s, ns, "carrier", "sip:"+addr, "carrier-credentials")
	tr := WaitTrunkReady(t, ns, "carrier", metav1.ConditionFalse, switchboardv1.ReasonAuthenticationFailed)
	g.Expect(testsupport.Ready(g, tr.Status.Conditions).Message).To(ContainSubstring("401"))

	var s corev1.Secret
	g.Expect(K8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "carrier-credentials"}, &s)).To(Succeed())
	s.Data[switchboardv1.SIPPasswordKey] = []byte("right-password")
	g.Expect(K8s.Update(context.Background(), &s)).To(Succeed())
	WaitTrunkReady(t, ns, "carrier", metav1.ConditionTrue, switchboardv1.ReasonReachable)
}

// Pointing a dead trunk at a live address probes it at once.
func testTrunkAddressChanged(t *testing.T) {
	g := NewWithT(t)
	ns := ResNamespace(t)
	// Over TCP, nothing listening is refused at once.
	dead := &switchboardv1.SIPTrunk{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "carrier"},
		Spec: switchboardv1.SIPTrunkSpec{Address: "sip:127.0.0.1:" + strconv.Itoa(siptest.FreePort(t, "tcp")),
			Transport: switchboardv1.SIPTransportTCP}}
	g.Expect(K8s.Create(context.Background(), dead)).To(Succeed())
	testsupport.DeleteOnCleanup(t, K8s, dead)
	down := WaitTrunkReady(t, ns, "carrier", metav1.ConditionFalse, switchboardv1.ReasonUnreachable)
	// The refused connection reads as a silent trunk does (issue 36): the
	// organization does not learn which ports are open.
	g.Expect(testsupport.Ready(g, down.Status.Conditions).Message).To(Equal("no answer to OPTIONS within 5s"))

	addr := StartSippTrunk(t, OptionsOK)
	var tr switchboardv1.SIPTrunk
	g.Expect(K8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "carrier"}, &tr)).To(Succeed())
	tr.Spec.Address, tr.Spec.Transport = "sip:"+addr, switchboardv1.SIPTransportUDP
	g.Expect(K8s.Update(context.Background(), &tr)).To(Succeed())
	up := WaitTrunkReady(t, ns, "carrier", metav1.ConditionTrue, switchboardv1.ReasonReachable)
	g.Expect(up.Status.ObservedGeneration).To(Equal(tr.Generation))
}
