package analysis

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/egress"
	"github.com/switchboard-dev/switchboard/internal/telephony"
)

// No language-model server can run on this machine, so these tests run a
// local httptest server that speaks the OpenAI chat-completions protocol
// (POST {base}/chat/completions, a chat.completion object back) and
// answers well, slowly, with errors or with malformed content.

// modelServer answers each request with reply, and keeps the last request.
type modelServer struct {
	*httptest.Server
	requests chan *seenRequest
}

type seenRequest struct {
	path, authorization, organization string
	body                              map[string]any
}

func newModelServer(t *testing.T, reply func(w http.ResponseWriter, r *http.Request)) *modelServer {
	t.Helper()
	m := &modelServer{requests: make(chan *seenRequest, 8)}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		seen := &seenRequest{path: r.URL.Path, authorization: r.Header.Get("Authorization"),
			organization: r.Header.Get("OpenAI-Organization")}
		_ = json.Unmarshal(raw, &seen.body)
		m.requests <- seen
		reply(w, r)
	}))
	t.Cleanup(m.Close)
	return m
}

// completion answers a chat.completion whose message content is content.
func completion(content string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "local-model",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": content}}},
		})
	}
}

func llmRequest(url string, mutate func(*switchboardv1.AgentAnalysis)) telephony.Request {
	cfg := &switchboardv1.AgentAnalysis{URL: url + "/v1", Model: "local-model", TimeoutSeconds: 5,
		APIKeySecretRef: &switchboardv1.SecretReference{Name: "llm-key"}}
	if mutate != nil {
		mutate(cfg)
	}
	agent := &switchboardv1.Agent{Spec: switchboardv1.AgentSpec{Analysis: cfg}}
	return telephony.Request{CallID: "call_1", Namespace: "org-a", Agent: agent, Fields: booking[:3]}
}

var conversation = []telephony.Turn{
	{Speaker: "agent", Text: "How many people will be dining?"},
	{Speaker: "callee", Text: "Um, four people."},
	{Speaker: "agent", Text: "Is that confirmed?"},
	{Speaker: "callee", Text: "Yeah, sure."},
}

// rules is what the built-in rules make of conversation.
var rules = map[string]any{"party_size": 4.0, "confirmed": true, "customer_name": nil}

func newLLM(secrets ...*corev1.Secret) *LLM {
	b := fake.NewClientBuilder().WithScheme(scheme.Scheme)
	for _, s := range secrets {
		b = b.WithObjects(s)
	}
	return &LLM{Secrets: b.Build(), Policy: egress.URLPolicy{AllowInsecure: true}}
}

var orgKey = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "org-a", Name: "llm-key"},
	Data: map[string][]byte{"api-key": []byte("sk-org-a")}}

func analyze(t *testing.T, l *LLM, req telephony.Request) Result {
	t.Helper()
	res, err := l.Analyze(context.Background(), req, endedCall(), conversation)
	if err != nil {
		t.Fatalf("Analyze failed: %v (it never should)", err)
	}
	return res
}

// A model that answers well replaces the rules' summary and fills what
// the rules could not; the request carries the organization's key, the
// model, the transcript and a strict schema built from extractedData.
func TestLLMAnswerIsUsed(t *testing.T) {
	t.Setenv("OPENAI_ORG_ID", "the-operators-org")
	m := newModelServer(t, completion(`{"summary":"Ada booked a table for four.",`+
		`"extracted_data":{"party_size":4,"confirmed":true,"customer_name":"Ada"}}`))
	res := analyze(t, newLLM(orgKey), llmRequest(m.URL, nil))
	want := map[string]any{"party_size": 4.0, "confirmed": true, "customer_name": "Ada"}
	if res.Summary != "Ada booked a table for four." || !equalData(res.ExtractedData, want) || res.Fallback != "" {
		t.Fatalf("got %+v, want the model's summary and %v", res, want)
	}
	seen := <-m.requests
	if seen.path != "/v1/chat/completions" || seen.authorization != "Bearer sk-org-a" || seen.organization != "" {
		t.Errorf("request to %s with Authorization %q, OpenAI-Organization %q", seen.path, seen.authorization, seen.organization)
	}
	if seen.body["model"] != "local-model" {
		t.Errorf("model %v", seen.body["model"])
	}
	msgs, _ := json.Marshal(seen.body["messages"])
	if !strings.Contains(string(msgs), "User: Um, four people.") {
		t.Errorf("the transcript is not in the messages: %s", msgs)
	}
	format, _ := seen.body["response_format"].(map[string]any)
	schema, _ := json.Marshal(format["json_schema"])
	for _, want := range []string{`"strict":true`, `"party_size":{"description":"How many people will be dining","type":["number","null"]}`,
		`"confirmed":{"type":["boolean","null"]}`, `"required":["party_size","confirmed","customer_name"]`} {
		if !strings.Contains(string(schema), want) {
			t.Errorf("the schema %s lacks %s", schema, want)
		}
	}
}

// Whatever goes wrong with the model, the rules' result stands and
// Fallback says why; a value of the wrong type is refused field by field.
func TestLLMFailuresKeepTheRules(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	tests := []struct {
		name     string
		reply    func(http.ResponseWriter, *http.Request)
		mutate   func(*switchboardv1.AgentAnalysis)
		want     map[string]any
		summary  string // "" keeps the rules'
		fallback string
	}{
		{"slow", func(w http.ResponseWriter, r *http.Request) {
			select { // answers only after the client gave up
			case <-r.Context().Done():
			case <-release:
			}
		}, func(a *switchboardv1.AgentAnalysis) { a.TimeoutSeconds = 1 }, rules, "", "no answer within 1s"},
		{"failing", func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, `{"error":{"message":"model overloaded"}}`, http.StatusServiceUnavailable)
		}, nil, rules, "", "the endpoint answered HTTP 503"},
		{"malformed", completion(`{"summary": "cut off`), nil, rules, "", "not the JSON object asked for"},
		{"not JSON at all", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "<html>") },
			nil, rules, "", "the endpoint"},
		{"wrong types", completion(`{"summary":"Four people.","extracted_data":{"party_size":"four","confirmed":"yes","customer_name":"Ada"}}`),
			nil, map[string]any{"party_size": 4.0, "confirmed": true, "customer_name": "Ada"}, "Four people.",
			"the rules' result was kept for party_size (the model's value is not a number), confirmed (the model's value is not a boolean)"},
		{"nulls and missing", completion(`{"summary":"","extracted_data":{"party_size":null}}`),
			nil, rules, "", "the summary (the model gave none), confirmed (the model gave none), customer_name (the model gave none)"},
		{"http refused without --dev", completion(`{}`), nil, rules, "", "https"},
		{"missing Secret", completion(`{}`), func(a *switchboardv1.AgentAnalysis) { a.APIKeySecretRef.Name = "gone" },
			rules, "", "reading the API key Secret gone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newModelServer(t, tt.reply)
			l := newLLM(orgKey)
			if strings.HasPrefix(tt.name, "http refused") {
				l.Policy.AllowInsecure = false
			}
			rulesOnly := Analyze(llmRequest(m.URL, tt.mutate), endedCall(), conversation)
			res := analyze(t, l, llmRequest(m.URL, tt.mutate))
			if !equalData(res.ExtractedData, tt.want) {
				t.Errorf("extracted %v, want %v", res.ExtractedData, tt.want)
			}
			if want := cmpOr(tt.summary, rulesOnly.Summary); res.Summary != want {
				t.Errorf("summary %q, want %q", res.Summary, want)
			}
			if !strings.Contains(res.Fallback, tt.fallback) || res.Fallback == "" {
				t.Errorf("fallback %q, want it to say %q", res.Fallback, tt.fallback)
			}
		})
	}
}

// Without an API key Secret no key is sent, not even the operator's own
// OPENAI_API_KEY; an agent without spec.analysis asks no model at all.
func TestLLMSendsOnlyTheOrganizationsKey(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-the-operators-own")
	m := newModelServer(t, completion(`{"summary":"ok","extracted_data":{"party_size":4,"confirmed":true,"customer_name":null}}`))
	res := analyze(t, newLLM(), llmRequest(m.URL, func(a *switchboardv1.AgentAnalysis) { a.APIKeySecretRef = nil }))
	if seen := <-m.requests; seen.authorization != "" {
		t.Errorf("Authorization %q sent without a Secret", seen.authorization)
	}
	if res.Summary != "ok" {
		t.Errorf("summary %q", res.Summary)
	}

	req := llmRequest(m.URL, nil)
	req.Agent.Spec.Analysis = nil
	if res := analyze(t, newLLM(orgKey), req); res.Fallback != "" || !equalData(res.ExtractedData, rules) {
		t.Errorf("without spec.analysis: %+v", res)
	}
	select {
	case seen := <-m.requests:
		t.Errorf("a model was asked without spec.analysis: %+v", seen)
	default:
	}
}

func equalData(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range b {
		if got, ok := a[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
