package controllers_test

// The SIPTrunk reconciler: the Ready condition from an OPTIONS probe with
// the trunk's credentials, and a configuration error that waits for the
// trunk or its Secret to change. A fake prober stands in for the SIP
// engine, which meets real peers in its own tests.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/engine"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// fakeProber answers as a carrier at any address would, except one whose
// host says unreachable; it accepts only the password "secret" when a
// username is sent.
type fakeProber struct{}

var prober fakeProber

func (fakeProber) Probe(_ context.Context, t engine.Trunk) engine.ProbeResult {
	switch {
	case strings.Contains(t.Address, "unreachable"):
		return engine.ProbeResult{Err: errors.New("no answer to OPTIONS")}
	case strings.Contains(t.Address, "badcert") && t.Transport == "tls":
		bad := &engine.TLSError{Kind: engine.TLSCertificateInvalid, Err: errors.New("x509: certificate signed by unknown authority")}
		return engine.ProbeResult{Err: bad, TLS: bad}
	case strings.Contains(t.Address, "nohandshake") && t.Transport == "tls":
		bad := &engine.TLSError{Kind: engine.TLSHandshakeFailed, Err: errors.New("remote error: tls: protocol version not supported")}
		return engine.ProbeResult{Err: bad, TLS: bad}
	case t.Username != "" && t.Password != "secret":
		return engine.ProbeResult{Reachable: true, AuthFailed: true, StatusCode: 403, Reason: "Forbidden",
			Err: errors.New("the trunk refused the credentials: 403 Forbidden")}
	}
	return engine.ProbeResult{Reachable: true, StatusCode: 200, Reason: "OK"}
}

// trunkReady returns a function reading tr's Ready condition, for Eventually.
func trunkReady(tr *switchboardv1.SIPTrunk) func(Gomega) metav1.Condition {
	return func(g Gomega) metav1.Condition {
		var cur switchboardv1.SIPTrunk
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(tr), &cur)).To(Succeed())
		g.Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation))
		return testsupport.Ready(g, cur.Status.Conditions)
	}
}

func TestSIPTrunkReadyFromProbe(t *testing.T) {
	suite.Need(t)
	ns := newOrganization(t)
	tests := []struct {
		name, address string
		status        metav1.ConditionStatus
		reason        string
		message       string
	}{
		{"reachable", "sip:carrier.example.com:5060", metav1.ConditionTrue, switchboardv1.ReasonReachable, "200 OK"},
		{"unreachable", "sip:unreachable.example.com", metav1.ConditionFalse, switchboardv1.ReasonUnreachable, "no answer to OPTIONS"},
		{"sips-is-tls", "sips:carrier.example.com", metav1.ConditionTrue, switchboardv1.ReasonReachable, "200 OK"},
		{"certificate-invalid", "sips:badcert.example.com", metav1.ConditionFalse, switchboardv1.ReasonCertificateInvalid,
			"the trunk's TLS certificate is not valid: x509: certificate signed by unknown authority"},
		{"handshake-failed", "sips:nohandshake.example.com", metav1.ConditionFalse, switchboardv1.ReasonTLSHandshakeFailed,
			"protocol version not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := testsupport.CreateTrunk(t, k8s, ns, tt.name, tt.address, "")
			NewWithT(t).Eventually(trunkReady(tr), resWait, resPoll).Should(And(
				HaveField("Status", tt.status), HaveField("Reason", tt.reason),
				HaveField("Message", ContainSubstring(tt.message))))
		})
	}
}

// A trunk whose credentials Secret is missing says so, and is probed again
// as soon as the Secret appears or changes.
func TestSIPTrunkCredentialsFollowTheirSecret(t *testing.T) {
	suite.Need(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := newOrganization(t)
	tr := testsupport.CreateTrunk(t, k8s, ns, "carrier", "sip:carrier.example.com:5060", "carrier-credentials")
	g.Eventually(trunkReady(tr), resWait, resPoll).Should(And(
		HaveField("Status", metav1.ConditionFalse), HaveField("Reason", switchboardv1.ReasonCredentialsMissing),
		HaveField("Message", ContainSubstring(ns+"/carrier-credentials"))))

	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "carrier-credentials"},
		Data: map[string][]byte{switchboardv1.SIPUsernameKey: []byte("switchboard"), switchboardv1.SIPPasswordKey: []byte("wrong")}}
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	g.Eventually(trunkReady(tr), resWait, resPoll).Should(And(
		HaveField("Status", metav1.ConditionFalse), HaveField("Reason", switchboardv1.ReasonAuthenticationFailed)))

	s.Data[switchboardv1.SIPPasswordKey] = []byte("secret")
	g.Expect(k8s.Update(ctx, s)).To(Succeed())
	g.Eventually(trunkReady(tr), resWait, resPoll).Should(And(
		HaveField("Status", metav1.ConditionTrue), HaveField("Reason", switchboardv1.ReasonReachable)))

	// Each change of Ready is an Event for `kubectl describe siptrunk`.
	g.Eventually(func(g Gomega) []string {
		var list eventsv1.EventList
		g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		var reasons []string
		for _, e := range list.Items {
			if e.Regarding.Name == tr.Name {
				reasons = append(reasons, e.Reason)
			}
		}
		return reasons
	}, resWait, resPoll).Should(ContainElements(switchboardv1.ReasonCredentialsMissing,
		switchboardv1.ReasonAuthenticationFailed, switchboardv1.ReasonReachable))
}

// A tls trunk whose CA Secret is missing says so, and is probed again as
// soon as the Secret appears; a Secret without a PEM certificate is
// refused too.
func TestSIPTrunkTLSSecrets(t *testing.T) {
	suite.Need(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := newOrganization(t)
	tr := &switchboardv1.SIPTrunk{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "carrier"},
		Spec: switchboardv1.SIPTrunkSpec{Address: "sips:carrier.example.com", Media: switchboardv1.SIPMediaSRTPRequired,
			TLS: &switchboardv1.SIPTrunkTLS{CASecretRef: &switchboardv1.SecretReference{Name: "carrier-ca"}}}}
	g.Expect(k8s.Create(ctx, tr)).To(Succeed())
	testsupport.DeleteOnCleanup(t, k8s, tr)
	g.Eventually(trunkReady(tr), resWait, resPoll).Should(And(
		HaveField("Status", metav1.ConditionFalse), HaveField("Reason", switchboardv1.ReasonTLSSecretMissing),
		HaveField("Message", ContainSubstring(ns+"/carrier-ca does not exist"))))

	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "carrier-ca"},
		Data: map[string][]byte{switchboardv1.SIPCAKey: []byte("not a certificate")}}
	g.Expect(k8s.Create(ctx, s)).To(Succeed())
	g.Eventually(trunkReady(tr), resWait, resPoll).Should(And(
		HaveField("Status", metav1.ConditionFalse), HaveField("Reason", switchboardv1.ReasonTLSSecretMissing),
		HaveField("Message", ContainSubstring("holds no PEM certificate"))))

	s.Data[switchboardv1.SIPCAKey] = testCAPEM(t)
	g.Expect(k8s.Update(ctx, s)).To(Succeed())
	g.Eventually(trunkReady(tr), resWait, resPoll).Should(And(
		HaveField("Status", metav1.ConditionTrue), HaveField("Reason", switchboardv1.ReasonReachable)))
}

// testCAPEM is a self-signed CA certificate made by the test.
func testCAPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
