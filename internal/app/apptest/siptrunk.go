package apptest

// SIPTrunks as a platform team sees them: apply-time validation, and the
// Ready condition, columns and Events the operator reports after probing
// real SIP peers (sipp) with OPTIONS.

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/siptest"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// Probe intervals of the tests. Most use one far longer than a test, so
// that what they see comes from the watches (a new spec, a new Secret),
// not from a periodic probe that would have fixed the status anyway.
const (
	LongProbeInterval  = time.Hour
	ShortProbeInterval = 2 * time.Second
)

// OptionsOK answers every OPTIONS with 200.
const OptionsOK = `<?xml version="1.0" encoding="UTF-8"?>
<scenario name="options_ok">
  <recv request="OPTIONS"/>
  <send>
    <![CDATA[

      SIP/2.0 200 OK
      [last_Via:]
      [last_From:]
      [last_To:];tag=[pid]SIPpTag01[call_number]
      [last_Call-ID:]
      [last_CSeq:]
      Content-Length: 0

    ]]>
  </send>
</scenario>
`

// OptionsAuth challenges every OPTIONS with 401 and answers the retry 200
// when its digest matches alice/right-password, else 401 again.
const OptionsAuth = `<?xml version="1.0" encoding="UTF-8"?>
<scenario name="options_auth">
  <recv request="OPTIONS"/>
  <send>
    <![CDATA[

      SIP/2.0 401 Unauthorized
      [last_Via:]
      [last_From:]
      [last_To:];tag=[pid]SIPpTag01[call_number]
      [last_Call-ID:]
      [last_CSeq:]
      WWW-Authenticate: Digest realm="trunk.test", nonce="47ebe028cda119c35d4877b383027d28da013815"
      Content-Length: 0

    ]]>
  </send>
  <recv request="OPTIONS" check_it="true">
    <action>
      <verifyauth assign_to="authvalid" username="alice" password="right-password"/>
    </action>
  </recv>
  <nop hide="true" test="authvalid" next="good"/>
  <send next="end">
    <![CDATA[

      SIP/2.0 401 Unauthorized
      [last_Via:]
      [last_From:]
      [last_To:];tag=[pid]SIPpTag02[call_number]
      [last_Call-ID:]
      [last_CSeq:]
      WWW-Authenticate: Digest realm="trunk.test", nonce="57ebe028cda119c35d4877b383027d28da013815"
      Content-Length: 0

    ]]>
  </send>
  <label id="good"/>
  <send>
    <![CDATA[

      SIP/2.0 200 OK
      [last_Via:]
      [last_From:]
      [last_To:];tag=[pid]SIPpTag02[call_number]
      [last_Call-ID:]
      [last_CSeq:]
      Content-Length: 0

    ]]>
  </send>
  <label id="end"/>
</scenario>
`

// StartSippTrunk runs sipp on a free loopback UDP port with the scenario
// for as many OPTIONS as come, until t ends, and returns its address.
func StartSippTrunk(t *testing.T, scenario string) string {
	t.Helper()
	return siptest.StartSipp(t, "udp", siptest.InlineScenario(t, scenario)...).Addr
}

func CreateCredentials(t *testing.T, ns, name, user, pass string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data: map[string][]byte{switchboardv1.SIPUsernameKey: []byte(user), switchboardv1.SIPPasswordKey: []byte(pass)}}
	NewWithT(t).Expect(K8s.Create(context.Background(), s)).To(Succeed())
}

// WaitTrunkReady waits until the trunk's Ready condition has the status
// and reason, and returns the trunk.
func WaitTrunkReady(t *testing.T, ns, name string, status metav1.ConditionStatus, reason string) *switchboardv1.SIPTrunk {
	t.Helper()
	var tr switchboardv1.SIPTrunk
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(K8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &tr)).To(Succeed())
		ready := testsupport.Ready(g, tr.Status.Conditions)
		g.Expect([]string{string(ready.Status), ready.Reason}).To(Equal([]string{string(status), reason}), ready.Message)
	}, 30*time.Second, 50*time.Millisecond).Should(Succeed(), "SIPTrunk %s/%s", ns, name)
	return &tr
}

func TestTrunkReachable(t *testing.T) {
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

func TestTrunkUnreachable(t *testing.T) {
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
func TestTrunkSecretAppears(t *testing.T) {
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
func TestTrunkWrongPassword(t *testing.T) {
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
func TestTrunkAddressChanged(t *testing.T) {
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
