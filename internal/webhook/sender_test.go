package webhook_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/switchboard-dev/switchboard/internal/webhook"
)

// receiver is a test HTTPS endpoint that checks every request the way a
// customer's receiver would, with the reference library.
type receiver struct {
	*httptest.Server
	t        *testing.T
	secrets  []string
	requests atomic.Int32
	conns    atomic.Int32 // new connections
	respond  http.HandlerFunc
}

func startReceiver(t *testing.T, secrets []string, respond http.HandlerFunc) *receiver {
	t.Helper()
	r := &receiver{t: t, secrets: secrets, respond: respond}
	r.Server = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	// Handshakes the tests make fail on purpose would log noise.
	r.Config.ErrorLog = log.New(io.Discard, "", 0)
	r.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			r.conns.Add(1)
		}
	}
	r.StartTLS()
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	r.requests.Add(1)
	body, err := io.ReadAll(req.Body)
	if err != nil {
		r.t.Errorf("receiver: read body: %v", err)
	}
	r.checkRequest(req, body)
	r.respond(w, req)
}

func (r *receiver) checkRequest(req *http.Request, body []byte) {
	h := req.Header
	if req.Method != http.MethodPost || h.Get("Content-Type") != "application/json" ||
		h.Get("User-Agent") != "Switchboard-Webhooks/1.0" || h.Get("X-Service-Event") != webhook.EventCallEnded {
		r.t.Errorf("receiver: %s with headers %v", req.Method, h)
	}
	if _, ok := h["Authorization"]; ok {
		r.t.Errorf("receiver: got an Authorization header")
	}
	for xName, swName := range map[string]string{
		"X-Service-Signature":   "webhook-signature",
		"X-Service-Delivery-Id": "webhook-id",
		"X-Service-Timestamp":   "webhook-timestamp",
	} {
		if h.Get(xName) == "" || h.Get(xName) != h.Get(swName) {
			r.t.Errorf("receiver: %s = %q but %s = %q", xName, h.Get(xName), swName, h.Get(swName))
		}
	}
	for i, secret := range r.secrets {
		wh, err := standardwebhooks.NewWebhook(secret)
		if err == nil {
			err = wh.Verify(body, h)
		}
		if err != nil {
			r.t.Errorf("receiver: secret %d of %d does not verify: %v", i+1, len(r.secrets), err)
		}
	}
}

// senderFor trusts r's certificate. Test servers listen on loopback, so
// the policy must allow it.
func senderFor(r *receiver, policy webhook.URLPolicy, timeout time.Duration) *webhook.Sender {
	roots := x509.NewCertPool()
	roots.AddCert(r.Certificate())
	return webhook.NewSender(webhook.SenderConfig{Policy: policy, Timeout: timeout,
		TLSConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}})
}

var insecure = webhook.URLPolicy{AllowInsecure: true}

func message(url string, secrets []string) webhook.Message {
	return webhook.Message{URL: url, DeliveryID: "dlv_0123", Event: webhook.EventCallEnded,
		Timestamp: time.Now(), Body: []byte(`{"event":"call.ended","call":{"call_id":"call_1"}}`), Secrets: secrets}
}

func respondWith(status int, header map[string]string, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func TestSendAnswers(t *testing.T) {
	retryDate := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	for _, tc := range []struct {
		name          string
		respond       http.HandlerFunc
		wantStatus    int
		wantOK        bool
		minRetryAfter time.Duration
		maxRetryAfter time.Duration
		wantResponse  string
	}{
		{"200", respondWith(200, nil, "  thanks\n"), 200, true, 0, 0, "thanks"},
		{"204", respondWith(204, nil, ""), 204, true, 0, 0, ""},
		{"500", respondWith(500, map[string]string{"Retry-After": "7"}, "boom"), 500, false, 0, 0, "boom"},
		{"302 not followed", respondWith(302, map[string]string{"Location": "/elsewhere"}, ""), 302, false, 0, 0, ""},
		{"410", respondWith(410, nil, "gone"), 410, false, 0, 0, "gone"},
		{"429 seconds", respondWith(429, map[string]string{"Retry-After": "7"}, ""), 429, false, 7 * time.Second, 7 * time.Second, ""},
		{"429 huge", respondWith(429, map[string]string{"Retry-After": "99999999999999"}, ""), 429, false, 24 * time.Hour, 24 * time.Hour, ""},
		{"429 garbage", respondWith(429, map[string]string{"Retry-After": "soon"}, ""), 429, false, 0, 0, ""},
		{"503 date", respondWith(503, map[string]string{"Retry-After": retryDate}, ""), 503, false, 85 * time.Second, 91 * time.Second, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			secrets := newSecrets(t, 1)
			r := startReceiver(t, secrets, tc.respond)
			res := senderFor(r, insecure, 5*time.Second).Send(context.Background(), message(r.URL+"/hook", secrets))
			if res.StatusCode != tc.wantStatus || res.Succeeded() != tc.wantOK || res.Err != "" ||
				res.Response != tc.wantResponse || res.Duration <= 0 {
				t.Fatalf("got %+v", res)
			}
			if res.RetryAfter < tc.minRetryAfter || res.RetryAfter > tc.maxRetryAfter {
				t.Fatalf("RetryAfter = %s; want %s to %s", res.RetryAfter, tc.minRetryAfter, tc.maxRetryAfter)
			}
			if n := r.requests.Load(); n != 1 {
				t.Fatalf("receiver got %d requests; want 1 (redirects are not followed)", n)
			}
		})
	}
}

func TestSendTwoSecretsVerifyEach(t *testing.T) {
	secrets := newSecrets(t, 2)
	// The receiver verifies with each secret on its own.
	r := startReceiver(t, secrets, respondWith(200, nil, ""))
	if res := senderFor(r, insecure, 0).Send(context.Background(), message(r.URL, secrets)); !res.Succeeded() {
		t.Fatalf("got %+v", res)
	}
}

func TestSendReusesConnections(t *testing.T) {
	secrets := newSecrets(t, 1)
	r := startReceiver(t, secrets, respondWith(200, nil, strings.Repeat("x", 10_000)))
	s := senderFor(r, insecure, 0)
	for range 3 {
		if res := s.Send(context.Background(), message(r.URL, secrets)); !res.Succeeded() {
			t.Fatalf("got %+v", res)
		}
	}
	if n := r.conns.Load(); n != 1 {
		t.Fatalf("3 sends opened %d connections; want 1", n)
	}
}

func TestSendResponseExcerpt(t *testing.T) {
	secrets := newSecrets(t, 1)
	// 300 two-byte characters: 256 bytes falls on a character boundary only
	// by luck, so the excerpt must cut before a split one. Plus an invalid
	// byte and far more than 64 KiB.
	body := "\n\t" + strings.Repeat("é", 300) + "\xff" + strings.Repeat("z", 200_000)
	r := startReceiver(t, secrets, respondWith(400, nil, body))
	res := senderFor(r, insecure, 0).Send(context.Background(), message(r.URL, secrets))
	if res.StatusCode != 400 || len(res.Response) > 256 || len(res.Response) < 250 ||
		!utf8.ValidString(res.Response) || !strings.HasPrefix(res.Response, "é") {
		t.Fatalf("got %d %q (%d bytes)", res.StatusCode, res.Response, len(res.Response))
	}
}

func TestSendTimesOut(t *testing.T) {
	secrets := newSecrets(t, 1)
	release := make(chan struct{})
	r := startReceiver(t, secrets, func(_ http.ResponseWriter, req *http.Request) {
		select {
		case <-req.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) }) // before r.Close, which waits for handlers
	res := senderFor(r, insecure, 300*time.Millisecond).Send(context.Background(), message(r.URL, secrets))
	if res.StatusCode != 0 || res.Err != "timed out after 300ms" {
		t.Fatalf("got %+v", res)
	}
	if res.Duration < 300*time.Millisecond || res.Duration > 3*time.Second {
		t.Fatalf("Duration = %s", res.Duration)
	}
}

func TestSendCallerCanceled(t *testing.T) {
	secrets := newSecrets(t, 1)
	release := make(chan struct{})
	r := startReceiver(t, secrets, func(_ http.ResponseWriter, req *http.Request) {
		select {
		case <-req.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	res := senderFor(r, insecure, 5*time.Second).Send(ctx, message(r.URL, secrets))
	if res.StatusCode != 0 || !strings.HasPrefix(res.Err, "canceled") {
		t.Fatalf("got %+v", res)
	}
}

func TestSendConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	res := webhook.NewSender(webhook.SenderConfig{Policy: insecure}).
		Send(context.Background(), message("https://"+addr+"/hook", newSecrets(t, 1)))
	if res.StatusCode != 0 || !strings.Contains(res.Err, "connection refused") {
		t.Fatalf("got %+v", res)
	}
}

func TestSendRefusesLoopbackAtConnect(t *testing.T) {
	secrets := newSecrets(t, 1)
	r := startReceiver(t, secrets, respondWith(200, nil, ""))
	res := senderFor(r, webhook.URLPolicy{}, 0).Send(context.Background(), message(r.URL, secrets))
	if res.StatusCode != 0 || !strings.Contains(res.Err, "refused to connect to 127.0.0.1: a loopback address") {
		t.Fatalf("got %+v", res)
	}
	if n := r.requests.Load(); n != 0 {
		t.Fatalf("receiver got %d requests", n)
	}
}

// The connect-time guard does not rely on Check: a name Check saw as public
// but that resolves to loopback when dialed (DNS rebinding) is refused.
func TestSendGuardIsIndependentOfCheck(t *testing.T) {
	secrets := newSecrets(t, 1)
	r := startReceiver(t, secrets, respondWith(200, nil, ""))
	_, port, err := net.SplitHostPort(r.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	url := "https://localhost:" + port + "/hook"
	policy := webhook.URLPolicy{Resolver: fakeResolver{"localhost": {"93.184.216.34"}}}
	if err := policy.Check(context.Background(), url); err != nil {
		t.Fatalf("Check(%s) = %v; the fake resolver should make it pass", url, err)
	}
	res := senderFor(r, policy, 0).Send(context.Background(), message(url, secrets))
	if res.StatusCode != 0 || !strings.Contains(res.Err, "refused to connect") || !strings.Contains(res.Err, "a loopback address") {
		t.Fatalf("got %+v", res)
	}
	if n := r.requests.Load(); n != 0 {
		t.Fatalf("receiver got %d requests", n)
	}
}

func TestSendHTTPOnlyWhenInsecure(t *testing.T) {
	secrets := newSecrets(t, 1)
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)

	res := webhook.NewSender(webhook.SenderConfig{}).Send(context.Background(), message(srv.URL, secrets))
	if res.StatusCode != 0 || res.Err != "webhook URLs must use https" || requests.Load() != 0 {
		t.Fatalf("secure policy: got %+v after %d requests", res, requests.Load())
	}
	res = webhook.NewSender(webhook.SenderConfig{Policy: insecure}).Send(context.Background(), message(srv.URL, secrets))
	if res.StatusCode != http.StatusNoContent || requests.Load() != 1 {
		t.Fatalf("AllowInsecure: got %+v", res)
	}
}

func TestSendRefusesCredentialsInURL(t *testing.T) {
	secrets := newSecrets(t, 1)
	r := startReceiver(t, secrets, respondWith(200, nil, ""))
	url := strings.Replace(r.URL, "https://", "https://user:hunter2@", 1)
	res := senderFor(r, insecure, 0).Send(context.Background(), message(url, secrets))
	if res.StatusCode != 0 || !strings.Contains(res.Err, "credentials") || strings.Contains(res.Err, "hunter2") {
		t.Fatalf("got %+v", res)
	}
	if n := r.requests.Load(); n != 0 {
		t.Fatalf("receiver got %d requests", n)
	}
}

func TestSendBadSecretNeverLeaks(t *testing.T) {
	secrets := newSecrets(t, 1)
	r := startReceiver(t, secrets, respondWith(200, nil, ""))
	bad := "whsec_c2hvcnQtYnV0LXZhbGlk" // valid base64, too short
	res := senderFor(r, insecure, 0).Send(context.Background(), message(r.URL, []string{secrets[0], bad}))
	if res.StatusCode != 0 || res.Err == "" || strings.Contains(res.Err, "c2hvcnQt") ||
		strings.Contains(res.Err, strings.TrimPrefix(secrets[0], "whsec_")) {
		t.Fatalf("got %+v", res)
	}
	if n := r.requests.Load(); n != 0 {
		t.Fatalf("receiver got %d requests", n)
	}
}

func TestSendTLSFailure(t *testing.T) {
	secrets := newSecrets(t, 1)
	r := startReceiver(t, secrets, respondWith(200, nil, ""))
	// System roots do not trust the test server.
	res := webhook.NewSender(webhook.SenderConfig{Policy: insecure}).Send(context.Background(), message(r.URL, secrets))
	if res.StatusCode != 0 || !strings.Contains(res.Err, "certificate") {
		t.Fatalf("got %+v", res)
	}
}

func TestSucceeded(t *testing.T) {
	for code, want := range map[int]bool{0: false, 199: false, 200: true, 202: true, 299: true, 300: false, 404: false} {
		if got := (webhook.Result{StatusCode: code}).Succeeded(); got != want {
			t.Errorf("Succeeded() for %d = %v", code, got)
		}
	}
}

// The addresses a review found accepted are refused when connecting too,
// whatever Check said when the endpoint was saved (the DNS may have changed
// since): the guard stops the dial before any packet leaves.
func TestSendRefusesSpecialPurposeAtConnect(t *testing.T) {
	for url, want := range map[string]string{
		"https://168.63.129.16/hook":         "refused to connect to 168.63.129.16: the cloud metadata address",
		"https://[64:ff9b:1::a00:1]/hook":    "refused to connect to 64:ff9b:1::a00:1: a local-use NAT64 address",
		"https://[fec0::1]/hook":             "refused to connect to fec0::1: a site-local address",
		"https://[2002:7f00:1::]/hook":       "refused to connect to 2002:7f00:1::: a 6to4 address for 127.0.0.1, a loopback address",
		"https://[::127.0.0.1]/hook":         "refused to connect to ::7f00:1: an IPv4-compatible address for 127.0.0.1, a loopback address",
		"https://[64:ff9b::a9fe:a9fe]/hook":  "refused to connect to 64:ff9b::a9fe:a9fe: a NAT64 address for 169.254.169.254, the cloud metadata address",
		"https://[2001:0:4136:e378::1]/hook": "refused to connect to 2001:0:4136:e378::1: a Teredo address",
	} {
		res := webhook.NewSender(webhook.SenderConfig{Policy: webhook.URLPolicy{}, Timeout: 2 * time.Second}).
			Send(context.Background(), message(url, newSecrets(t, 1)))
		if res.StatusCode != 0 || !strings.Contains(res.Err, want) {
			t.Errorf("Send(%s) = %+v; want an error containing %q", url, res, want)
		}
	}
}
