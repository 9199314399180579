package speech

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/internal/egress"
)

// ServerName is a server recognizer's name in the transcript.
const ServerName = "server"

// Protocols a recognizer server speaks (an Agent's spec.speech.protocol).
const (
	ProtocolOpenAI = "openai"
	ProtocolVosk   = "vosk"
)

// DefaultServerTimeout bounds a server's answer for one utterance when the
// agent sets none.
const DefaultServerTimeout = 2 * time.Second

// ServerOptions are an Agent's spec.speech, resolved: the API key read from
// its Secret.
type ServerOptions struct {
	// URL: for ProtocolOpenAI the API's base URL (https://asr.example.com/v1),
	// for ProtocolVosk the WebSocket URL (wss://asr.example.com).
	URL      string
	Protocol string
	// APIKey is sent as a bearer token when set. It never appears in an
	// error or the transcript.
	APIKey string
	// Model is the model an OpenAI-compatible server runs (default
	// "whisper-1"; whisper.cpp's server ignores it).
	Model string
	// Timeout bounds the server's answer for one utterance
	// (DefaultServerTimeout when 0); past it the fallback answers.
	Timeout time.Duration
	// Policy is the webhooks' URL policy: the URL must be https (wss) and
	// public unless Policy.AllowInsecure, and every connection's address
	// is checked when dialed.
	Policy egress.URLPolicy
	// OnPartial, when set, receives a streaming (Vosk) server's partial
	// results as they arrive.
	OnPartial func(text string)
}

// NewServer returns the recognizer for an agent with spec.speech: the
// server, with fallback (the embedded recognizer; may be nil) hearing any
// utterance the server fails or answers too slowly, the Result's
// Recognizer then saying "embedded (server failed: <why>)". It checks the
// URL against the policy (resolving its host): build one per agent
// configuration and reuse it; it is safe for concurrent calls.
func NewServer(ctx context.Context, opts ServerOptions, fallback Recognizer) (Recognizer, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultServerTimeout
	}
	if opts.Protocol != ProtocolOpenAI && opts.Protocol != ProtocolVosk {
		return nil, fmt.Errorf("speech: unknown server protocol %q (want openai or vosk)", opts.Protocol)
	}
	httpURL, err := checkServerURL(ctx, opts)
	if err != nil {
		return nil, err
	}
	client := serverHTTPClient(opts.Policy)
	var server Recognizer = newVoskServer(opts, client)
	if opts.Protocol == ProtocolOpenAI {
		server = newOpenAIServer(httpURL, opts, client)
	}
	return &withFallback{server: server, fallback: fallback, timeout: opts.Timeout}, nil
}

// checkServerURL applies the webhook URL policy to the server's URL (a
// WebSocket URL as the http URL it starts as) and returns the http form.
func checkServerURL(ctx context.Context, opts ServerOptions) (string, error) {
	u := opts.URL
	wantWS := opts.Protocol == ProtocolVosk
	switch {
	case wantWS && strings.HasPrefix(u, "wss://"):
		u = "https://" + strings.TrimPrefix(u, "wss://")
	case wantWS && strings.HasPrefix(u, "ws://"):
		u = "http://" + strings.TrimPrefix(u, "ws://")
	case wantWS:
		return "", fmt.Errorf("speech: a vosk server's url must start with wss:// (or ws:// in development), not %q", opts.URL)
	case !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://"):
		return "", fmt.Errorf("speech: an openai server's url must start with https://, not %q", opts.URL)
	}
	if err := opts.Policy.Check(ctx, u); err != nil {
		var ue *egress.URLError
		if errors.As(err, &ue) {
			return "", fmt.Errorf("speech: server url %s: %s", ue.URL, ue.Reason)
		}
		return "", err
	}
	return u, nil
}

// serverHTTPClient dials through the address guard and never through a
// proxy (which would connect past it), and follows no redirect (which would
// send the audio and the API key somewhere the agent does not name).
func serverHTTPClient(p egress.URLPolicy) *http.Client {
	dialer := &net.Dialer{KeepAlive: 30 * time.Second}
	return &http.Client{
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         p.DialContext(dialer),
			ForceAttemptHTTP2:   true,
			MaxIdleConnsPerHost: 16,
			IdleConnTimeout:     90 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// serverError is a server's failure, with a short reason for the
// transcript ("timeout", "HTTP 503", "malformed answer") that carries no
// URL, header or body.
type serverError struct {
	reason string
	err    error
}

func (e *serverError) Error() string { return "speech server: " + e.reason + ": " + e.err.Error() }
func (e *serverError) Unwrap() error { return e.err }

// errServerTimeout is the cause of the per-utterance deadline.
var errServerTimeout = errors.New("the server did not answer in time")

// failure classifies err for the transcript.
func failure(ctx context.Context, err error) *serverError {
	var se *serverError
	switch {
	case errors.As(err, &se):
		return se
	case errors.Is(context.Cause(ctx), errServerTimeout):
		return &serverError{reason: "timeout", err: err}
	case strings.Contains(err.Error(), "refused to connect"):
		return &serverError{reason: "address refused", err: err}
	}
	return &serverError{reason: "unreachable", err: err}
}

// withFallback asks the server first, with the per-utterance timeout, and
// the fallback when the server fails.
type withFallback struct {
	server, fallback Recognizer
	timeout          time.Duration
}

func (f *withFallback) Name() string { return f.server.Name() }

func (f *withFallback) Recognize(ctx context.Context, pcm []int16, hints []string) (Result, error) {
	sctx, cancel := context.WithTimeoutCause(ctx, f.timeout, errServerTimeout)
	defer cancel()
	res, err := f.server.Recognize(sctx, pcm, hints)
	if err == nil {
		return res, nil
	}
	if ctx.Err() != nil { // the call ended, not the server
		return Result{}, ctx.Err()
	}
	cause := failure(sctx, err)
	if f.fallback == nil {
		return Result{}, cause
	}
	res, ferr := f.fallback.Recognize(ctx, pcm, hints)
	if ferr != nil {
		return Result{}, fmt.Errorf("%w; the fallback failed too: %w", cause, ferr)
	}
	res.Recognizer = fmt.Sprintf("%s (server failed: %s)", f.fallback.Name(), cause.reason)
	return res, nil
}
