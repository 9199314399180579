package organizations

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// The cache holds API keys as digests, signing secrets whole (deliveries
// sign with them), and nothing of any other Secret but its metadata.
func TestTrimKeepsOnlyWhatSwitchboardUses(t *testing.T) {
	lastApplied := map[string]string{corev1.LastAppliedConfigAnnotation: `{"data":{"password":"aHVudGVyMg=="}}`}
	for _, tc := range []struct {
		name     string
		in       *corev1.Secret
		wantData func(map[string][]byte) bool
	}{
		{"API key", &corev1.Secret{Type: switchboardv1.APIKeySecretType,
			Data: map[string][]byte{switchboardv1.APIKeySecretKey: []byte("sk_live_0123456789abcdef0123456789abcdef")}},
			func(d map[string][]byte) bool {
				return strings.HasPrefix(string(d[switchboardv1.APIKeySecretKey]), "sha256:")
			}},
		{"API key too short to use", &corev1.Secret{Type: switchboardv1.APIKeySecretType,
			Data: map[string][]byte{switchboardv1.APIKeySecretKey: []byte("sk_live_abc")}},
			func(d map[string][]byte) bool { // neither the key nor a digest it would match
				v := string(d[switchboardv1.APIKeySecretKey])
				return !strings.Contains(v, "abc") && !strings.HasPrefix(v, "sha256:")
			}},
		{"signing secret", &corev1.Secret{Type: switchboardv1.WebhookSecretType,
			Data: map[string][]byte{switchboardv1.WebhookSecretKey: []byte("whsec_abc")}},
			func(d map[string][]byte) bool { return string(d[switchboardv1.WebhookSecretKey]) == "whsec_abc" }},
		{"SIP credentials", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Annotations: lastApplied},
			Data:       map[string][]byte{switchboardv1.SIPPasswordKey: []byte("hunter2")},
			StringData: map[string]string{"token": "t"}},
			func(d map[string][]byte) bool { return d == nil }},
		{"TLS certificate", &corev1.Secret{Type: corev1.SecretTypeTLS, ObjectMeta: metav1.ObjectMeta{Annotations: lastApplied},
			Data: map[string][]byte{corev1.TLSPrivateKeyKey: []byte("-----BEGIN PRIVATE KEY-----")}},
			func(d map[string][]byte) bool { return d == nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := trim(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			s := out.(*corev1.Secret)
			if !tc.wantData(s.Data) {
				t.Errorf("data kept: %q", s.Data)
			}
			if s.StringData != nil || s.Annotations[corev1.LastAppliedConfigAnnotation] != "" {
				t.Errorf("stringData %q or last-applied annotation kept", s.StringData)
			}
		})
	}
}
