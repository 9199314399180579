package sip

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/engine"
)

func trunkObject(address, secret string) *switchboardv1.SIPTrunk {
	t := &switchboardv1.SIPTrunk{
		ObjectMeta: metav1.ObjectMeta{Namespace: "org-a", Name: "carrier"},
		Spec:       switchboardv1.SIPTrunkSpec{Address: address, Transport: switchboardv1.SIPTransportTCP},
	}
	if secret != "" {
		t.Spec.CredentialsSecretRef = &switchboardv1.SecretReference{Name: secret}
	}
	return t
}

func secret(ns, name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func TestResolve(t *testing.T) {
	secrets := fake.NewClientBuilder().WithObjects(
		secret("org-a", "creds", map[string]string{"username": "alice", "password": "s3cret"}),
		secret("org-a", "no-password", map[string]string{"username": "alice"}),
		secret("org-a", "empty", nil),
		secret("org-b", "theirs", map[string]string{"username": "bob", "password": "x"}),
	).Build()
	tls := trunkObject("sip:carrier.example:5061", "")
	tls.Spec.Transport = switchboardv1.SIPTransportTLS
	withRing := trunkObject("sip:carrier.example:5060", "creds")
	withRing.Spec.RingTimeoutSeconds = 25

	for _, tc := range []struct {
		name    string
		trunk   *switchboardv1.SIPTrunk
		want    engine.Trunk
		reason  string   // of the ConfigError, when one is wanted
		mention []string // in its message
	}{
		{name: "no credentials", trunk: trunkObject("sip:carrier.example", ""),
			want: engine.Trunk{Address: "sip:carrier.example", Transport: "tcp", RingTimeout: 60 * time.Second}},
		{name: "credentials and ring timeout", trunk: withRing,
			want: engine.Trunk{Address: "sip:carrier.example:5060", Transport: "tcp", Username: "alice", Password: "s3cret",
				RingTimeout: 25 * time.Second}},
		{name: "missing Secret", trunk: trunkObject("sip:carrier.example", "gone"),
			reason: switchboardv1.ReasonCredentialsMissing, mention: []string{"org-a/gone", "does not exist"}},
		{name: "Secret in another namespace", trunk: trunkObject("sip:carrier.example", "theirs"),
			reason: switchboardv1.ReasonCredentialsMissing, mention: []string{"org-a/theirs"}},
		{name: "missing password", trunk: trunkObject("sip:carrier.example", "no-password"),
			reason: switchboardv1.ReasonCredentialsMissing, mention: []string{"org-a/no-password", "no password"}},
		{name: "empty Secret", trunk: trunkObject("sip:carrier.example", "empty"),
			reason: switchboardv1.ReasonCredentialsMissing, mention: []string{"no username and no password"}},
		{name: "sips scheme over tcp", trunk: trunkObject("sips:carrier.example", ""),
			reason: switchboardv1.ReasonInvalidAddress, mention: []string{"is sips:", "spec.transport is tcp", "tls"}},
		{name: "other scheme", trunk: trunkObject("tel:carrier.example", ""),
			reason: switchboardv1.ReasonInvalidAddress, mention: []string{"must start with sip: or sips:"}},
		{name: "no host", trunk: trunkObject("sip::5060", ""),
			reason: switchboardv1.ReasonInvalidAddress, mention: []string{`"sip::5060"`}},
		{name: "transport in the address agrees", trunk: trunkObject("sip:10.0.0.1:5060;transport=TCP", ""),
			want: engine.Trunk{Address: "sip:10.0.0.1:5060;transport=TCP", Transport: "tcp", RingTimeout: 60 * time.Second}},
		{name: "transport in the address disagrees", trunk: trunkObject("sip:10.0.0.1:5060;transport=udp", ""),
			reason: switchboardv1.ReasonInvalidAddress, mention: []string{"transport=udp", "spec.transport is tcp"}},
		{name: "tls with the system roots", trunk: tls,
			want: engine.Trunk{Address: "sip:carrier.example:5061", Transport: "tls", RingTimeout: 60 * time.Second}},
		{name: "bad port", trunk: trunkObject("sip:carrier.example:99999", ""),
			reason: switchboardv1.ReasonInvalidAddress, mention: []string{"sip:host[:port]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Resolve(context.Background(), secrets, tc.trunk)
			if tc.reason == "" {
				if err != nil || got != tc.want {
					t.Fatalf("Resolve = %+v, %v; want %+v", got, err, tc.want)
				}
				return
			}
			var cerr *ConfigError
			if !errors.As(err, &cerr) || cerr.Reason != tc.reason {
				t.Fatalf("Resolve error %v, want a ConfigError %s", err, tc.reason)
			}
			for _, m := range tc.mention {
				if !strings.Contains(cerr.Message, m) {
					t.Errorf("message %q does not mention %q", cerr.Message, m)
				}
			}
		})
	}
}

// A trunk's status.transport is what its calls use, whichever way the spec
// says it.
func TestEffectiveTransport(t *testing.T) {
	for _, tc := range []struct {
		address   string
		transport switchboardv1.SIPTransport
		want      switchboardv1.SIPTransport
	}{
		{"sip:carrier.example", "", "udp"},
		{"sip:carrier.example", "tcp", "tcp"},
		{"sips:carrier.example", "", "tls"},
		{"sip:carrier.example;transport=TCP", "", "tcp"},
		{"sip:carrier.example;transport=tls", "", "tls"},
	} {
		tr := &switchboardv1.SIPTrunk{Spec: switchboardv1.SIPTrunkSpec{Address: tc.address, Transport: tc.transport}}
		if got := EffectiveTransport(tr); got != tc.want {
			t.Errorf("%s transport %q: %q, want %q", tc.address, tc.transport, got, tc.want)
		}
	}
}
