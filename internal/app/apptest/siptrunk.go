package apptest

// SIPTrunks as a platform team sees them: apply-time validation, and the
// Ready condition, columns and Events the operator reports after probing
// real SIP peers (sipp) with OPTIONS.

import (
	"context"
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
