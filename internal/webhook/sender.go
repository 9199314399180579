package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboard-dev/switchboard/internal/egress"
	"github.com/switchboard-dev/switchboard/internal/signing"
)

const (
	defaultTimeout   = 10 * time.Second
	defaultUserAgent = "Switchboard-Webhooks/1.0"
	// maxResponseRead bounds what is read of a response: enough to drain
	// typical bodies so the connection can be reused, not enough to let a
	// receiver make us buffer much.
	maxResponseRead = 64 << 10
	// maxResponseKept is what the delivery log keeps of a response.
	maxResponseKept = 256
)

// SenderConfig configures a Sender.
type SenderConfig struct {
	Policy    egress.URLPolicy
	Timeout   time.Duration // per attempt; 0 means 10 s
	TLSConfig *tls.Config   // nil means system roots
	UserAgent string        // "" means "Switchboard-Webhooks/1.0"
}

// Sender posts signed messages to receivers. It is safe for concurrent use
// and keeps connections alive between messages.
type Sender struct {
	policy    egress.URLPolicy
	timeout   time.Duration
	userAgent string
	client    *http.Client
}

// Message is one delivery attempt.
type Message struct {
	URL        string
	DeliveryID string
	Event      string
	Timestamp  time.Time // signed; zero means now
	Body       []byte    // sent and signed as is
	Secrets    []string  // signing secrets; two during a rotation
}

// Result is the outcome of one attempt, as the delivery log records it.
type Result struct {
	StatusCode int // 0 when no response was received
	// Err says why no response was received: DNS, TLS, a refused address,
	// "timed out after 10s", ... It is empty whenever StatusCode is set.
	Err string
	// Duration is the time to the response headers plus reading the
	// (limited) body.
	Duration time.Duration
	// RetryAfter is the receiver's Retry-After (seconds or an HTTP date) on
	// a 429 or 503, capped at 24 hours; 0 otherwise.
	RetryAfter time.Duration
	// Response is the start of the response body, at most 256 bytes of
	// trimmed, valid UTF-8.
	Response string
}

// Succeeded reports a 2xx answer.
func (r Result) Succeeded() bool {
	return r.StatusCode >= 200 && r.StatusCode <= 299
}

// errAttemptTimedOut marks our own per-attempt deadline, to tell it from
// the caller's context ending.
var errAttemptTimedOut = errors.New("webhook attempt timed out")

// NewSender builds a Sender with one shared transport.
func NewSender(cfg SenderConfig) *Sender {
	if cfg.Timeout <= 0 {
		cfg.Timeout = defaultTimeout
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = defaultUserAgent
	}
	return &Sender{
		policy:    cfg.Policy,
		timeout:   cfg.Timeout,
		userAgent: cfg.UserAgent,
		client: &http.Client{
			Transport: egress.Transport(cfg.Policy, cfg.TLSConfig),
			// A redirect is the receiver's answer, recorded as a failure:
			// following it would post the event somewhere the customer did
			// not configure.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// Send makes one attempt to deliver m. It never returns an error: every
// outcome is a Result for the delivery log.
func (s *Sender) Send(ctx context.Context, m Message) Result {
	// Duration counts from where the timeout does, so that an attempt cut
	// off by it never reads shorter than the timeout it reports.
	start := time.Now()
	ctx, cancel := context.WithTimeoutCause(ctx, s.timeout, errAttemptTimedOut)
	defer cancel()
	req, err := s.newRequest(ctx, m)
	if err != nil {
		return Result{Err: err.Error()}
	}
	resp, err := s.do(ctx, req)
	if err != nil {
		return Result{Err: s.describe(ctx, err), Duration: time.Since(start)}
	}
	defer func() { _ = resp.Body.Close() }()
	// A body cut short (by the deadline, say) still leaves the status code,
	// which is the receiver's answer; the excerpt is only for humans.
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseRead))
	return Result{
		StatusCode: resp.StatusCode,
		Duration:   time.Since(start),
		RetryAfter: retryAfter(resp, time.Now()),
		Response:   excerpt(body),
	}
}

// do is client.Do, except that a response racing the deadline counts as a
// timeout: by then the connection is being closed, so the receiver saw a
// disconnect and may have dropped the event (a Go handler that gives up on
// a canceled request even answers 200). Retrying risks a duplicate, which
// receivers handle by webhook-id; recording a success risks a lost event.
func (s *Sender) do(ctx context.Context, req *http.Request) (*http.Response, error) {
	resp, err := s.client.Do(req)
	if err == nil && ctx.Err() != nil {
		_ = resp.Body.Close()
		return nil, ctx.Err()
	}
	return resp, err
}

func (s *Sender) newRequest(ctx context.Context, m Message) (*http.Request, error) {
	if reason := s.policy.Refusal(m.URL); reason != "" {
		return nil, errors.New(reason)
	}
	ts := m.Timestamp
	if ts.IsZero() {
		ts = time.Now()
	}
	signature, err := signing.Sign(m.Secrets, m.DeliveryID, ts, m.Body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL, bytes.NewReader(m.Body))
	if err != nil {
		return nil, err
	}
	setHeaders(req.Header, m, signature, strconv.FormatInt(ts.Unix(), 10), s.userAgent)
	return req, nil
}

// setHeaders sets each value under its Standard Webhooks name, for the
// verification libraries, and its X-Service- name, for receivers written
// against the older headers.
func setHeaders(h http.Header, m Message, signature, unix, userAgent string) {
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", userAgent)
	h.Set("X-Service-Event", m.Event)
	for _, pair := range [][3]string{
		{"webhook-signature", "X-Service-Signature", signature},
		{"webhook-id", "X-Service-Delivery-Id", m.DeliveryID},
		{"webhook-timestamp", "X-Service-Timestamp", unix},
	} {
		h.Set(pair[0], pair[2])
		h.Set(pair[1], pair[2])
	}
}

// describe turns a failed request into a short reason for the delivery log.
func (s *Sender) describe(attempt context.Context, err error) string {
	var refused *egress.RefusedAddrError
	switch {
	case errors.As(err, &refused):
		return refused.Error()
	case errors.Is(context.Cause(attempt), errAttemptTimedOut):
		return fmt.Sprintf("timed out after %s", s.timeout)
	case attempt.Err() != nil:
		return "canceled: " + context.Cause(attempt).Error()
	}
	// The URL the url.Error repeats is already in the delivery log.
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return urlErr.Err.Error()
	}
	return err.Error()
}

// retryAfter reads Retry-After on the statuses where it asks to slow down.
func retryAfter(resp *http.Response, now time.Time) time.Duration {
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
		return 0
	}
	value := strings.TrimSpace(resp.Header.Get("Retry-After"))
	if secs, err := strconv.ParseUint(value, 10, 64); err == nil {
		return time.Duration(min(secs, uint64(maxRetryAfter/time.Second))) * time.Second
	}
	at, err := http.ParseTime(value)
	if err != nil {
		return 0
	}
	// Measured from the receiver's own Date when it sends one, so a skewed
	// clock on either side does not stretch or cancel the wait.
	if date, err := http.ParseTime(resp.Header.Get("Date")); err == nil {
		now = date
	}
	return min(max(at.Sub(now), 0), maxRetryAfter)
}

// excerpt keeps the start of a response body as trimmed, valid UTF-8 of at
// most maxResponseKept bytes, cut on a character boundary.
func excerpt(body []byte) string {
	s := strings.TrimSpace(strings.ToValidUTF8(string(body), ""))
	if len(s) <= maxResponseKept {
		return s
	}
	cut := maxResponseKept
	for !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.TrimSpace(s[:cut])
}
