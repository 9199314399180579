package speech

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/egress"
)

// ForAgent returns the recognizer for an agent's calls: embedded when the
// agent has no spec.speech, else its server (NewServer) with embedded as the
// per-utterance fallback. It reads the API key from the agent's Secret
// through secrets. embedded may be nil (a binary built without it); then an
// agent without a server gets an error saying so.
func ForAgent(ctx context.Context, secrets client.Reader, agent *switchboardv1.Agent,
	policy egress.URLPolicy, embedded Recognizer) (Recognizer, error) {
	spec := agent.Spec.Speech
	if spec == nil {
		if embedded == nil {
			return nil, ErrNoEmbedded
		}
		return embedded, nil
	}
	opts := ServerOptions{
		URL:      spec.URL,
		Protocol: spec.Protocol,
		Model:    spec.Model,
		Timeout:  time.Duration(spec.TimeoutMilliseconds) * time.Millisecond,
		Policy:   policy,
	}
	if ref := spec.APIKeySecretRef; ref != nil {
		key, err := apiKey(ctx, secrets, agent.Namespace, ref.Name)
		if err != nil {
			return nil, err
		}
		opts.APIKey = key
	}
	return NewServer(ctx, opts, embedded)
}

// apiKey reads the apiKey of the Secret.
func apiKey(ctx context.Context, secrets client.Reader, ns, name string) (string, error) {
	var s corev1.Secret
	err := secrets.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &s)
	switch {
	case apierrors.IsNotFound(err):
		return "", fmt.Errorf("speech: the API key Secret %s/%s of spec.speech does not exist", ns, name)
	case apierrors.IsForbidden(err):
		return "", fmt.Errorf("speech: %s", switchboardv1.SecretAccessDeniedMessage(ns, name))
	case err != nil:
		return "", fmt.Errorf("speech: reading the API key Secret %s/%s: %w", ns, name, err)
	case len(s.Data[switchboardv1.SpeechAPIKeyKey]) == 0:
		return "", fmt.Errorf("speech: the Secret %s/%s has no %s", ns, name, switchboardv1.SpeechAPIKeyKey)
	}
	return string(s.Data[switchboardv1.SpeechAPIKeyKey]), nil
}
