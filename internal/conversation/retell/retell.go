// Package retell is the client of Retell's custom-LLM WebSocket protocol
// (https://docs.retellai.com/api-references/llm-websocket): a
// conversation.Session whose response engine is the organization's own
// server, written for Retell (its published Node and Python demos run
// unmodified). Switchboard plays Retell's part: it dials <url>/<call_id>
// when the call is answered, sends call_details, ping_pong, update_only,
// response_required and reminder_required, and takes the server's config,
// response, agent_interrupt, update_agent, tool call and metadata events.
//
// Failures end the session with a *conversation.Error whose reason is
// Retell's disconnection_reason: error_llm_websocket_open (the socket did
// not open), error_llm_websocket_lost_connection (it broke mid-call and
// could not be reopened), error_llm_websocket_runtime (the server closed
// it with a status other than 1000) and
// error_llm_websocket_corrupt_payload (a message outside the protocol).
//
// Response ids: the session passes every chunk's response_id through, an
// older request's too. A newer request supersedes older ones, and
// discarding their chunks is the conversation loop's job (it knows which
// request is current when the chunk is spoken, the session does not).
package retell

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/go-logr/logr"

	"github.com/switchboard-dev/switchboard/internal/conversation"
	"github.com/switchboard-dev/switchboard/internal/egress"
)

// Defaults of Config's zero values; the ping figures and the reconnects
// are Retell's.
const (
	DefaultConnectTimeout = 5 * time.Second
	DefaultPingInterval   = 2 * time.Second
	DefaultPingTimeout    = 5 * time.Second
	DefaultMaxReconnects  = 2
	// DefaultReadLimit bounds one message of the server: a response chunk
	// is a sentence, a tool call's arguments a few kB.
	DefaultReadLimit = 1 << 20
)

const (
	// chunkBuffer bounds the chunks waiting for the loop; beyond it the
	// reader stops reading the socket (back-pressure on the server).
	chunkBuffer = 64
	// writeTimeout bounds one message to the server; closeTimeout the
	// closing handshake.
	writeTimeout = 5 * time.Second
	closeTimeout = time.Second
	// holdQueue is how long requests wait on a new connection for the
	// server's first message (its config), so that call_details goes
	// first as Retell sends it.
	holdQueue = time.Second
)

// Config is one call's connection to the organization's server.
type Config struct {
	// URL is the agent's llmWebSocket url; the call id is appended as the
	// last path segment. wss (ws too with Policy.AllowInsecure).
	URL string
	// ConnectTimeout bounds the connection and upgrade, each reconnect's
	// too.
	ConnectTimeout time.Duration
	// Policy is the address guard the connection dials through.
	Policy egress.URLPolicy
	// Log is for reconnects and ignored events.
	Log logr.Logger
	// ReadLimit bounds one message of the server.
	ReadLimit int64
	// PingInterval, PingTimeout and MaxReconnects are Retell's
	// auto_reconnect figures (tests shorten them). MaxReconnects < 0 means
	// none.
	PingInterval, PingTimeout time.Duration
	MaxReconnects             int
}

func withDefaults(cfg Config) Config {
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.ReadLimit <= 0 {
		cfg.ReadLimit = DefaultReadLimit
	}
	if cfg.PingInterval <= 0 {
		cfg.PingInterval = DefaultPingInterval
	}
	if cfg.PingTimeout <= 0 {
		cfg.PingTimeout = DefaultPingTimeout
	}
	switch {
	case cfg.MaxReconnects == 0:
		cfg.MaxReconnects = DefaultMaxReconnects
	case cfg.MaxReconnects < 0:
		cfg.MaxReconnects = 0
	}
	return cfg
}

// Open connects to the server for the answered call. Its error is a
// *conversation.Error (error_llm_websocket_open) unless ctx ended; ctx
// bounds only the opening, Close ends the session.
func Open(ctx context.Context, cfg Config, call conversation.CallDetails) (conversation.Session, error) {
	cfg = withDefaults(cfg)
	target, err := callURL(ctx, cfg.Policy, cfg.URL, call.CallID)
	if err != nil {
		return nil, &conversation.Error{Reason: conversation.ReasonWebSocketOpen, Detail: err.Error()}
	}
	s := &session{
		cfg: cfg, call: call, target: target, client: guardedClient(cfg.Policy), log: cfg.Log,
		chunks:    make(chan conversation.Chunk, chunkBuffer),
		settings:  make(chan conversation.Settings, 1),
		wake:      make(chan struct{}, 1),
		done:      make(chan struct{}),
		started:   -1,
		completed: -1,
	}
	conn, err := s.dial(ctx)
	if err != nil {
		return nil, err
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	go s.run(conn)
	return s, nil
}

// callURL checks raw as stream URLs are checked and appends the call id
// with exactly one slash.
func callURL(ctx context.Context, p egress.URLPolicy, raw, callID string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", errors.New("llmWebSocket url: this is not a valid URL")
	}
	if callID == "" {
		return "", errors.New("the call has no id to append to the llmWebSocket url")
	}
	asHTTP := *u
	switch {
	case u.Scheme == "wss":
		asHTTP.Scheme = "https"
	case u.Scheme == "ws" && p.AllowInsecure:
		asHTTP.Scheme = "http"
	case u.Scheme == "ws":
		return "", fmt.Errorf("llmWebSocket url %s: ws:// is allowed only in development (--dev); use wss://", redacted(u))
	default:
		return "", fmt.Errorf("llmWebSocket url %s: the scheme must be wss", redacted(u))
	}
	if err := p.Check(ctx, asHTTP.String()); err != nil {
		var uerr *egress.URLError
		if errors.As(err, &uerr) {
			return "", fmt.Errorf("llmWebSocket url %s: %s", redacted(u), uerr.Reason)
		}
		return "", err
	}
	u.Path = strings.TrimRight(u.Path, "/") + "/" + callID
	u.RawPath = ""
	return u.String(), nil
}

// redacted is u without what may carry a secret: credentials and query.
func redacted(u *url.URL) string {
	r := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}
	return r.String()
}

// guardedClient dials through the address guard (trusted in-cluster
// hosts included, as for the other language-model clients), never
// through a proxy, over HTTP/1.1 (a WebSocket upgrade), following no
// redirect.
func guardedClient(p egress.URLPolicy) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:             nil,
			DialContext:       p.DialContext(&net.Dialer{}),
			TLSClientConfig:   &tls.Config{MinVersion: tls.VersionTLS12},
			ForceAttemptHTTP2: false,
			// A refused upgrade's connection is closed, not kept idle.
			DisableKeepAlives: true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// dial opens one connection; its error is error_llm_websocket_open.
func (s *session) dial(ctx context.Context) (*websocket.Conn, error) {
	dialCtx, cancel := context.WithTimeout(ctx, s.cfg.ConnectTimeout)
	defer cancel()
	conn, resp, err := websocket.Dial(dialCtx, s.target, &websocket.DialOptions{
		HTTPClient: s.client,
		HTTPHeader: http.Header{"User-Agent": {"switchboard-retell/1"}},
	})
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var detail string
		switch {
		case resp != nil:
			detail = fmt.Sprintf("the server answered the upgrade with HTTP %d", resp.StatusCode)
		case dialCtx.Err() != nil:
			detail = fmt.Sprintf("the server did not accept the connection within %s", s.cfg.ConnectTimeout)
		default:
			// The url.Error's own text would repeat the URL and its query.
			var uerr *url.Error
			if errors.As(err, &uerr) {
				err = uerr.Err
			}
			detail = "could not connect to the server: " + err.Error()
		}
		return nil, &conversation.Error{Reason: conversation.ReasonWebSocketOpen, Detail: detail}
	}
	conn.SetReadLimit(s.cfg.ReadLimit)
	return conn, nil
}

// session is one call's connection, reopened on a lost connection when
// the server asked for auto_reconnect. Goroutines: run (dials, writes,
// pings) and one reader per connection; Close waits for both.
type session struct {
	cfg    Config
	call   conversation.CallDetails
	target string
	client *http.Client
	log    logr.Logger

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when run returns, err set
	err    error

	chunks   chan conversation.Chunk
	settings chan conversation.Settings

	// Requests and updates waiting for the socket. Each carries the whole
	// transcript, so a newer one replaces what it supersedes: a request
	// drops everything queued, an update drops a queued update. At most a
	// request and an update wait; Request and Update never block.
	mu      sync.Mutex
	request *conversation.Request
	update  *update
	wake    chan struct{}

	// Run's: auto_reconnect as the server last said, and the last request
	// sent.
	autoReconnect bool
	sent          *conversation.Request

	// The current reader's, read by run between connections: the newest
	// response ids seen started and completed (-1: none), and whether the
	// begin message (response 0) was delivered.
	started, completed int
	beginSeen          bool

	// Shared by the reader and run.
	lastPong atomic.Int64 // unix nanoseconds
	blocked  atomic.Bool  // the reader waits for the loop to take a chunk
	newest   atomic.Int64 // the newest request's id, for tool chunks
}

type update struct {
	transcript []conversation.Message
	turn       string
}

func (s *session) Chunks() <-chan conversation.Chunk { return s.chunks }

func (s *session) Settings() <-chan conversation.Settings { return s.settings }

func (s *session) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// Close ends the session with a normal closure (1000) and waits for its
// goroutines. A server that answers neither the close frame nor the
// connection's end can hold it for the handshake's bound (5 s).
func (s *session) Close() error {
	s.cancel()
	<-s.done
	return nil
}

func (s *session) Request(req conversation.Request) {
	req.Transcript = append([]conversation.Message(nil), req.Transcript...)
	s.mu.Lock()
	s.request, s.update = &req, nil
	s.mu.Unlock()
	s.poke()
}

func (s *session) Update(transcript []conversation.Message, turn string) {
	u := &update{transcript: append([]conversation.Message(nil), transcript...), turn: turn}
	s.mu.Lock()
	s.update = u
	s.mu.Unlock()
	s.poke()
}

func (s *session) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// run serves connections until the session ends.
func (s *session) run(conn *websocket.Conn) {
	defer func() { // done first: Err is good once Chunks is closed
		close(s.done)
		close(s.chunks)
		close(s.settings)
	}()
	attempts := 0
	for {
		end := s.serve(conn, attempts > 0)
		if !end.retry {
			s.err = end.err
			return
		}
		conn, s.err = s.reconnect(&attempts, end.detail)
		if conn == nil {
			return
		}
	}
}

// reconnect dials again while attempts remain; nil and nil when the
// session was closed meanwhile.
func (s *session) reconnect(attempts *int, why string) (*websocket.Conn, error) {
	for *attempts < s.cfg.MaxReconnects {
		*attempts++
		s.log.Info("reconnecting to the Retell server", "why", why, "attempt", *attempts)
		conn, err := s.dial(s.ctx)
		if err == nil {
			return conn, nil
		}
		if s.ctx.Err() != nil {
			return nil, nil
		}
		why = err.Error()
	}
	return nil, &conversation.Error{Reason: conversation.ReasonWebSocketLost,
		Detail: fmt.Sprintf("%s (after %d reconnects)", why, *attempts)}
}

// resume prepares a reconnected session: a response the lost connection
// left half streamed ends there (a Complete chunk), and the newest
// request, if none of its chunks came, is asked again.
func (s *session) resume() {
	if s.started > s.completed {
		s.push(s.ctx, conversation.Chunk{ResponseID: s.started, Complete: true})
		s.completed = s.started
	}
	if s.sent == nil || s.sent.ResponseID <= s.started {
		return
	}
	s.mu.Lock()
	if s.request == nil {
		again := *s.sent
		s.request = &again
	}
	s.mu.Unlock()
}
