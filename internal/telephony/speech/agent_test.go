package speech

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

func speechAgent(spec *switchboardv1.AgentSpeech) *switchboardv1.Agent {
	return &switchboardv1.Agent{
		ObjectMeta: metav1.ObjectMeta{Namespace: "acme", Name: "reminder"},
		Spec:       switchboardv1.AgentSpec{FromNumber: "+14155550100", Speech: spec},
	}
}

func TestForAgent(t *testing.T) {
	srv := openAIFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"text":"four"}`)
	})
	secrets := fake.NewClientBuilder().WithObjects(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "acme", Name: "asr"},
			Data: map[string][]byte{switchboardv1.SpeechAPIKeyKey: []byte(testKey)}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "acme", Name: "empty"}},
	).Build()
	ctx := context.Background()
	embedded := &fixed{text: "yes"}

	r, err := ForAgent(ctx, secrets, speechAgent(nil), dev, embedded)
	if err != nil || r != Recognizer(embedded) {
		t.Errorf("no spec.speech: got %v, %v; want the embedded recognizer", r, err)
	}
	if _, err := ForAgent(ctx, secrets, speechAgent(nil), dev, nil); !errors.Is(err, ErrNoEmbedded) {
		t.Errorf("no spec.speech, no embedded recognizer: err %v, want ErrNoEmbedded", err)
	}

	spec := &switchboardv1.AgentSpeech{URL: srv.URL + "/v1", Protocol: switchboardv1.SpeechProtocolOpenAI,
		APIKeySecretRef: &switchboardv1.SecretReference{Name: "asr"}, TimeoutMilliseconds: 5000}
	r, err = ForAgent(ctx, secrets, speechAgent(spec), dev, embedded)
	if err != nil {
		t.Fatal(err)
	}
	// The fake server answers only with the Secret's key.
	if res, err := r.Recognize(ctx, utterancePCM(), nil); err != nil || res.Text != "four" || res.Recognizer != "" {
		t.Errorf("got %+v, %v; want the server's answer", res, err)
	}

	for name, want := range map[string]string{"missing": "does not exist", "empty": "has no apiKey"} {
		spec.APIKeySecretRef.Name = name
		if _, err := ForAgent(ctx, secrets, speechAgent(spec), dev, embedded); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Secret %s: err %v, want %q", name, err, want)
		}
	}
}
