package sip

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/stream"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts"
)

// Keys of an agent's stream authSecretRef Secret.
const (
	streamTokenKey   = "token"
	streamSigningKey = "signingSecret"
)

// streamConfig is the call's stream to the agent's bot: its URL,
// parameters with the call's variables filled in, and the token and
// signing secret from the agent's Secret (read live: the manager caches
// no Secrets of organizations).
func (r *ScriptRenderer) streamConfig(ctx context.Context, req telephony.Request, sp *switchboardv1.StreamSpec) (*stream.Config, error) {
	cfg := &stream.Config{URL: sp.URL, Namespace: req.Namespace, CallID: req.CallID, From: req.From, To: req.To,
		Policy: r.StreamPolicy, ConnectTimeout: time.Duration(sp.ConnectTimeoutSeconds) * time.Second}
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
