package tts

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/internal/egress"
)

// DefaultProbeTimeout bounds a Probe when the caller's ctx does not.
const DefaultProbeTimeout = 3 * time.Second

// ProbeError is why a voice server is unreachable: one sentence naming
// the failure, without the URL's path or query (nor any credentials).
type ProbeError struct{ msg string }

func (e *ProbeError) Error() string { return e.msg }

// Probe checks that the voice server at baseURL answers, without making
// it speak: GET <url>/models, which OpenAI, Kokoro-FastAPI and Speaches
// serve, without an API key. Any HTTP answer proves the server reachable
// (401 from a hosted API, 404 or 405 from one without the route, a
// redirect, which is not followed) but a gateway's 502, 503 or 504, which
// says the server behind it is not. A URL the policy refuses, an address
// the guard refuses, no connection, or no answer within timeout (zero:
// DefaultProbeTimeout) is a *ProbeError. transport nil: a guarded one.
func Probe(ctx context.Context, policy egress.URLPolicy, transport http.RoundTripper, baseURL string, timeout time.Duration) error {
	if reason := policy.Refusal(baseURL); reason != "" {
		return &ProbeError{msg: "its URL is refused: " + strings.Replace(reason, "webhook URLs", "voice server URLs", 1)}
	}
	ctx, cancel := context.WithTimeout(ctx, cmpDuration(timeout, DefaultProbeTimeout))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(baseURL, "/")+"/models", http.NoBody)
	if err != nil {
		return &ProbeError{msg: "its URL is not valid"}
	}
	req.Header.Set("Accept", "application/json")
	if transport == nil {
		guarded := egress.GuardedTransport(policy)
		defer guarded.CloseIdleConnections()
		transport = guarded
	}
	client := &http.Client{Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return probeFailure(ctx, err)
	}
	_ = resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return &ProbeError{msg: fmt.Sprintf("it answered GET /models with %s", resp.Status)}
	}
	return nil
}

// probeFailure words a failed request without its URL (url.Error names
// it, query and all).
func probeFailure(ctx context.Context, err error) error {
	var refused *egress.RefusedAddrError
	var uerr *url.Error
	var nerr net.Error
	switch {
	case errors.As(err, &refused):
		return &ProbeError{msg: "the connection was refused by the address policy: " + refused.Error()}
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.As(err, &nerr) && nerr.Timeout():
		return &ProbeError{msg: "it did not answer in time"}
	case errors.As(err, &uerr):
		return &ProbeError{msg: "it could not be reached: " + uerr.Err.Error()}
	}
	return &ProbeError{msg: "it could not be reached: " + err.Error()}
}
