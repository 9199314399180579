package stream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/coder/websocket"

	"github.com/switchboard-dev/switchboard/internal/egress"
	"github.com/switchboard-dev/switchboard/internal/signing"
)

// Disconnection reasons of a call whose stream failed.
const (
	// ReasonConnectFailed: the bot refused the upgrade, did not answer it
	// within Config.ConnectTimeout, or its URL is refused.
	ReasonConnectFailed = "stream_connect_failed"
	// ReasonDisconnected: the connection dropped mid-call without a
	// normal close, or the bot broke the protocol (an oversize message).
	ReasonDisconnected = "stream_disconnected"
)

// Defaults of Config's zero values.
const (
	DefaultConnectTimeout = 5 * time.Second
	// DefaultReadLimit bounds one message from the bot. A second of audio
	// is 8000 bytes, 10.7 kB in base64: 1 MiB is over a minute's worth.
	DefaultReadLimit = 1 << 20
	// DefaultMaxQueued bounds the bot's audio queued to play (see
	// Session for the back-pressure policy).
	DefaultMaxQueued = 30 * time.Second
	// DefaultPrebuffer is the least playout delay of the jitter buffer:
	// an utterance's first audio waits at least this long before it
	// plays, longer when the bot's audio arrives with more jitter (see
	// player).
	DefaultPrebuffer = 30 * time.Millisecond
)

// ErrBotHangup is a session's end when the bot closed the WebSocket
// normally (status 1000 or 1001): the bot hung up (agent_hangup).
var ErrBotHangup = errors.New("the bot closed the stream")

// Failure is a session's end, or a Dial's error, when the stream failed.
type Failure struct {
	// Reason is ReasonConnectFailed or ReasonDisconnected.
	Reason string
	// Detail says what happened, for the call's events and logs.
	Detail string
}

func (f *Failure) Error() string { return f.Reason + ": " + f.Detail }

// Config is one call's stream.
type Config struct {
	// URL is the bot's wss:// URL (ws:// only when Policy.AllowInsecure).
	URL string
	// Token, when set, is sent as "Authorization: Bearer <Token>".
	Token string
	// SigningSecret, when set (whsec_...), signs the upgrade request in
	// the Standard Webhooks scheme: webhook-id is the call id,
	// webhook-signature the HMAC of "<call id>.<timestamp>." (empty body).
	SigningSecret string
	// Namespace (the organization) and CallID identify the call; From and
	// To are its numbers, sent in start.customParameters as from_number
	// and to_number.
	Namespace, CallID, From, To string
	// Parameters are the agent's customParameters, placeholders filled.
	Parameters map[string]string
	// Policy is the SSRF guard webhook deliveries go through.
	Policy egress.URLPolicy
	// Zero values take the defaults above.
	ConnectTimeout time.Duration
	ReadLimit      int64
	MaxQueued      time.Duration
	Prebuffer      time.Duration
	// OnMark, when set, is called with each mark's name as it is echoed
	// (for the transcript). It runs on the playing goroutine: be quick.
	OnMark func(name string)
}

// CheckURL says why raw cannot be a stream URL, or nil: wss (ws too with
// AllowInsecure), then the webhook URL guard (no credentials, public
// addresses only unless AllowInsecure).
func CheckURL(ctx context.Context, p egress.URLPolicy, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("stream URL: this is not a valid URL")
	}
	var asHTTP string
	switch {
	case u.Scheme == "wss":
		asHTTP = "https"
	case u.Scheme == "ws" && p.AllowInsecure:
		asHTTP = "http"
	case u.Scheme == "ws":
		return fmt.Errorf("stream URL %s: ws:// is allowed only in development (--dev); use wss://", u.Redacted())
	default:
		return fmt.Errorf("stream URL %s: the scheme must be wss", u.Redacted())
	}
	u.Scheme = asHTTP
	if err := p.Check(ctx, u.String()); err != nil {
		var uerr *egress.URLError
		if errors.As(err, &uerr) {
			return fmt.Errorf("stream URL %s: %s", raw, uerr.Reason)
		}
		return err
	}
	return nil
}

// Dial opens the bot's WebSocket and sends connected and start. Its error
// is a *Failure (ReasonConnectFailed) unless ctx ended.
func Dial(ctx context.Context, cfg Config) (*Session, error) {
	cfg = withDefaults(cfg)
	if err := CheckURL(ctx, cfg.Policy, cfg.URL); err != nil {
		return nil, &Failure{Reason: ReasonConnectFailed, Detail: err.Error()}
	}
	header, err := upgradeHeader(cfg, time.Now())
	if err != nil {
		return nil, &Failure{Reason: ReasonConnectFailed, Detail: err.Error()}
	}
	dialCtx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	conn, resp, err := websocket.Dial(dialCtx, cfg.URL, &websocket.DialOptions{
		HTTPClient: guardedClient(cfg.Policy),
		HTTPHeader: header,
	})
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &Failure{Reason: ReasonConnectFailed, Detail: dialDetail(dialCtx, resp, cfg.ConnectTimeout, err)}
	}
	conn.SetReadLimit(cfg.ReadLimit)
	return newSession(conn, cfg), nil
}

func withDefaults(cfg Config) Config {
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.ReadLimit <= 0 {
		cfg.ReadLimit = DefaultReadLimit
	}
	if cfg.MaxQueued <= 0 {
		cfg.MaxQueued = DefaultMaxQueued
	}
	if cfg.Prebuffer <= 0 {
		cfg.Prebuffer = DefaultPrebuffer
	}
	return cfg
}

// upgradeHeader is the bearer token, the signature and the call id.
func upgradeHeader(cfg Config, now time.Time) (http.Header, error) {
	h := http.Header{}
	h.Set("User-Agent", "switchboard-stream/1")
	h.Set("X-Switchboard-Call-ID", cfg.CallID)
	if cfg.Token != "" {
		h.Set("Authorization", "Bearer "+cfg.Token)
	}
	if cfg.SigningSecret != "" {
		sig, err := signing.Sign([]string{cfg.SigningSecret}, cfg.CallID, now, nil)
		if err != nil {
			return nil, fmt.Errorf("stream signing secret: %w", err)
		}
		h.Set("webhook-id", cfg.CallID)
		h.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
		h.Set("webhook-signature", sig)
	}
	return h, nil
}

// guardedClient dials through the webhook address guard (checked on the
// address actually dialed, after DNS) and never through a proxy.
func guardedClient(p egress.URLPolicy) *http.Client {
	dialer := &net.Dialer{Control: p.DialControl()}
	return &http.Client{
		Transport: &http.Transport{Proxy: nil, DialContext: dialer.DialContext, ForceAttemptHTTP2: false},
		// A redirect would take the call's audio somewhere not configured.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func dialDetail(dialCtx context.Context, resp *http.Response, timeout time.Duration, err error) string {
	switch {
	case resp != nil:
		return fmt.Sprintf("the bot answered the upgrade with HTTP %d", resp.StatusCode)
	case dialCtx.Err() != nil:
		return fmt.Sprintf("the bot did not accept the connection within %s", timeout)
	default:
		return "could not connect to the bot: " + err.Error()
	}
}
