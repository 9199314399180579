// Package retelltest stands in for an organization's server written for
// Retell's custom-LLM WebSocket protocol, in tests. It is written from
// Retell's documentation of the protocol
// (https://docs.retellai.com/api-references/llm-websocket, and
// https://docs.retellai.com/get-started/debug-guide for the close codes)
// and behaves as Retell's demo servers do
// (github.com/RetellAI/retell-custom-llm-python-demo, app/server.py;
// github.com/RetellAI/retell-custom-llm-node-demo, src/server.ts): it
// opens in either demo's order, streams answers, pushes the server's
// other events when told, and fails in the ways a real server fails. It
// records every message it receives.
package retelltest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// Order is when the server sends its config and begin message.
type Order int

const (
	// OrderPython sends config and the begin message on accept (the
	// Python demo).
	OrderPython Order = iota
	// OrderNode sends config on accept and the begin message when
	// call_details arrives (the Node demo; it needs Config.CallDetails).
	OrderNode
)

// Fault is how the server misbehaves.
type Fault int

const (
	NoFault Fault = iota
	// RefuseUpgrade answers the upgrade with HTTP 403.
	RefuseUpgrade
	// NoPong never answers ping_pong.
	NoPong
	// The faults below act on a response_required or reminder_required
	// instead of answering it.
	//
	// Close1011 closes with status 1011 (as the Python demo does on an
	// error).
	Close1011
	// Close1000 closes normally.
	Close1000
	// CorruptBinary sends a binary frame.
	CorruptBinary
	// CorruptText sends a text frame that is not JSON.
	CorruptText
	// DropTCP drops the connection without a close frame.
	DropTCP
	// StaleAnswer first answers with the previous response_id, then
	// answers properly.
	StaleAnswer
)

// Config is the server's config event.
type Config struct {
	AutoReconnect           bool `json:"auto_reconnect"`
	CallDetails             bool `json:"call_details"`
	TranscriptWithToolCalls bool `json:"transcript_with_tool_calls"`
}

// Options script the server.
type Options struct {
	Order Order
	// Config is sent on accept unless NoConfig, after ConfigDelay when set
	// (and then after the Python order's begin message).
	Config      Config
	NoConfig    bool
	ConfigDelay time.Duration
	// Begin is the begin message's content ("": wait for the user).
	Begin string
	// Answer is the events answering a request; nil: DefaultAnswer.
	Answer func(r Received) []Event
	// Fault is how the server misbehaves, on its first FaultConns
	// connections (0: all).
	Fault      Fault
	FaultConns int
}

// Event is a message of the server; the helpers below build them and
// With adds a field.
type Event map[string]any

// With returns e with key set to v.
func (e Event) With(key string, v any) Event {
	e[key] = v
	return e
}

// Chunk is a response chunk.
func Chunk(id int, content string, complete bool) Event {
	return Event{"response_type": "response", "response_id": id, "content": content, "content_complete": complete}
}

// Interrupt is an agent_interrupt chunk.
func Interrupt(id int, content string, complete bool) Event {
	return Event{"response_type": "agent_interrupt", "interrupt_id": id, "content": content,
		"content_complete": complete, "no_interruption_allowed": true}
}

// UpdateAgent is an update_agent event.
func UpdateAgent(agentConfig map[string]any) Event {
	return Event{"response_type": "update_agent", "agent_config": agentConfig}
}

// ToolInvocation and ToolResult are the tool call bookkeeping events.
func ToolInvocation(id, name, arguments string) Event {
	return Event{"response_type": "tool_call_invocation", "tool_call_id": id, "name": name, "arguments": arguments}
}

func ToolResult(id, content string, successful bool) Event {
	return Event{"response_type": "tool_call_result", "tool_call_id": id, "content": content, "successful": successful}
}

// DefaultAnswer streams three content chunks echoing the callee's last
// words, then an empty content_complete chunk, as the demos end a stream.
func DefaultAnswer(r Received) []Event {
	id := *r.ResponseID
	last := ""
	for _, u := range r.Transcript {
		if u.Role == "user" {
			last = u.Content
		}
	}
	return []Event{Chunk(id, "I heard", false), Chunk(id, " you say: ", false),
		Chunk(id, last, false), Chunk(id, "", true)}
}

// Utterance is a transcript object.
type Utterance struct {
	Role    string            `json:"role"`
	Content string            `json:"content"`
	Words   []json.RawMessage `json:"words"`
}

// Received is a message the server received.
type Received struct {
	// Conn numbers the connection it came on, from 1.
	Conn            int    `json:"-"`
	InteractionType string `json:"interaction_type"`
	Timestamp       int64  `json:"timestamp"`
	// ResponseID is set on response_required and reminder_required.
	ResponseID              *int             `json:"response_id"`
	Transcript              []Utterance      `json:"transcript"`
	TranscriptWithToolCalls []map[string]any `json:"transcript_with_tool_calls"`
	TurnTaking              string           `json:"turntaking"`
	Call                    map[string]any   `json:"call"`
	Raw                     json.RawMessage  `json:"-"`
}

// Server is a running stand-in server.
type Server struct {
	// URL is what an agent's llmWebSocket url would be
	// (ws://127.0.0.1:port/llm-websocket).
	URL string

	opts Options
	http *httptest.Server
	wg   sync.WaitGroup

	mu       sync.Mutex
	paths    []string
	conns    []*websocket.Conn
	closes   []websocket.StatusCode
	received []Received
}

// New starts a server, closed when the test ends.
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	s := &Server{opts: opts}
	s.http = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = "ws" + strings.TrimPrefix(s.http.URL, "http") + "/llm-websocket"
	t.Cleanup(s.Close)
	return s
}

// Close drops every connection and stops the server.
func (s *Server) Close() {
	s.mu.Lock()
	conns := s.conns
	s.mu.Unlock()
	for _, c := range conns {
		_ = c.CloseNow()
	}
	s.http.Close()
	s.wg.Wait()
}

// Paths are the request paths dialed, one per connection attempt.
func (s *Server) Paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.paths...)
}

// Connections counts the connections accepted.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Closes are the status codes the client closed connections with, in
// the order they closed (-1: no close frame).
func (s *Server) Closes() []websocket.StatusCode {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]websocket.StatusCode(nil), s.closes...)
}

// Received is every message received so far, in order.
func (s *Server) Received() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.received...)
}

// Count counts the messages received of an interaction_type.
func (s *Server) Count(interactionType string) int {
	n := 0
	for _, r := range s.Received() {
		if r.InteractionType == interactionType {
			n++
		}
	}
	return n
}

// Send sends e on the newest connection.
func (s *Server) Send(ctx context.Context, e Event) error {
	s.mu.Lock()
	c := s.conns[len(s.conns)-1]
	s.mu.Unlock()
	return send(ctx, c, e)
}

// Drop drops the newest connection without a close frame.
func (s *Server) Drop() {
	s.mu.Lock()
	c := s.conns[len(s.conns)-1]
	s.mu.Unlock()
	_ = c.CloseNow()
}

func send(ctx context.Context, c *websocket.Conn, e Event) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return c.Write(ctx, websocket.MessageText, b)
}

// faulty says whether connection n has fault f.
func (s *Server) faulty(n int, f Fault) bool {
	return s.opts.Fault == f && (s.opts.FaultConns == 0 || n <= s.opts.FaultConns)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.paths = append(s.paths, r.URL.Path)
	n := len(s.paths)
	s.mu.Unlock()
	if s.faulty(n, RefuseUpgrade) {
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer func() { _ = c.CloseNow() }()
	s.mu.Lock()
	s.conns = append(s.conns, c)
	n = len(s.conns)
	s.mu.Unlock()
	s.wg.Add(1)
	defer s.wg.Done()
	ctx := r.Context()
	if err := s.open(ctx, c); err != nil {
		return
	}
	for {
		typ, data, err := c.Read(ctx)
		if err != nil {
			s.mu.Lock()
			s.closes = append(s.closes, websocket.CloseStatus(err))
			s.mu.Unlock()
			return
		}
		if typ != websocket.MessageText {
			return
		}
		var m Received
		if json.Unmarshal(data, &m) != nil {
			return
		}
		m.Conn, m.Raw = n, append(json.RawMessage(nil), data...)
		s.mu.Lock()
		s.received = append(s.received, m)
		s.mu.Unlock()
		if !s.answer(ctx, c, n, m) {
			return
		}
	}
}

// open sends what the server sends on accept.
func (s *Server) open(ctx context.Context, c *websocket.Conn) error {
	// The Python demo's config carries a response_id (here inside the
	// config object too): clients must tolerate extra keys.
	config := Event{"response_type": "config", "response_id": 1, "config": map[string]any{
		"auto_reconnect": s.opts.Config.AutoReconnect, "call_details": s.opts.Config.CallDetails,
		"transcript_with_tool_calls": s.opts.Config.TranscriptWithToolCalls, "response_id": 1,
	}}
	if !s.opts.NoConfig && s.opts.ConfigDelay == 0 {
		if err := send(ctx, c, config); err != nil {
			return err
		}
	}
	if s.opts.Order == OrderPython {
		if err := send(ctx, c, Chunk(0, s.opts.Begin, true)); err != nil {
			return err
		}
	}
	if !s.opts.NoConfig && s.opts.ConfigDelay > 0 {
		t := time.AfterFunc(s.opts.ConfigDelay, func() { _ = send(ctx, c, config) })
		context.AfterFunc(ctx, func() { t.Stop() })
	}
	return nil
}

// answer reacts to one message; false ends the connection.
func (s *Server) answer(ctx context.Context, c *websocket.Conn, n int, m Received) bool {
	switch m.InteractionType {
	case "ping_pong":
		if s.faulty(n, NoPong) {
			return true
		}
		return send(ctx, c, Event{"response_type": "ping_pong", "timestamp": time.Now().UnixMilli()}) == nil
	case "call_details":
		if s.opts.Order == OrderNode {
			return send(ctx, c, Chunk(0, s.opts.Begin, true)) == nil
		}
	case "response_required", "reminder_required":
		if m.ResponseID == nil {
			return false
		}
		return s.respond(ctx, c, n, m)
	}
	return true
}

func (s *Server) respond(ctx context.Context, c *websocket.Conn, n int, m Received) bool {
	switch {
	case s.faulty(n, Close1011):
		_ = c.Close(websocket.StatusInternalError, "the server failed")
		return false
	case s.faulty(n, Close1000):
		_ = c.Close(websocket.StatusNormalClosure, "goodbye")
		return false
	case s.faulty(n, CorruptBinary):
		return c.Write(ctx, websocket.MessageBinary, []byte{0xde, 0xad}) == nil
	case s.faulty(n, CorruptText):
		return c.Write(ctx, websocket.MessageText, []byte("this is not JSON")) == nil
	case s.faulty(n, DropTCP):
		_ = c.CloseNow()
		return false
	case s.faulty(n, StaleAnswer):
		if send(ctx, c, Chunk(*m.ResponseID-1, "stale", true)) != nil {
			return false
		}
	}
	answer := s.opts.Answer
	if answer == nil {
		answer = DefaultAnswer
	}
	for _, e := range answer(m) {
		if send(ctx, c, e) != nil {
			return false
		}
	}
	return true
}
