package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"go.uber.org/goleak"

	"github.com/switchboard-dev/switchboard/internal/conversation"
	"github.com/switchboard-dev/switchboard/internal/conversation/llmtest"
	"github.com/switchboard-dev/switchboard/internal/egress"
	"github.com/switchboard-dev/switchboard/internal/signing"
)

var call = conversation.CallDetails{CallID: "call_123", AgentID: "agent_1", From: "+15550001111", To: "+15550002222",
	Variables: map[string]any{"name": "Ada"}}

// config is a session's configuration for the stand-in at url, with both
// built-in tools.
func config(url string) Config {
	return Config{URL: url, Model: "standin-1", APIKey: "sk-test", MaxTokens: 250, FirstTokenTimeout: time.Second,
		SystemPrompt: "You take table reservations for Chez Ada.", BuiltIn: []string{toolEndCall, toolPressDigit},
		Policy: egress.URLPolicy{AllowInsecure: true}}
}

func open(t *testing.T, cfg Config) conversation.Session {
	t.Helper()
	s, err := Open(context.Background(), cfg, call)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// chunksOf reads the chunks up to response id's Complete one (skipping
// other responses'); it fails the test if Chunks closes first.
func chunksOf(t *testing.T, s conversation.Session, id int) []conversation.Chunk {
	t.Helper()
	var out []conversation.Chunk
	timeout := time.After(5 * time.Second)
	for {
		select {
		case c, ok := <-s.Chunks():
			if !ok {
				t.Fatalf("Chunks closed before response %d completed (Err: %v); got %+v", id, s.Err(), out)
			}
			if c.ResponseID != id {
				continue
			}
			out = append(out, c)
			if c.Complete {
				return out
			}
		case <-timeout:
			t.Fatalf("response %d did not complete; got %+v", id, out)
		}
	}
}

// ended waits for Chunks to close and returns Err.
func ended(t *testing.T, s conversation.Session) error {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case _, ok := <-s.Chunks():
			if !ok {
				return s.Err()
			}
		case <-timeout:
			t.Fatal("Chunks did not close")
		}
	}
}

func said(chunks []conversation.Chunk) string {
	var b strings.Builder
	for _, c := range chunks {
		b.WriteString(c.Content)
	}
	return b.String()
}

func tools(chunks []conversation.Chunk) []conversation.Message {
	var out []conversation.Message
	for _, c := range chunks {
		if c.Tool != nil {
			out = append(out, *c.Tool)
		}
	}
	return out
}

func respond(id int, transcript ...conversation.Message) conversation.Request {
	return conversation.Request{Kind: conversation.Respond, ResponseID: id, Transcript: transcript}
}

func user(s string) conversation.Message {
	return conversation.Message{Role: conversation.RoleUser, Content: s}
}
func agent(s string) conversation.Message {
	return conversation.Message{Role: conversation.RoleAgent, Content: s}
}

func TestBeginMessageIsResponseZero(t *testing.T) {
	for _, begin := range []string{"Hello, this is Chez Ada.", ""} {
		cfg := config(llmtest.Start(t, llmtest.New()))
		cfg.BeginMessage = begin
		s := open(t, cfg)
		got := chunksOf(t, s, 0)
		if len(got) != 1 || got[0].Content != begin || !got[0].Complete {
			t.Errorf("begin %q: response 0 is %+v, want one complete chunk", begin, got)
		}
	}
}

func TestRespondStreamsTheAnswerInChunks(t *testing.T) {
	llm := llmtest.New(llmtest.Turn{Say: "Lovely. For how many people should I book the table?"})
	cfg := config(llmtest.Start(t, llm))
	temp := 0.3
	cfg.Temperature = &temp
	cfg.Functions = []Function{{Name: "check_availability", Description: "Is a table free?", URL: "http://127.0.0.1:1/f",
		Parameters: json.RawMessage(`{"type":"object","properties":{"time":{"type":"string"}}}`)}}
	s := open(t, cfg)
	s.Request(respond(1, agent("Hello, this is Chez Ada."), user("I'd like a table tonight.")))
	got := chunksOf(t, s, 1)
	if said(got) != "Lovely. For how many people should I book the table?" {
		t.Errorf("said %q", said(got))
	}
	if len(got) < 3 {
		t.Errorf("the answer came in %d chunks, want it streamed word by word", len(got))
	}
	reqs := llm.Requests()
	if len(reqs) != 1 {
		t.Fatalf("the stand-in got %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if !r.Stream || r.Model != "standin-1" || r.MaxTokens == nil || *r.MaxTokens != 250 || r.Temperature == nil || *r.Temperature != 0.3 {
		t.Errorf("request: stream %v model %q max_tokens %v temperature %v", r.Stream, r.Model, r.MaxTokens, r.Temperature)
	}
	if auth := r.Header.Get("Authorization"); auth != "Bearer sk-test" {
		t.Errorf("Authorization %q", auth)
	}
	if roles := rolesOf(r.Messages); roles != "system assistant user" {
		t.Errorf("roles %q", roles)
	}
	var names []string
	for _, tool := range r.Tools {
		names = append(names, tool.Function.Name)
	}
	if strings.Join(names, " ") != "end_call press_digit check_availability" {
		t.Errorf("tools %v", names)
	}
}

func TestNoKeyNoAuthorization(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-operators-own")
	t.Setenv("OPENAI_ORG_ID", "org-operator")
	llm := llmtest.New(llmtest.Turn{Say: "Hi."})
	cfg := config(llmtest.Start(t, llm))
	cfg.APIKey = ""
	s := open(t, cfg)
	s.Request(respond(1, user("Hello?")))
	chunksOf(t, s, 1)
	h := llm.Requests()[0].Header
	if h.Get("Authorization") != "" || h.Get("OpenAI-Organization") != "" {
		t.Errorf("the operator's credentials were sent: %v", h)
	}
}

func rolesOf(ms []llmtest.Message) string {
	var roles []string
	for _, m := range ms {
		roles = append(roles, m.Role)
	}
	return strings.Join(roles, " ")
}

func TestTranscriptBecomesMessagesWithToolCallsPaired(t *testing.T) {
	llm := llmtest.New()
	s := open(t, config(llmtest.Start(t, llm)))
	yes := true
	s.Request(conversation.Request{Kind: conversation.Remind, ResponseID: 1, Transcript: []conversation.Message{
		agent("Hello."),
		user("Is there a table at eight?"),
		agent("Let me check."),
		{Role: conversation.RoleToolCallInvocation, ToolCallID: "t1", Name: "check", Arguments: `{"time":"20:00"}`},
		{Role: conversation.RoleToolCallInvocation, ToolCallID: "t2", Name: "check", Arguments: `{"time":"21:00"}`},
		user("(background noise)"),
		{Role: conversation.RoleToolCallResult, ToolCallID: "t1", Content: "free", Successful: &yes},
		{Role: conversation.RoleToolCallResult, ToolCallID: "orphan", Content: "lost"},
		agent("Yes, at eight."),
	}})
	chunksOf(t, s, 1)
	ms := llm.Requests()[0].Messages
	if roles := rolesOf(ms); roles != "system assistant user assistant assistant tool tool user assistant user" {
		t.Fatalf("roles %q", roles)
	}
	calls := ms[4].ToolCalls
	if len(calls) != 2 || calls[0].ID != "t1" || calls[1].Function.Name != "check" || calls[1].Function.Arguments != `{"time":"21:00"}` {
		t.Errorf("tool calls %+v", calls)
	}
	if ms[5].ToolCallID != "t1" || ms[5].Content != "free" || ms[6].ToolCallID != "t2" || ms[6].Content != interrupted {
		t.Errorf("tool results %+v %+v", ms[5], ms[6])
	}
	if last := ms[len(ms)-1]; last.Content != RemindPrompt {
		t.Errorf("a reminder request ends with %q", last.Content)
	}
}

func TestLongCallSendsTheLastMessagesOnly(t *testing.T) {
	llm := llmtest.New()
	s := open(t, config(llmtest.Start(t, llm)))
	var transcript []conversation.Message
	for i := range 1000 {
		transcript = append(transcript, agent(fmt.Sprintf("line %d", 2*i)), user(fmt.Sprintf("line %d", 2*i+1)))
	}
	s.Request(respond(1, transcript...))
	chunksOf(t, s, 1)
	ms := llm.Requests()[0].Messages
	if len(ms) != 1+MaxMessages || ms[0].Role != "system" || ms[len(ms)-1].Content != "line 1999" || ms[1].Content != "line 1800" {
		t.Errorf("sent %d messages, from %q to %q", len(ms), ms[1].Content, ms[len(ms)-1].Content)
	}
}

func TestNewerRequestDiscardsTheOlder(t *testing.T) {
	llm := llmtest.New(llmtest.Turn{Say: "First answer."}, llmtest.Turn{Say: "Second answer."})
	llm.SetFirstTokenDelay(300 * time.Millisecond)
	s := open(t, config(llmtest.Start(t, llm)))
	chunksOf(t, s, 0)
	s.Request(respond(1, user("One.")))
	s.Request(respond(2, user("One."), agent(""), user("Two.")))
	s.Request(respond(1, user("stale")))
	got := chunksOf(t, s, 2)
	if said(got) != "Second answer." {
		t.Errorf("response 2 said %q", said(got))
	}
	select {
	case c := <-s.Chunks():
		t.Errorf("a chunk after response 2: %+v", c)
	case <-time.After(100 * time.Millisecond):
	}
	for _, r := range llm.Requests() {
		if last := r.Messages[len(r.Messages)-1].Content; last == "stale" {
			t.Error("a request older than the last was sent")
		}
	}
}

// The callee interrupts (the loop tells the session the turn is theirs):
// the answer still streaming stops, and the session answers the next
// request as before.
func TestBargeInCancelsTheStreamingAnswer(t *testing.T) {
	llm := llmtest.New(llmtest.Turn{Say: "A long answer."}, llmtest.Turn{Say: "Second answer."})
	llm.SetFirstTokenDelay(300 * time.Millisecond)
	s := open(t, config(llmtest.Start(t, llm)))
	chunksOf(t, s, 0)
	s.Request(respond(1, user("One.")))
	time.Sleep(50 * time.Millisecond) // the request is out
	s.Update(nil, "user_turn")
	select {
	case c := <-s.Chunks():
		t.Fatalf("a chunk of the cancelled answer: %+v", c)
	case <-time.After(500 * time.Millisecond):
	}
	if err := s.Err(); err != nil {
		t.Fatalf("Err = %v: a cancelled answer is no failure", err)
	}
	s.Request(respond(2, user("One."), user("Two.")))
	if got := said(chunksOf(t, s, 2)); got != "Second answer." {
		t.Errorf("response 2 said %q", got)
	}
}

func TestEndCallSaysItsLineAndHangsUp(t *testing.T) {
	llm := llmtest.New(llmtest.Turn{Say: "Perfect. ", Rounds: [][]llmtest.ToolCall{llmtest.Call("end_call", `{"message":"Goodbye!"}`)}})
	s := open(t, config(llmtest.Start(t, llm)))
	s.Request(respond(1, user("That's all.")))
	got := chunksOf(t, s, 1)
	last := got[len(got)-1]
	if said(got) != "Perfect. Goodbye!" || !last.EndCall || last.Content != "Goodbye!" || len(tools(got)) != 0 {
		t.Errorf("chunks %+v", got)
	}
	if n := len(llm.Requests()); n != 1 {
		t.Errorf("the model was asked %d times, want once", n)
	}
}

func TestPressDigit(t *testing.T) {
	llm := llmtest.New(
		llmtest.Turn{When: "sales", Rounds: [][]llmtest.ToolCall{llmtest.Call("press_digit", `{"digit":"3"}`)}},
		llmtest.Turn{When: "support", Rounds: [][]llmtest.ToolCall{llmtest.Call("press_digit", `{"digit":"33"}`)}, Then: "Hm."},
	)
	s := open(t, config(llmtest.Start(t, llm)))
	s.Request(respond(1, user("For sales press 3.")))
	got := chunksOf(t, s, 1)
	ts := tools(got)
	if last := got[len(got)-1]; last.Digits != "3" || len(ts) != 2 || ts[0].Name != "press_digit" || ts[1].Role != conversation.RoleToolCallResult ||
		ts[0].ToolCallID != ts[1].ToolCallID || !*ts[1].Successful {
		t.Errorf("chunks %+v", got)
	}

	s.Request(respond(2, user("For support press 4.")))
	got = chunksOf(t, s, 2)
	ts = tools(got)
	if last := got[len(got)-1]; last.Digits != "" || said(got) != "Hm." || len(ts) != 2 || *ts[1].Successful ||
		!strings.Contains(ts[1].Content, "do not match") {
		t.Errorf("an invalid digit: chunks %+v", got)
	}
}

func TestUnknownToolIsToldAndTheModelGoesOn(t *testing.T) {
	llm := llmtest.New(llmtest.Turn{Rounds: [][]llmtest.ToolCall{llmtest.Call("transfer_call", `{}`)}, Then: "I cannot transfer you."})
	s := open(t, config(llmtest.Start(t, llm)))
	s.Request(respond(1, user("Put me through.")))
	got := chunksOf(t, s, 1)
	if said(got) != "I cannot transfer you." {
		t.Errorf("said %q", said(got))
	}
	reqs := llm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	ms := reqs[1].Messages
	if last := ms[len(ms)-1]; last.Role != "tool" || !strings.Contains(last.Content, `no tool named "transfer_call"`) {
		t.Errorf("the model was told %+v", last)
	}
}

// function is a custom function's test server: it records the requests,
// and answers as handle says.
type function struct {
	hits    atomic.Int32
	bodies  chan []byte
	headers chan http.Header
	url     string
}

func serveFunction(t *testing.T, handle func(w http.ResponseWriter, r *http.Request)) *function {
	f := &function{bodies: make(chan []byte, 16), headers: make(chan http.Header, 16)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.hits.Add(1)
		body, _ := io.ReadAll(r.Body)
		f.bodies <- body
		f.headers <- r.Header.Clone()
		handle(w, r)
	}))
	t.Cleanup(srv.Close)
	f.url = srv.URL + "/functions/check"
	return f
}

const availability = `{"type":"object","required":["party_size","time"],"properties":{` +
	`"party_size":{"type":"integer","minimum":1},"time":{"type":"string"}}}`

func withFunction(t *testing.T, llm *llmtest.Server, f *function, fn Function) conversation.Session {
	cfg := config(llmtest.Start(t, llm))
	fn.Name, fn.Description, fn.URL = "check_availability", "Is a table free?", f.url
	if fn.Parameters == nil {
		fn.Parameters = json.RawMessage(availability)
	}
	cfg.Functions = []Function{fn}
	return open(t, cfg)
}

func checking(args string) *llmtest.Server {
	return llmtest.New(llmtest.Turn{Say: "Let me check. ",
		Rounds: [][]llmtest.ToolCall{llmtest.Call("check_availability", args)}, Then: "Done."})
}

func TestCustomFunctionIsPostedSignedAndAnswered(t *testing.T) {
	secret, err := signing.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	f := serveFunction(t, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"available":true}`)
	})
	llm := checking(`{"party_size":4,"time":"20:00"}`)
	s := withFunction(t, llm, f, Function{SigningSecret: secret})
	s.Request(respond(1, user("Four people at eight.")))
	got := chunksOf(t, s, 1)

	if said(got) != "Let me check. Done." {
		t.Errorf("said %q", said(got))
	}
	ts := tools(got)
	if len(ts) != 2 || ts[0].Role != conversation.RoleToolCallInvocation || ts[0].Arguments != `{"party_size":4,"time":"20:00"}` ||
		ts[1].Content != `{"available":true}` || !*ts[1].Successful || ts[0].ToolCallID != ts[1].ToolCallID {
		t.Errorf("tool chunks %+v", ts)
	}
	body, h := <-f.bodies, <-f.headers
	var posted struct {
		Name string                   `json:"name"`
		Call conversation.CallDetails `json:"call"`
		Args map[string]any           `json:"args"`
	}
	if err := json.Unmarshal(body, &posted); err != nil {
		t.Fatal(err)
	}
	if posted.Name != "check_availability" || posted.Call.CallID != "call_123" || posted.Call.To != "+15550002222" || posted.Args["party_size"] != 4.0 {
		t.Errorf("posted %s", body)
	}
	unix, err := strconv.ParseInt(h.Get("webhook-timestamp"), 10, 64)
	if err != nil {
		t.Fatalf("webhook-timestamp %q", h.Get("webhook-timestamp"))
	}
	want, err := signing.Sign([]string{secret}, h.Get("webhook-id"), time.Unix(unix, 0), body)
	if err != nil || h.Get("webhook-signature") != want || h.Get("webhook-id") == "" {
		t.Errorf("webhook-signature %q, want %q (%v)", h.Get("webhook-signature"), want, err)
	}
	// The model's second request carries the call and its answer.
	ms := llm.Requests()[1].Messages
	tc, res := ms[len(ms)-2], ms[len(ms)-1]
	if len(tc.ToolCalls) != 1 || tc.Content != "Let me check. " || res.ToolCallID != tc.ToolCalls[0].ID || res.Content != `{"available":true}` {
		t.Errorf("the model was told %+v then %+v", tc, res)
	}
}

func TestUnsignedWithoutSecret(t *testing.T) {
	f := serveFunction(t, func(http.ResponseWriter, *http.Request) {})
	s := withFunction(t, checking(`{"party_size":2,"time":"19:00"}`), f, Function{})
	s.Request(respond(1, user("Two at seven.")))
	chunksOf(t, s, 1)
	if h := <-f.headers; h.Get("webhook-signature") != "" {
		t.Errorf("signed without a secret: %v", h)
	}
}

func TestInvalidArgumentsAreNeverSent(t *testing.T) {
	f := serveFunction(t, func(http.ResponseWriter, *http.Request) {})
	for _, args := range []string{`{"party_size":"four","time":"20:00"}`, `{"time":"20:00"}`, `{"party_size":4,`, `[4]`} {
		llm := checking(args)
		s := withFunction(t, llm, f, Function{})
		s.Request(respond(1, user("Four at eight.")))
		got := chunksOf(t, s, 1)
		ts := tools(got)
		if len(ts) != 2 || *ts[1].Successful || !strings.HasPrefix(ts[1].Content, "Error: the arguments") {
			t.Errorf("%s: tool chunks %+v", args, ts)
		}
		if ms := llm.Requests()[1].Messages; !strings.Contains(ms[len(ms)-1].Content, "the tool was not called") {
			t.Errorf("%s: the model was told %q", args, ms[len(ms)-1].Content)
		}
	}
	if n := f.hits.Load(); n != 0 {
		t.Errorf("the function was called %d times with invalid arguments", n)
	}
}

func TestFunctionRetries(t *testing.T) {
	for _, tc := range []struct {
		name     string
		handle   func(w http.ResponseWriter, r *http.Request)
		hits     int32
		resultIs string
	}{
		{"hang", func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, 3,
			"Error: the function failed after 3 attempts: no answer within 100ms."},
		{"503", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }, 3,
			"Error: the function failed after 3 attempts: it answered HTTP 503."},
		{"404", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no such table", http.StatusNotFound) }, 1,
			"Error: the function answered HTTP 404.\nno such table\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := serveFunction(t, tc.handle)
			s := withFunction(t, checking(`{"party_size":4,"time":"20:00"}`), f, Function{Timeout: 100 * time.Millisecond})
			s.Request(respond(1, user("Four at eight.")))
			ts := tools(chunksOf(t, s, 1))
			if len(ts) != 2 || ts[1].Content != tc.resultIs || *ts[1].Successful {
				t.Errorf("tool chunks %+v", ts)
			}
			if n := f.hits.Load(); n != tc.hits {
				t.Errorf("%d attempts, want %d", n, tc.hits)
			}
		})
	}
}

func TestFunctionRedirectIsNotFollowed(t *testing.T) {
	var private atomic.Int32
	inside := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { private.Add(1) }))
	defer inside.Close()
	f := serveFunction(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, inside.URL+"/internal-admin", http.StatusFound)
	})
	s := withFunction(t, checking(`{"party_size":4,"time":"20:00"}`), f, Function{})
	s.Request(respond(1, user("Four at eight.")))
	ts := tools(chunksOf(t, s, 1))
	if len(ts) != 2 || !strings.HasPrefix(ts[1].Content, "Error: the function answered HTTP 302.") || f.hits.Load() != 1 {
		t.Errorf("tool chunks %+v, %d hits", ts, f.hits.Load())
	}
	if private.Load() != 0 {
		t.Error("the redirect to a private address was followed")
	}
}

func TestFunctionOnAPrivateAddressIsRefused(t *testing.T) {
	// Production's policy, and a function on loopback: the address guard
	// refuses it when dialing. (The stand-in model, on loopback too, is
	// let through by the test's transport.)
	f := serveFunction(t, func(http.ResponseWriter, *http.Request) {})
	llm := checking(`{"party_size":4,"time":"20:00"}`)
	cfg := config(llmtest.Start(t, llm))
	cfg.Policy = egress.URLPolicy{}
	cfg.URL = strings.Replace(cfg.URL, "http://", "https://", 1)
	cfg.Transport = modelOnLoopback{model: cfg.URL, guarded: egress.GuardedTransport(cfg.Policy)}
	cfg.Functions = []Function{{Name: "check_availability", Description: "Is a table free?",
		URL: strings.Replace(f.url, "http://", "https://", 1), Parameters: json.RawMessage(availability)}}
	s := open(t, cfg)
	s.Request(respond(1, user("Four at eight.")))
	ts := tools(chunksOf(t, s, 1))
	if len(ts) != 2 || ts[1].Content != "Error: the function's address is refused." || f.hits.Load() != 0 {
		t.Errorf("tool chunks %+v, %d hits", ts, f.hits.Load())
	}
}

// modelOnLoopback sends the stand-in model's requests over plain HTTP
// and every other request through the guarded transport.
type modelOnLoopback struct {
	model   string
	guarded http.RoundTripper
}

func (m modelOnLoopback) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasPrefix(r.URL.String(), m.model) {
		r = r.Clone(r.Context())
		r.URL.Scheme = "http"
		return http.DefaultTransport.RoundTrip(r)
	}
	return m.guarded.RoundTrip(r)
}

func TestFunctionAnswerIsTruncatedWithoutReadingItAll(t *testing.T) {
	const size = 10 << 20
	written := make(chan int, 1)
	f := serveFunction(t, func(w http.ResponseWriter, _ *http.Request) {
		block := []byte(strings.Repeat("é", 2048)) // 2 bytes a character
		n := 0
		for n < size {
			m, err := w.Write(block)
			n += m
			if err != nil {
				break
			}
		}
		written <- n
	})
	s := withFunction(t, checking(`{"party_size":4,"time":"20:00"}`), f, Function{})
	s.Request(respond(1, user("Four at eight.")))
	ts := tools(chunksOf(t, s, 1))
	if len(ts) != 2 || !strings.HasSuffix(ts[1].Content, truncatedNote) ||
		utf8.RuneCountInString(strings.TrimSuffix(ts[1].Content, truncatedNote)) != MaxFunctionAnswerChars {
		t.Fatalf("result of %d characters", utf8.RuneCountInString(ts[1].Content))
	}
	if n := <-written; n >= size {
		t.Errorf("the whole answer (%d bytes) was taken", n)
	}
}

func TestToolRoundsAreBounded(t *testing.T) {
	f := serveFunction(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	rounds := make([][]llmtest.ToolCall, 10)
	for i := range rounds {
		rounds[i] = llmtest.Call("check_availability", `{"party_size":4,"time":"20:00"}`)
	}
	llm := llmtest.New(llmtest.Turn{Rounds: rounds, Then: "I give up."})
	s := withFunction(t, llm, f, Function{})
	s.Request(respond(1, user("Four at eight.")))
	got := chunksOf(t, s, 1)
	reqs := llm.Requests()
	if said(got) != "I give up." || f.hits.Load() != MaxToolRounds || len(reqs) != MaxToolRounds+1 {
		t.Errorf("said %q after %d calls and %d requests", said(got), f.hits.Load(), len(reqs))
	}
	if choice := string(reqs[len(reqs)-1].ToolChoice); choice != `"none"` {
		t.Errorf("the last request's tool_choice is %s", choice)
	}
}

func TestEndlessTalkIsCut(t *testing.T) {
	llm := llmtest.New()
	llm.SetFault(llmtest.EndlessTalk)
	s := open(t, config(llmtest.Start(t, llm)))
	s.Request(respond(1, user("Tell me everything.")))
	if n := utf8.RuneCountInString(said(chunksOf(t, s, 1))); n != MaxResponseChars {
		t.Errorf("said %d characters, want %d", n, MaxResponseChars)
	}
	// The session goes on.
	llm.SetFault(llmtest.NoFault)
	s.Request(respond(2, user("Hello?")))
	if said(chunksOf(t, s, 2)) == "" {
		t.Error("no answer after a cut one")
	}
}

func TestMaxTokensBoundsTheAnswer(t *testing.T) {
	llm := llmtest.New(llmtest.Turn{Say: "one two three four five six"})
	cfg := config(llmtest.Start(t, llm))
	cfg.MaxTokens = 3
	s := open(t, cfg)
	s.Request(respond(1, user("Count.")))
	if got := said(chunksOf(t, s, 1)); got != "one two three " {
		t.Errorf("said %q", got)
	}
}

func TestFaultsEndTheSession(t *testing.T) {
	for _, tc := range []struct {
		fault  llmtest.Fault
		detail string
	}{
		{llmtest.Status429, "the endpoint answered HTTP 429"},
		{llmtest.Status500, "the endpoint answered HTTP 500"},
		{llmtest.MalformedSSE, "the endpoint sent a malformed event stream"},
		{llmtest.Hang, "no first token within 200ms"},
	} {
		t.Run(tc.detail, func(t *testing.T) {
			llm := llmtest.New()
			llm.SetFault(tc.fault)
			cfg := config(llmtest.Start(t, llm))
			cfg.FirstTokenTimeout = 200 * time.Millisecond
			s := open(t, cfg)
			s.Request(respond(1, user("Hello?")))
			assertFault(t, ended(t, s), tc.detail)
		})
	}
}

func TestSlowFirstToken(t *testing.T) {
	llm := llmtest.New(llmtest.Turn{Say: "Finally."})
	llm.SetFirstTokenDelay(time.Second)
	cfg := config(llmtest.Start(t, llm))
	cfg.FirstTokenTimeout = 200 * time.Millisecond
	s := open(t, cfg)
	s.Request(respond(1, user("Hello?")))
	assertFault(t, ended(t, s), "no first token within 200ms")
}

func TestEndpointRefusedByThePolicy(t *testing.T) {
	url := strings.Replace(llmtest.Start(t, llmtest.New()), "http://", "https://", 1)
	cfg := config(url)
	cfg.Policy = egress.URLPolicy{}
	s := open(t, cfg)
	s.Request(respond(1, user("Hello?")))
	assertFault(t, ended(t, s), "the model's endpoint: refused to connect to 127.0.0.1: a loopback address")

	cfg.URL = strings.Replace(url, "https://", "http://", 1)
	_, err := Open(context.Background(), cfg, call)
	assertFault(t, err, "the model's URL is refused: webhook URLs must use https")
}

func assertFault(t *testing.T, err error, detail string) {
	t.Helper()
	var fault *conversation.Error
	if !errors.As(err, &fault) || fault.Reason != conversation.ReasonLLM || fault.Detail != detail {
		t.Errorf("error %v, want %s: %s", err, conversation.ReasonLLM, detail)
	}
}

func TestOpenRefusesBadTools(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
	}{
		{"unsupported built-in", func(c *Config) { c.BuiltIn = []string{"transfer_call"} }},
		{"schema not an object", func(c *Config) {
			c.Functions = []Function{{Name: "f", URL: "http://x/f", Parameters: json.RawMessage(`{"type":"string"}`)}}
		}},
		{"schema reading a file", func(c *Config) {
			c.Functions = []Function{{Name: "f", URL: "http://x/f", Parameters: json.RawMessage(`{"type":"object","$ref":"file:///etc/passwd"}`)}}
		}},
		{"bad secret", func(c *Config) {
			c.Functions = []Function{{Name: "f", URL: "http://x/f", SigningSecret: "whsec_short"}}
		}},
		{"name of a built-in", func(c *Config) { c.Functions = []Function{{Name: "end_call", URL: "http://x/f"}} }},
	} {
		cfg := config("http://127.0.0.1:1/v1")
		tc.edit(&cfg)
		var fault *conversation.Error
		if _, err := Open(context.Background(), cfg, call); !errors.As(err, &fault) {
			t.Errorf("%s: Open gave %v", tc.name, err)
		}
	}
}

func TestCloseStopsEverything(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	llm := llmtest.New()
	llm.SetFault(llmtest.Hang)
	srv := httptest.NewServer(llm)
	cfg := config(srv.URL + "/v1")
	cfg.FirstTokenTimeout = time.Minute
	s, err := Open(context.Background(), cfg, call)
	if err != nil {
		t.Fatal(err)
	}
	s.Request(respond(1, user("Hello?")))
	for len(llm.Requests()) == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := ended(t, s); err != nil {
		t.Errorf("Err after Close: %v", err)
	}
	srv.Close()
}

func TestDemoDialogue(t *testing.T) {
	cfg := config(llmtest.Start(t, llmtest.Demo()))
	cfg.BeginMessage = "Hello, this is Chez Ada. Would you like to book a table?"
	s := open(t, cfg)
	transcript := []conversation.Message{agent(said(chunksOf(t, s, 0)))}
	var last conversation.Chunk
	for i, line := range []string{"Yes please.", "Four of us.", "At eight."} {
		transcript = append(transcript, user(line))
		s.Request(respond(i+1, transcript...))
		got := chunksOf(t, s, i+1)
		transcript = append(transcript, agent(said(got)))
		last = got[len(got)-1]
	}
	if !last.EndCall || !strings.Contains(said([]conversation.Chunk{last}), "Goodbye") {
		t.Errorf("the demo ended with %+v", last)
	}
	if strings.Contains(transcript[2].Content, "Hello") {
		t.Errorf("the demo greeted after the begin message: %q", transcript[2].Content)
	}
	s.Request(conversation.Request{Kind: conversation.Remind, ResponseID: 9, Transcript: transcript[:3]})
	if got := said(chunksOf(t, s, 9)); got != "Are you still there?" {
		t.Errorf("reminder %q", got)
	}
}

func TestASlowReaderIsNotAStalledModel(t *testing.T) {
	llm := llmtest.New(llmtest.Turn{Say: strings.Repeat("word ", 150)})
	cfg := config(llmtest.Start(t, llm))
	cfg.FirstTokenTimeout = 100 * time.Millisecond
	s := open(t, cfg)
	s.Request(respond(1, user("Talk.")))
	time.Sleep(300 * time.Millisecond) // the chunk buffer fills up meanwhile
	if got := said(chunksOf(t, s, 1)); got != strings.Repeat("word ", 150) {
		t.Errorf("said %q", got)
	}
}
