package sip

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-dev/switchboard/internal/egress"
	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/stream"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts"
)

// Keys of an agent's stream authSecretRef Secret.
const (
	streamTokenKey   = "token"
	streamSigningKey = "signingSecret"
)

// StreamSource turns an agent's spec.stream into a call's stream, for the
// SIP and simulated carriers alike.
type StreamSource struct {
	// Secrets reads the authSecretRef Secrets (a live reader: the manager
	// caches no Secrets of organizations).
	Secrets client.Reader
	// Policy guards stream URLs as webhook URLs are guarded.
	Policy egress.URLPolicy
}

// Config is the call's stream to its agent's bot: the URL, parameters
// with the call's variables filled in, and the token and signing secret
// from the agent's Secret.
func (r StreamSource) Config(ctx context.Context, req telephony.Request) (*stream.Config, error) {
	if req.Agent == nil || req.Agent.Spec.Stream == nil {
		return nil, fmt.Errorf("the agent has no stream")
	}
	sp := req.Agent.Spec.Stream
	cfg := &stream.Config{URL: sp.URL, Namespace: req.Namespace, CallID: req.CallID, From: req.From, To: req.To,
		Policy: r.Policy, ConnectTimeout: time.Duration(sp.ConnectTimeoutSeconds) * time.Second}
	if len(sp.CustomParameters) > 0 {
		cfg.Parameters = make(map[string]string, len(sp.CustomParameters))
		for k, v := range sp.CustomParameters {
			cfg.Parameters[k] = tts.Fill(v, req.Variables)
		}
	}
	if sp.AuthSecretRef == nil {
		return cfg, nil
	}
	if r.Secrets == nil {
		return nil, fmt.Errorf("stream: no Secret reader configured")
	}
	var s corev1.Secret
	key := types.NamespacedName{Namespace: req.Namespace, Name: sp.AuthSecretRef.Name}
	if err := r.Secrets.Get(ctx, key, &s); err != nil {
		return nil, fmt.Errorf("stream authSecretRef %s: %w", key.Name, err)
	}
	cfg.Token, cfg.SigningSecret = string(s.Data[streamTokenKey]), string(s.Data[streamSigningKey])
	if cfg.Token == "" && cfg.SigningSecret == "" {
		return nil, fmt.Errorf("stream authSecretRef %s has neither %s nor %s", key.Name, streamTokenKey, streamSigningKey)
	}
	return cfg, nil
}
