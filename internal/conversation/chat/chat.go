// Package chat is a conversation.Session over an OpenAI-compatible
// chat-completions endpoint (vLLM, Ollama, llama.cpp's server, a hosted
// API), the way Vapi's custom LLM is asked: every request sends the
// system prompt and the conversation so far, and the answer streams back
// (server-sent events) to be spoken as it comes.
//
// The session runs the model's tools itself: the built-in end_call,
// press_digit and transfer_call become the response's EndCall, Digits and
// TransferNumber (transfer_call's result is the loop's to write, once the
// transfer connected or failed), and the
// organization's custom functions are posted to their URLs as Retell
// posts them ({"name", "call", "args"}, signed like Switchboard's
// webhooks), their answers given back to the model, for at most
// MaxToolRounds rounds per response.
//
// Bounds: a response says at most MaxResponseChars characters (and the
// endpoint is asked for at most Config.MaxTokens tokens); a request sends
// at most the last MaxMessages messages of the transcript, so that a call
// of hours costs no more per turn than one of minutes; an endpoint's
// answer is read up to 4 MiB, a function's up to MaxFunctionAnswerChars
// characters.
package chat

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/conversation"
	"github.com/switchboard-dev/switchboard/internal/egress"
	"github.com/switchboard-dev/switchboard/internal/signing"
)

const (
	// MaxMessages bounds the transcript a request sends (the system
	// prompt comes on top): the last ones, the older forgotten.
	MaxMessages = 200
	// MaxResponseChars bounds what one response says; a model that goes
	// on is cut off there, and what it said is complete.
	MaxResponseChars = 4000
	// MaxToolRounds bounds the rounds of tool calls in one response; the
	// request after the last asks for an answer without tools.
	MaxToolRounds = 5
	// MaxFunctionAnswerChars bounds the part of a custom function's
	// answer the model is given; a longer one is cut and marked so.
	MaxFunctionAnswerChars = 15000
	// FunctionRetries is how many times a function is asked again after a
	// network error, a timeout or a 5xx answer (as Retell does).
	FunctionRetries = 2

	// DefaultFirstTokenTimeout and DefaultFunctionTimeout apply when the
	// Config leaves them zero (the Agent API's defaults).
	DefaultFirstTokenTimeout = 5 * time.Second
	DefaultFunctionTimeout   = 5 * time.Second

	// RemindPrompt is the user message that asks the model for a
	// reminder, as Retell's demos ask.
	RemindPrompt = "(The callee has not answered for a while; say a short reminder.)"

	// chunkBuffer bounds the chunks waiting for the conversation loop.
	chunkBuffer = 64
	// maxStreamBytes bounds an endpoint's answer, headers apart.
	maxStreamBytes = 4 << 20
)

// Config is an Agent's spec.conversation.llm with its secrets read and its
// prompts filled with the call's variables.
type Config struct {
	// URL is the API's base URL; requests go to URL + /chat/completions.
	URL   string
	Model string
	// APIKey is sent as the bearer token; none is sent when empty.
	APIKey string
	// Temperature nil: the endpoint's default.
	Temperature *float64
	// MaxTokens bounds one completion (0: the endpoint's default).
	MaxTokens int
	// FirstTokenTimeout bounds the wait for a completion's first token,
	// and any later silence of its stream.
	FirstTokenTimeout time.Duration
	SystemPrompt      string
	// BeginMessage is response 0; empty, the agent waits.
	BeginMessage string
	// BuiltIn are the built-in tools given to the model: end_call,
	// press_digit, transfer_call.
	BuiltIn   []string
	Functions []Function
	// Transfer are transfer_call's destinations, their {{name}}
	// placeholders filled: the model picks one by its description.
	Transfer []Destination
	// Policy guards the endpoint's and the functions' URLs, as webhook
	// URLs are guarded.
	Policy egress.URLPolicy
	// Transport carries the requests to the endpoint and the functions;
	// nil: egress.GuardedTransport(Policy).
	Transport http.RoundTripper
}

// Function is a custom function (the Agent's ConversationFunction) with
// its signing secret read.
type Function struct {
	Name, Description string
	// Parameters is the arguments' JSON Schema; nil: no arguments.
	Parameters json.RawMessage
	URL        string
	// SigningSecret (whsec_...) signs the requests; unsigned when empty.
	SigningSecret string
	// Timeout bounds one attempt (0: DefaultFunctionTimeout).
	Timeout time.Duration
}

// Destination is a number transfer_call may hand the callee to, and when
// (the Agent's TransferDestination).
type Destination struct {
	Number, Description string
}

// session is one call's conversation with the model. One goroutine (run)
// asks the model and is the only writer of chunks; Request hands it the
// newest request and cancels the one in flight.
type session struct {
	cfg      Config
	call     conversation.CallDetails
	client   openai.Client
	http     *http.Client
	tools    *toolbox
	firstTok time.Duration

	chunks chan conversation.Chunk
	wake   chan struct{}
	done   chan struct{}
	ctx    context.Context
	stop   context.CancelFunc

	mu       sync.Mutex
	latest   int
	pending  *conversation.Request
	inFlight context.CancelFunc
	err      error

	closeOnce sync.Once
}

var _ conversation.Session = (*session)(nil)

// Open starts a call's session: it checks the configuration (the URLs
// against the policy, the functions' schemas and secrets) and sends the
// begin message as response 0. ctx bounds the opening only; the session
// lasts until Close or a failure. Errors are *conversation.Error.
func Open(ctx context.Context, cfg Config, call conversation.CallDetails) (conversation.Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if reason := cfg.Policy.Refusal(cfg.URL); reason != "" {
		return nil, fault("the model's URL is refused: " + reason)
	}
	tools, err := newToolbox(cfg)
	if err != nil {
		return nil, fault(err.Error())
	}
	for _, f := range cfg.Functions {
		if reason := cfg.Policy.Refusal(f.URL); reason != "" {
			return nil, fault(fmt.Sprintf("function %s: the URL is refused: %s", f.Name, reason))
		}
		if f.SigningSecret != "" {
			if _, err := signing.ParseSecret(f.SigningSecret); err != nil {
				return nil, fault(fmt.Sprintf("function %s: %v", f.Name, err))
			}
		}
	}
	transport := cfg.Transport
	if transport == nil {
		transport = egress.GuardedTransport(cfg.Policy)
	}
	// Redirects are not followed: the policy checked where the request
	// goes, not where an answer points.
	hc := &http.Client{Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	s := &session{
		cfg: cfg, call: call, http: hc, tools: tools,
		firstTok: cfg.FirstTokenTimeout,
		client: openai.NewClient(option.WithBaseURL(cfg.URL), option.WithMaxRetries(0), option.WithAPIKey(cfg.APIKey),
			option.WithHTTPClient(hc), option.WithMiddleware(organizationsOwn(cfg.APIKey)),
			option.WithMiddleware(capBody(maxStreamBytes))),
		chunks: make(chan conversation.Chunk, chunkBuffer),
		wake:   make(chan struct{}, 1),
		done:   make(chan struct{}),
	}
	if s.firstTok <= 0 {
		s.firstTok = DefaultFirstTokenTimeout
	}
	s.ctx, s.stop = context.WithCancel(context.Background())
	s.chunks <- conversation.Chunk{ResponseID: 0, Content: cfg.BeginMessage, Complete: true}
	go s.run()
	return s, nil
}

// organizationsOwn sends the organization's endpoint its own key only:
// the client also reads OPENAI_API_KEY, OPENAI_ORG_ID and OPENAI_PROJECT_ID
// from the operator's environment, which are not the organization's to
// see (as package analysis does).
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

func fault(detail string) *conversation.Error {
	return &conversation.Error{Reason: conversation.ReasonLLM, Detail: detail}
}

// Chunks implements conversation.Session.
func (s *session) Chunks() <-chan conversation.Chunk { return s.chunks }

// Request implements conversation.Session: it keeps the request (and the
// transcript's last MaxMessages messages), cancels the response in flight
// and wakes the session. A request no newer than the last is ignored.
func (s *session) Request(req conversation.Request) {
	if n := len(req.Transcript); n > MaxMessages {
		req.Transcript = req.Transcript[n-MaxMessages:]
	}
	req.Transcript = append([]conversation.Message(nil), req.Transcript...)
	s.mu.Lock()
	if req.ResponseID <= s.latest || s.ctx.Err() != nil {
		s.mu.Unlock()
		return
	}
	s.latest, s.pending = req.ResponseID, &req
	if s.inFlight != nil {
		s.inFlight()
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Update implements conversation.Session: when the callee takes the turn
// (they interrupted the agent), the answer still streaming is cancelled,
// since the loop drops its words anyway; the model stops generating them.
func (s *session) Update(_ []conversation.Message, turn string) {
	if turn != "user_turn" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inFlight != nil {
		s.inFlight()
	}
}

// Settings implements conversation.Session: a model does not change the
// turn-taking.
func (s *session) Settings() <-chan conversation.Settings { return nil }

// Err implements conversation.Session.
func (s *session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close implements conversation.Session: it cancels the response in
// flight and returns once the session's goroutine has ended.
func (s *session) Close() error {
	s.closeOnce.Do(func() {
		s.stop()
		<-s.done
		s.http.CloseIdleConnections()
	})
	return nil
}

// run answers the requests, one at a time, until Close or a failure.
func (s *session) run() {
	defer close(s.done)
	defer close(s.chunks)
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.wake:
		}
		s.mu.Lock()
		req := s.pending
		s.pending = nil
		ctx, cancel := context.WithCancel(s.ctx)
		s.inFlight = cancel
		s.mu.Unlock()
		if req == nil {
			cancel()
			continue
		}
		err := s.respond(ctx, *req)
		superseded := ctx.Err() != nil
		cancel()
		if err != nil && !superseded {
			s.mu.Lock()
			s.err = err
			s.mu.Unlock()
			s.stop()
			return
		}
	}
}

// emit sends a chunk, unless the response was superseded or the session
// closed.
func (s *session) emit(ctx context.Context, c conversation.Chunk) error {
	select {
	case s.chunks <- c:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// The built-in tools this package runs.
const (
	toolEndCall      = switchboardv1.ToolEndCall
	toolPressDigit   = switchboardv1.ToolPressDigit
	toolTransferCall = switchboardv1.ToolTransferCall
)
