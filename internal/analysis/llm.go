package analysis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/callview"
	"github.com/switchboard-dev/switchboard/internal/egress"
	"github.com/switchboard-dev/switchboard/internal/telephony"
)

const (
	// DefaultLLMTimeout bounds a model's answer when the agent sets none.
	DefaultLLMTimeout = 20 * time.Second
	// MaxLLMTimeout bounds it whatever the agent says, so that call.analyzed
	// is never held up longer.
	MaxLLMTimeout = 60 * time.Second
	// maxAnswerBytes bounds the model's answer read.
	maxAnswerBytes = 1 << 20
)

// LLM is the Analyzer for agents with spec.analysis: the rules' analysis
// first, then the agent's language model, through an OpenAI-compatible
// chat-completions endpoint with structured outputs (a JSON schema built
// from the agent's extractedData). The model's summary and its values of
// the right type replace the rules'; where the model fails, times out,
// answers malformed JSON or a value of the wrong type, the rules' result
// stays and Result.Fallback says why. Agents without spec.analysis get the
// rules alone.
type LLM struct {
	// Secrets reads the agents' API key Secrets (a live reader).
	Secrets client.Reader
	// Policy guards the endpoint URL as webhook URLs are guarded: https
	// and public addresses only, unless AllowInsecure (--dev).
	Policy egress.URLPolicy
	// Transport carries the requests; nil: egress.GuardedTransport(Policy).
	Transport http.RoundTripper
}

var _ Analyzer = (*LLM)(nil)

// Analyze implements Analyzer; it never fails: a model that does is
// recorded in Result.Fallback.
func (l *LLM) Analyze(ctx context.Context, req telephony.Request, p telephony.Progress, transcript []telephony.Turn) (Result, error) {
	res := Analyze(req, p, transcript)
	cfg := modelOf(req)
	if cfg == nil || !p.Disposition.Connected() || len(transcript) == 0 {
		return res, nil
	}
	answer, err := l.ask(ctx, req, cfg, p, transcript)
	if err != nil {
		res.Fallback = "the language model was not used: " + err.Error()
		return res, nil
	}
	res.Fallback = merge(&res, answer, req.Fields)
	return res, nil
}

func modelOf(req telephony.Request) *switchboardv1.AgentAnalysis {
	if req.Agent == nil {
		return nil
	}
	return req.Agent.Spec.Analysis
}

// modelAnswer is what the schema asks the model for.
type modelAnswer struct {
	Summary       string                     `json:"summary"`
	ExtractedData map[string]json.RawMessage `json:"extracted_data"`
}

// ask sends the transcript to the model and decodes its answer, within the
// agent's timeout.
func (l *LLM) ask(ctx context.Context, req telephony.Request, cfg *switchboardv1.AgentAnalysis,
	p telephony.Progress, transcript []telephony.Turn) (modelAnswer, error) {
	timeout := DefaultLLMTimeout
	if cfg.TimeoutSeconds > 0 {
		timeout = min(time.Duration(cfg.TimeoutSeconds)*time.Second, MaxLLMTimeout)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := l.Policy.Check(ctx, cfg.URL); err != nil {
		return modelAnswer{}, err
	}
	opts, err := l.options(ctx, req.Namespace, cfg)
	if err != nil {
		return modelAnswer{}, err
	}
	c := openai.NewClient(opts...)
	resp, err := c.Chat.Completions.New(ctx, params(req, cfg, p, transcript))
	switch {
	case ctx.Err() != nil:
		return modelAnswer{}, fmt.Errorf("no answer within %s", timeout)
	case err != nil:
		return modelAnswer{}, describe(err)
	case len(resp.Choices) == 0:
		return modelAnswer{}, errors.New("the model answered no choice")
	case resp.Choices[0].Message.Refusal != "":
		return modelAnswer{}, errors.New("the model refused")
	}
	content := resp.Choices[0].Message.Content
	if len(content) > maxAnswerBytes {
		return modelAnswer{}, errors.New("the model's answer is too long")
	}
	var answer modelAnswer
	if err := json.Unmarshal([]byte(content), &answer); err != nil {
		return modelAnswer{}, errors.New("the model's answer is not the JSON object asked for")
	}
	return answer, nil
}

// options configure the client: the agent's URL and key, no retries (the
// timeout bounds one attempt), the guarded transport.
func (l *LLM) options(ctx context.Context, namespace string, cfg *switchboardv1.AgentAnalysis) ([]option.RequestOption, error) {
	transport := l.Transport
	if transport == nil {
		transport = egress.GuardedTransport(l.Policy)
	}
	key := ""
	if ref := cfg.APIKeySecretRef; ref != nil {
		var s corev1.Secret
		if err := l.Secrets.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, &s); err != nil {
			return nil, fmt.Errorf("reading the API key Secret %s: %w", ref.Name, err)
		}
		if key = string(s.Data[switchboardv1.AnalysisAPIKeySecretKey]); key == "" {
			return nil, fmt.Errorf("the Secret %s has no key %s", ref.Name, switchboardv1.AnalysisAPIKeySecretKey)
		}
	}
	return []option.RequestOption{option.WithBaseURL(cfg.URL), option.WithMaxRetries(0), option.WithAPIKey(key),
		option.WithHTTPClient(&http.Client{Transport: transport,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}),
		option.WithMiddleware(organizationsOwn(key))}, nil
}

// organizationsOwn sends the organization's endpoint its own key only:
// the client also reads OPENAI_API_KEY, OPENAI_ORG_ID and OPENAI_PROJECT_ID
// from the operator's environment, which are not the organization's to see.
func organizationsOwn(key string) option.Middleware {
	return func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		r.Header.Del("OpenAI-Organization")
		r.Header.Del("OpenAI-Project")
		if key == "" {
			r.Header.Del("Authorization")
		}
		return next(r)
	}
}

// describe says why a request failed, without the response body (which
// may echo the request).
func describe(err error) error {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		return fmt.Errorf("the endpoint answered HTTP %d", apiErr.StatusCode)
	}
	return errors.New("the endpoint could not be reached")
}

const instructions = "You analyze a finished phone call between an automated agent and a callee. " +
	"Write a one- or two-sentence summary of the call, and extract each requested field from what the " +
	"callee said, in the field's type. Use null for a field the conversation does not give. " +
	"Lines that start with \"Note:\" say what happened (silence, speech that could not be recognized), " +
	"they are not words anyone said. A callee's line marked \"(not taken as an answer)\" is words the agent's " +
	"question did not accept: it gives that question's field no value. " +
	"Answer with the JSON object the schema describes."

// params is the chat-completions request: the instructions, the call's
// outcome and transcript, and the schema of the answer.
func params(req telephony.Request, cfg *switchboardv1.AgentAnalysis, p telephony.Progress, transcript []telephony.Turn) openai.ChatCompletionNewParams {
	outcome := fmt.Sprintf("The call ended with disposition %s after %s.", p.Disposition, p.Duration.Round(time.Second))
	return openai.ChatCompletionNewParams{
		Model: cfg.Model,
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage(instructions),
			openai.UserMessage(outcome + "\n\nTranscript:\n" + modelTranscript(req.CallID, transcript)),
		},
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
				Name: "call_analysis", Strict: openai.Bool(true), Schema: Schema(req.Fields),
			}},
		},
	}
}

// modelTranscript is the transcript as the model reads it: the API's
// lines, but Switchboard's notes ("(no answer)") are notes, not the
// callee's words, and a gather step's refused answer says so. A model fed
// "User: (no answer)" took silence for "no", as the rules once did.
func modelTranscript(callID string, turns []telephony.Turn) string {
	var text strings.Builder
	for i, u := range callview.RenderTranscript(callID, turns).Utterances {
		switch t := turns[i]; {
		case t.Note:
			text.WriteString("Note: " + u.Content)
		case !answers(t) && t.Speaker == "callee":
			text.WriteString(callview.Line(u) + " (not taken as an answer)")
		default:
			text.WriteString(callview.Line(u))
		}
		text.WriteByte('\n')
	}
	return text.String()
}

// Schema is the JSON schema of the model's answer: a summary and one
// property per field, of the field's type or null, described by the
// field's description. Every property is required and no other allowed,
// as strict structured outputs demand.
func Schema(fields []telephony.Field) map[string]any {
	props := make(map[string]any, len(fields))
	names := make([]string, 0, len(fields))
	for _, f := range fields {
		prop := map[string]any{"type": []string{f.Type, "null"}}
		if f.Description != "" {
			prop["description"] = f.Description
		}
		props[f.Name] = prop
		names = append(names, f.Name)
	}
	return map[string]any{
		"type": "object", "additionalProperties": false, "required": []string{"summary", "extracted_data"},
		"properties": map[string]any{
			"summary": map[string]any{"type": "string", "description": "What happened on the call, in one or two sentences."},
			"extracted_data": map[string]any{"type": "object", "additionalProperties": false,
				"required": names, "properties": props},
		},
	}
}

// merge puts the model's summary and values of the right type into res,
// keeping the rules' values elsewhere, and returns what it kept and why
// ("" when the model's whole answer was used).
func merge(res *Result, answer modelAnswer, fields []telephony.Field) string {
	var kept []string
	if s := strings.TrimSpace(answer.Summary); s != "" {
		res.Summary = s
	} else {
		kept = append(kept, "the summary (the model gave none)")
	}
	for _, f := range fields {
		raw, ok := answer.ExtractedData[f.Name]
		if !ok {
			kept = append(kept, f.Name+" (the model gave none)")
			continue
		}
		v, ok := typed(f.Type, raw)
		switch {
		case !ok:
			kept = append(kept, fmt.Sprintf("%s (the model's value is not a %s)", f.Name, f.Type))
		case v != nil:
			res.ExtractedData[f.Name] = v
		}
		// A null from the model leaves the rules' value: they read it in
		// the callee's own words or keys.
	}
	if len(kept) == 0 {
		return ""
	}
	return "the rules' result was kept for " + strings.Join(kept, ", ")
}

// typed decodes raw as typ: (value, true), (nil, true) for null, or
// (nil, false) for a value of another type.
func typed(typ string, raw json.RawMessage) (any, bool) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, false
	}
	if v == nil {
		return nil, true
	}
	switch x := v.(type) {
	case float64:
		return x, typ == "number" && !math.IsInf(x, 0) && !math.IsNaN(x)
	case bool:
		return x, typ == "boolean"
	case string:
		return x, typ == "string" && x != ""
	}
	return nil, false
}
