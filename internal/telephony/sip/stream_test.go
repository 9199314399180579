package sip

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony"
)

func TestStreamSourceConfig(t *testing.T) {
	secret := func(name string, data map[string]string) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name}, Data: map[string][]byte{}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		return s
	}
	src := StreamSource{Secrets: fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(
		secret("bot-auth", map[string]string{"token": "t0k", "signingSecret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}),
		secret("empty", nil)).Build()}
	req := func(ref string) telephony.Request {
		sp := &switchboardv1.StreamSpec{URL: "wss://bot.example/media", ConnectTimeoutSeconds: 7,
			CustomParameters: map[string]string{"customer": "{{customer_name}}", "fixed": "x"}}
		if ref != "" {
			sp.AuthSecretRef = &switchboardv1.SecretReference{Name: ref}
		}
		return telephony.Request{CallID: "call_1", Namespace: "demo", From: "+14155550100", To: "+14155551234",
			Variables: map[string]any{"customer_name": "Ada"}, Agent: &switchboardv1.Agent{Spec: switchboardv1.AgentSpec{Stream: sp}}}
	}
	cfg, err := src.Config(context.Background(), req("bot-auth"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Token != "t0k" || cfg.SigningSecret == "" || cfg.Parameters["customer"] != "Ada" || cfg.Parameters["fixed"] != "x" ||
		cfg.ConnectTimeout != 7*time.Second || cfg.CallID != "call_1" || cfg.To != "+14155551234" {
		t.Errorf("config %+v", cfg)
	}
	for ref, want := range map[string]string{"missing": "not found", "empty": "has neither token nor signingSecret"} {
		if _, err := src.Config(context.Background(), req(ref)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Secret %s: error %v, want %q", ref, err, want)
		}
	}
	if cfg, err := src.Config(context.Background(), req("")); err != nil || cfg.Token != "" {
		t.Errorf("without a Secret: %+v, %v", cfg, err)
	}
}
