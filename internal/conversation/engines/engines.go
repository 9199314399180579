// Package engines turns an Agent's spec.conversation into what a call's
// conversation needs, for both carriers: an Opener of its response engine
// (package chat for an OpenAI-compatible endpoint, package retell for a
// Retell custom-LLM server), the loop's Config and the call's details.
package engines

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/conversation"
	"github.com/switchboard-dev/switchboard/internal/conversation/chat"
	"github.com/switchboard-dev/switchboard/internal/conversation/retell"
	"github.com/switchboard-dev/switchboard/internal/egress"
	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts"
)

// Source builds calls' conversations from their Agents.
type Source struct {
	// Secrets reads the API key and signing Secrets (a live reader: the
	// manager caches no Secrets but API keys).
	Secrets client.Reader
	// Policy guards the model's, the server's and the functions' URLs
	// (https or wss and public addresses, unless --dev).
	Policy egress.URLPolicy
	Log    logr.Logger
}

// For is the conversation of req's agent: its engine's Opener (the
// Secrets are read now, so a missing one fails the call before it rings),
// the loop's Config and what the engine is told of the call.
func (s Source) For(ctx context.Context, req telephony.Request) (conversation.Opener, conversation.Config, conversation.CallDetails, error) {
	details := Details(req)
	if req.Agent == nil || req.Agent.Spec.Conversation == nil {
		return nil, conversation.Config{}, details, fmt.Errorf("the agent has no conversation")
	}
	c := req.Agent.Spec.Conversation
	cfg := LoopConfig(c)
	if ws := c.LLMWebSocket; ws != nil {
		rc := retell.Config{URL: ws.URL, ConnectTimeout: time.Duration(ws.ConnectTimeoutSeconds) * time.Second,
			Policy: s.Policy, Log: s.Log.WithName("retell")}
		return func(ctx context.Context, call conversation.CallDetails) (conversation.Session, error) {
			return retell.Open(ctx, rc, call)
		}, cfg, details, nil
	}
	cc, err := s.chatConfig(ctx, req.Namespace, c, req.Variables)
	if err != nil {
		return nil, cfg, details, err
	}
	return func(ctx context.Context, call conversation.CallDetails) (conversation.Session, error) {
		return chat.Open(ctx, cc, call)
	}, cfg, details, nil
}

// chatConfig is the OpenAI-compatible session's configuration, with the
// call's variables in the prompt and begin message.
func (s Source) chatConfig(ctx context.Context, ns string, c *switchboardv1.Conversation, vars map[string]any) (chat.Config, error) {
	llm := c.LLM
	cc := chat.Config{URL: llm.URL, Model: llm.Model, MaxTokens: int(llm.MaxTokens),
		FirstTokenTimeout: time.Duration(llm.FirstTokenTimeoutMs) * time.Millisecond,
		SystemPrompt:      tts.Fill(c.SystemPrompt, vars), BeginMessage: tts.Fill(c.BeginMessage, vars), Policy: s.Policy}
	if llm.Temperature != "" {
		t, err := strconv.ParseFloat(llm.Temperature, 64)
		if err != nil {
			return cc, fmt.Errorf("temperature %q: %w", llm.Temperature, err)
		}
		cc.Temperature = &t
	}
	if ref := llm.APIKeySecretRef; ref != nil {
		key, err := s.secret(ctx, ns, ref.Name, switchboardv1.ConversationAPIKeyKey)
		if err != nil {
			return cc, err
		}
		cc.APIKey = key
	}
	if x := c.Transfer; x != nil {
		for _, d := range x.Destinations {
			cc.Transfer = append(cc.Transfer, chat.Destination{Number: tts.Fill(d.Number, vars), Description: d.Description})
		}
	}
	if t := c.Tools; t != nil {
		cc.BuiltIn = t.BuiltIn
		for _, f := range t.Functions {
			fn := chat.Function{Name: f.Name, Description: f.Description, URL: f.URL,
				Timeout: time.Duration(f.TimeoutMs) * time.Millisecond}
			if f.Parameters != nil {
				fn.Parameters = f.Parameters.Raw
			}
			if ref := f.SigningSecretRef; ref != nil {
				secret, err := s.secret(ctx, ns, ref.Name, switchboardv1.FunctionSigningSecretKey)
				if err != nil {
					return cc, fmt.Errorf("function %s: %w", f.Name, err)
				}
				fn.SigningSecret = secret
			}
			cc.Functions = append(cc.Functions, fn)
		}
	}
	return cc, nil
}

// secret reads key of the Secret name in ns.
func (s Source) secret(ctx context.Context, ns, name, key string) (string, error) {
	var sec corev1.Secret
	if err := s.Secrets.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &sec); err != nil {
		return "", fmt.Errorf("reading the Secret %s: %w", name, err)
	}
	v := string(sec.Data[key])
	if v == "" {
		return "", fmt.Errorf("the Secret %s has no key %s", name, key)
	}
	return v, nil
}

// LoopConfig is the loop's configuration from the Agent's conversation,
// the CRD's defaults where a field is unset (an Agent read from a cache
// written before the defaults, or built in a test).
func LoopConfig(c *switchboardv1.Conversation) conversation.Config {
	tt := conversation.DefaultTurnTaking()
	if t := c.TurnTaking; t != nil {
		// 0 is a real value of these (at once), so unset is nil.
		ms := func(v *int32, def time.Duration) time.Duration {
			if v == nil {
				return def
			}
			return time.Duration(*v) * time.Millisecond
		}
		tt.MinEndpointing = ms(t.MinEndpointingDelayMs, tt.MinEndpointing)
		tt.MaxEndpointing = ms(t.MaxEndpointingDelayMs, tt.MaxEndpointing)
		tt.MinInterruption = ms(t.MinInterruptionMs, tt.MinInterruption)
		if t.ReminderAfterMs > 0 {
			tt.ReminderAfter = time.Duration(t.ReminderAfterMs) * time.Millisecond
		}
		if t.ReminderMaxCount != nil {
			tt.ReminderMax = int(*t.ReminderMaxCount)
		}
		if t.Backchannels != nil {
			tt.Backchannels = t.Backchannels
		}
	}
	return conversation.Config{TurnTaking: tt,
		FallbackLine: cmp.Or(c.FallbackLine, "I'm sorry, I'm having trouble on my end. We will call you back. Goodbye."),
		MaxTurns:     int(cmp.Or(c.MaxTurns, 200))}
}

// Details is what a response engine is told of the call.
func Details(req telephony.Request) conversation.CallDetails {
	d := conversation.CallDetails{CallID: req.CallID, From: req.From, To: req.To, Variables: req.Variables}
	if req.Agent != nil {
		d.AgentID = req.Agent.ResolvedID()
	}
	return d
}
