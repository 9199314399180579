package tts

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/egress"
)

// Voices gives each agent its voice: a Server for an agent with
// spec.voice.server (falling back to Embedded), else Embedded.
type Voices struct {
	// Secrets reads the voice servers' API key Secrets (a live reader).
	Secrets client.Reader
	// Policy guards the servers' URLs (the model policy: --dev,
	// --allow-private-model-hosts).
	Policy egress.URLPolicy
	// Embedded is the voice of agents without a server, and of the lines
	// a server fails.
	Embedded Speaker
	// OnFallback, when set, is told of each line an agent's server failed
	// (Server.OnFallback), with the agent's namespace and name.
	OnFallback func(ns, agent, text string, why *FallbackError)

	once      sync.Once
	transport http.RoundTripper // shared by the agents' Servers: connections are reused
}

// For returns the voice of agent, in namespace ns. The API key Secret is
// read now: a missing one fails the call before it rings.
func (v *Voices) For(ctx context.Context, ns string, agent *switchboardv1.Agent) (Speaker, error) {
	if agent == nil || agent.Spec.Voice == nil || agent.Spec.Voice.Server == nil {
		return v.Embedded, nil
	}
	cfg := agent.Spec.Voice.Server
	v.once.Do(func() { v.transport = egress.GuardedTransport(v.Policy) })
	s := &Server{Config: *cfg, Policy: v.Policy, Transport: v.transport, Fallback: v.Embedded}
	if v.OnFallback != nil {
		name := agent.Name
		s.OnFallback = func(text string, why *FallbackError) { v.OnFallback(ns, name, text, why) }
	}
	if ref := cfg.APIKeySecretRef; ref != nil {
		var sec corev1.Secret
		if err := v.Secrets.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, &sec); err != nil {
			return nil, fmt.Errorf("voice server: reading the API key Secret %s: %w", ref.Name, err)
		}
		if s.APIKey = string(sec.Data[switchboardv1.VoiceAPIKeyKey]); s.APIKey == "" {
			return nil, fmt.Errorf("voice server: the Secret %s has no key %s", ref.Name, switchboardv1.VoiceAPIKeyKey)
		}
	}
	return s, nil
}
