// Package llmtest is a stand-in for a hosted language model: a local
// server speaking the OpenAI chat-completions protocol (POST
// /v1/chat/completions) as vLLM, Ollama and the hosted APIs speak it, with
// streamed answers (text/event-stream, "data: {chat.completion.chunk}"
// lines, tool_calls deltas split across chunks by index, "data: [DONE]")
// and whole JSON answers when stream is false. It does not think: it plays
// a scripted dialogue, and can be made slow or faulty, so that tests (and
// `make run`, through hack/standin-llm) exercise a real client against the
// real protocol.
package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Turn is the model's answer to one turn of the callee.
type Turn struct {
	// When, if set, makes the turn answer any callee line containing it
	// (case-insensitive), wherever it comes; turns without When answer the
	// callee's lines in order.
	When string
	// Say is spoken first.
	Say string
	// Rounds are the tool calls the model makes after Say, one round per
	// request: the next round once the previous round's results are back.
	Rounds [][]ToolCall
	// Then is said once the last round's results are back.
	Then string
}

// ToolCall is a call the model makes: a function name and its arguments
// (JSON, sent as the model streams them, in pieces).
type ToolCall struct {
	Name, Arguments string
}

// Call is one round of a single tool call.
func Call(name, arguments string) []ToolCall { return []ToolCall{{Name: name, Arguments: arguments}} }

// Fault makes the server misbehave.
type Fault int

const (
	// NoFault answers properly.
	NoFault Fault = iota
	// Status429 answers HTTP 429 with an OpenAI error body.
	Status429
	// Status500 answers HTTP 500.
	Status500
	// MalformedSSE streams a first chunk, then a data line that is not JSON.
	MalformedSSE
	// Hang never answers, not even the headers, until the client goes.
	Hang
	// EndlessTalk streams words until the client goes, past max_tokens.
	EndlessTalk
)

// Request is what the server was sent (the fields tests look at).
type Request struct {
	Header      http.Header
	Model       string          `json:"model"`
	Stream      bool            `json:"stream"`
	MaxTokens   *int            `json:"max_tokens"`
	Temperature *float64        `json:"temperature"`
	ToolChoice  json.RawMessage `json:"tool_choice"`
	Messages    []Message       `json:"messages"`
	Tools       []Tool          `json:"tools"`
}

// Message is a request's message; Content is its text, whether sent as a
// string or as text parts.
type Message struct {
	Role       string
	Content    string
	ToolCallID string
	ToolCalls  []MessageToolCall
}

// MessageToolCall is an assistant message's tool call.
type MessageToolCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// UnmarshalJSON reads content as a string or text parts.
func (m *Message) UnmarshalJSON(data []byte) error {
	var raw struct {
		Role       string            `json:"role"`
		Content    json.RawMessage   `json:"content"`
		ToolCallID string            `json:"tool_call_id"`
		ToolCalls  []MessageToolCall `json:"tool_calls"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*m = Message{Role: raw.Role, ToolCallID: raw.ToolCallID, ToolCalls: raw.ToolCalls}
	if len(raw.Content) == 0 || string(raw.Content) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw.Content, &m.Content); err == nil {
		return nil
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw.Content, &parts); err != nil {
		return fmt.Errorf("content is neither a string nor text parts: %w", err)
	}
	for _, p := range parts {
		m.Content += p.Text
	}
	return nil
}

// Tool is a tool the request offered.
type Tool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// Server is the stand-in; it is an http.Handler. Its settings may change
// between requests.
type Server struct {
	turns []Turn
	// otherwise is said when no turn answers; greeting starts the first
	// answer of a conversation the agent has not spoken in yet.
	otherwise, greeting string

	mu         sync.Mutex
	delay      time.Duration
	fault      Fault
	requests   []Request
	callNumber int
}

// New is a server playing turns.
func New(turns ...Turn) *Server {
	return &Server{turns: turns, otherwise: "Sorry, could you say that again?"}
}

// Demo is a server playing a restaurant's reservation agent: it greets
// the callee (unless the Agent's begin message did), asks the party size
// and the time, confirms, and hangs up with end_call saying goodbye. It
// answers reminders with "Are you still there?".
func Demo() *Server {
	s := New(
		Turn{Say: "Lovely. For how many people should I book the table?"},
		Turn{Say: "Thank you. And at what time would you like to come?"},
		Turn{Say: "Perfect, I have noted your reservation. ",
			Rounds: [][]ToolCall{Call("end_call", `{"message":"We look forward to seeing you. Goodbye!"}`)}},
	)
	s.greeting = "Hello, this is the reservation desk of Chez Ada. "
	return s
}

// SetFirstTokenDelay delays every answer's first token (after the
// headers).
func (s *Server) SetFirstTokenDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay = d
}

// SetFault makes the following requests fail as f says.
func (s *Server) SetFault(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault = f
}

// Requests are the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Start serves s on a local test server, closed when the test ends, and
// returns the base URL (ending in /v1) a client is given.
func Start(t testing.TB, s *Server) string {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// maxRequestBytes bounds a request's body.
const maxRequestBytes = 8 << 20

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		writeError(w, http.StatusNotFound, "not_found", "only POST /v1/chat/completions is served here")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBytes))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "unreadable body")
		return
	}
	var req Request
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "the body is not a chat completion request: "+err.Error())
		return
	}
	req.Header = r.Header.Clone()
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.callNumber++
	id := fmt.Sprintf("chatcmpl-standin-%d", s.callNumber)
	delay, fault := s.delay, s.fault
	s.mu.Unlock()

	switch fault {
	case Status429:
		writeError(w, http.StatusTooManyRequests, "rate_limit_exceeded", "Rate limit reached (stand-in)")
		return
	case Status500:
		writeError(w, http.StatusInternalServerError, "server_error", "The stand-in failed on purpose")
		return
	case Hang:
		<-r.Context().Done()
		return
	}
	a := s.answer(req)
	if fault == EndlessTalk {
		a = answer{endless: true}
	}
	if !req.Stream {
		s.writeWhole(w, r, req, id, a, delay)
		return
	}
	st := &streamer{w: w, id: id, model: req.Model}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	st.flush()
	if !sleep(r, delay) {
		return
	}
	if fault == MalformedSSE {
		st.send(delta{Role: "assistant", Content: "Hello"}, nil)
		_, _ = io.WriteString(w, "data: {\"choices\": [{\"delta\": {\"content\": \"oops\"\n\n")
		st.flush()
		return
	}
	st.stream(r, a, req.MaxTokens)
}

// answer is what the model says to a request.
type answer struct {
	text    string
	calls   []ToolCall
	endless bool
}

// answer picks the turn: a turn whose When the last callee line contains,
// else the next turn in order (counting the callee's lines), and the round
// from the tool results since that line.
func (s *Server) answer(req Request) answer {
	last, lines, rounds, spoken := "", 0, 0, false
	for _, m := range req.Messages {
		spoken = spoken || m.Role == "assistant"
		switch {
		case m.Role == "user":
			last, rounds = m.Content, 0
			if !stageDirection(m.Content) {
				lines++
			}
		case m.Role == "assistant" && len(m.ToolCalls) > 0:
			rounds++
		}
	}
	a := s.play(req, last, lines, rounds)
	if !spoken && a.text != "" {
		a.text = s.greeting + a.text
	}
	return a
}

// play is the turn's answer, or what is said when no turn answers.
func (s *Server) play(req Request, last string, lines, rounds int) answer {
	turn, ok := s.pick(last, lines)
	if !ok {
		if stageDirection(last) {
			return answer{text: "Are you still there?"}
		}
		return answer{text: s.otherwise}
	}
	noTools := strings.Contains(string(req.ToolChoice), `"none"`)
	switch {
	case rounds < len(turn.Rounds) && !noTools:
		a := answer{calls: turn.Rounds[rounds]}
		if rounds == 0 {
			a.text = turn.Say
		}
		return a
	case rounds == 0:
		return answer{text: turn.Say + turn.Then}
	}
	return answer{text: turn.Then}
}

func (s *Server) pick(last string, lines int) (Turn, bool) {
	for _, t := range s.turns {
		if t.When != "" && strings.Contains(strings.ToLower(last), strings.ToLower(t.When)) {
			return t, true
		}
	}
	if stageDirection(last) {
		return Turn{}, false
	}
	n := 0
	for _, t := range s.turns {
		if t.When != "" {
			continue
		}
		if n++; n == lines {
			return t, true
		}
	}
	return Turn{}, false
}

// stageDirection is a user message in parentheses: a note from the
// client ("the callee has not answered"), not the callee's words.
func stageDirection(s string) bool {
	s = strings.TrimSpace(s)
	return strings.HasPrefix(s, "(") && strings.HasSuffix(s, ")")
}

func sleep(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// words splits text into the pieces a model streams: a word and the space
// after it.
func words(text string) []string {
	var out []string
	for text != "" {
		i := strings.IndexByte(text, ' ')
		if i < 0 {
			return append(out, text)
		}
		out = append(out, text[:i+1])
		text = text[i+1:]
	}
	return out
}

type streamer struct {
	w     http.ResponseWriter
	id    string
	model string
}

type delta struct {
	Role      string          `json:"role,omitempty"`
	Content   string          `json:"content,omitempty"`
	ToolCalls []toolCallDelta `json:"tool_calls,omitempty"`
}

type toolCallDelta struct {
	Index    int    `json:"index"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

func (st *streamer) send(d delta, finish *string) bool {
	chunk := map[string]any{
		"id": st.id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": st.model,
		"choices": []map[string]any{{"index": 0, "delta": d, "finish_reason": finish}},
	}
	data, _ := json.Marshal(chunk)
	if _, err := fmt.Fprintf(st.w, "data: %s\n\n", data); err != nil {
		return false
	}
	st.flush()
	return true
}

func (st *streamer) flush() {
	if f, ok := st.w.(http.Flusher); ok {
		f.Flush()
	}
}

// stream sends a as OpenAI streams: a role chunk with the first words,
// the words one by one, each tool call's name then its arguments in
// pieces, a last chunk with the finish reason, and [DONE].
func (st *streamer) stream(r *http.Request, a answer, maxTokens *int) {
	finish := "stop"
	tokens := 0
	first := true
	say := func(piece string) bool {
		d := delta{Content: piece}
		if first {
			d.Role, first = "assistant", false
		}
		tokens++
		return st.send(d, nil)
	}
	if a.endless {
		for r.Context().Err() == nil && say("la ") {
		}
		return
	}
	for _, w := range words(a.text) {
		if maxTokens != nil && tokens >= *maxTokens {
			finish = "length"
			break
		}
		if !say(w) {
			return
		}
	}
	if len(a.calls) > 0 && finish == "stop" {
		finish = "tool_calls"
		if !st.sendCalls(a.calls, first) {
			return
		}
	}
	if !st.send(delta{}, &finish) {
		return
	}
	_, _ = io.WriteString(st.w, "data: [DONE]\n\n")
	st.flush()
}

// sendCalls streams each call: a delta with its index, id and name, then
// its arguments in pieces.
func (st *streamer) sendCalls(calls []ToolCall, first bool) bool {
	for i, c := range calls {
		var head toolCallDelta
		head.Index, head.ID, head.Type = i, fmt.Sprintf("call_%s_%d", st.id, i), "function"
		head.Function.Name = c.Name
		d := delta{ToolCalls: []toolCallDelta{head}}
		if first {
			d.Role, first = "assistant", false
		}
		if !st.send(d, nil) {
			return false
		}
		for _, piece := range pieces(c.Arguments, 7) {
			var more toolCallDelta
			more.Index = i
			more.Function.Arguments = piece
			if !st.send(delta{ToolCalls: []toolCallDelta{more}}, nil) {
				return false
			}
		}
	}
	return true
}

// pieces cuts s every n bytes, as a model's tokens cut JSON anywhere.
func pieces(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// writeWhole answers a request with stream false: one chat.completion.
func (s *Server) writeWhole(w http.ResponseWriter, r *http.Request, req Request, id string, a answer, delay time.Duration) {
	if !sleep(r, delay) {
		return
	}
	if a.endless {
		a.text = strings.Repeat("la ", 1000)
	}
	msg := map[string]any{"role": "assistant", "content": a.text}
	finish := "stop"
	if len(a.calls) > 0 {
		finish = "tool_calls"
		var calls []map[string]any
		for i, c := range a.calls {
			calls = append(calls, map[string]any{"id": fmt.Sprintf("call_%s_%d", id, i), "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Arguments}})
		}
		msg["tool_calls"] = calls
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": id, "object": "chat.completion", "created": time.Now().Unix(), "model": req.Model,
		"choices": []map[string]any{{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]int{"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
	})
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": message, "type": code, "code": code, "param": nil,
	}})
}
