package dashboard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/apikeys"
	"github.com/switchboard-dev/switchboard/internal/authlimit"
	"github.com/switchboard-dev/switchboard/internal/calls"
	"github.com/switchboard-dev/switchboard/internal/quota"
	"github.com/switchboard-dev/switchboard/internal/recording"
	"github.com/switchboard-dev/switchboard/internal/services"
	"github.com/switchboard-dev/switchboard/internal/webhook"
)

// Outside development the session cookie is Secure too.
func TestSessionCookieIsSecureOutsideDev(t *testing.T) {
	h := newTestHandler(t, Config{})
	rec := signInRecorder(t, h, testKey)
	var session string
	for _, c := range rec.Result().Header.Values("Set-Cookie") {
		if strings.HasPrefix(c, sessionCookie+"=") {
			session = c
		}
	}
	if rec.Code != http.StatusSeeOther || !strings.Contains(session, "; Secure") || !strings.Contains(session, "HttpOnly") {
		t.Fatalf("sign-in = %d, session cookie %q", rec.Code, session)
	}
}

// One key holds at most MaxSessionsPerKey sessions: signing in once more
// ends its oldest, and no other key's.
func TestSessionsPerKeyAreCapped(t *testing.T) {
	h := newTestHandler(t, Config{})
	var cookies []*http.Cookie
	for range MaxSessionsPerKey + 1 {
		cookies = append(cookies, sessionOf(t, signInRecorder(t, h, testKey)))
	}
	for i, c := range cookies {
		// A form without its CSRF token: 403 in a live session, 401 in
		// an ended one; either way nothing else happens.
		req := httptest.NewRequest(http.MethodPost, "/sign-out", nil)
		req.AddCookie(c)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if signedOut := rec.Code == http.StatusUnauthorized; signedOut != (i == 0) {
			t.Errorf("session %d of %d: %d; want only the first one ended", i+1, len(cookies), rec.Code)
		}
	}
	if n := len(h.sessions.byID); n != MaxSessionsPerKey {
		t.Errorf("%d sessions held, want %d", n, MaxSessionsPerKey)
	}
}

// Expired sessions are dropped on a timer, with no sign-in to trigger it.
func TestExpiredSessionsAreSweptOnATimer(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s := newSessions(time.Hour, clock)
	for i := range 3 {
		s.open("acme", [32]byte{byte(i)})
	}
	mu.Lock()
	now = now.Add(time.Hour)
	mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.sweepEvery(ctx, time.Millisecond)
	deadline := time.Now().Add(5 * time.Second)
	for held(s) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d expired sessions still held after 5 s", held(s))
		}
		time.Sleep(time.Millisecond)
	}
	if len(s.byKey) != 0 {
		t.Fatalf("the per-key lists still hold %d keys", len(s.byKey))
	}
}

func held(s *sessions) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byID)
}

// testKey is the API key of newTestHandler's organization, acme.
const testKey = "sk_live_internal_test_key_0123456789abcdef"

func newTestHandler(t *testing.T, cfg Config) *Handler {
	t.Helper()
	cfg.Keys = apikeys.NewIndex()
	cfg.Keys.Upsert(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "acme", Name: "key"},
		Type: switchboardv1.APIKeySecretType, Data: map[string][]byte{switchboardv1.APIKeySecretKey: []byte(testKey)}})
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// signInRecorder posts the sign-in form with key, as a browser that has
// just loaded it.
func signInRecorder(t *testing.T, h http.Handler, key string) *httptest.ResponseRecorder {
	t.Helper()
	return signInFrom(t, h, key, "192.0.2.1:1234")
}

// signInFrom is signInRecorder from the client address addr.
func signInFrom(t *testing.T, h http.Handler, key, addr string) *httptest.ResponseRecorder {
	t.Helper()
	page := httptest.NewRecorder()
	h.ServeHTTP(page, httptest.NewRequest(http.MethodGet, "/sign-in", nil))
	token := regexp.MustCompile(`name="csrf_token" value="([0-9a-f]+)"`).FindStringSubmatch(page.Body.String())[1]
	form := url.Values{"csrf_token": {token}, "api_key": {key}}
	req := httptest.NewRequest(http.MethodPost, "/sign-in", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.RemoteAddr = addr
	for _, c := range page.Result().Cookies() {
		req.AddCookie(c)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// Wrong keys at sign-in from one address are answered 401 up to the
// burst, then 429 with Retry-After; the valid key signs in all the same,
// from that address (another client behind the same ingress) and others.
func TestSignInFailuresAreThrottled(t *testing.T) {
	h := newTestHandler(t, Config{Services: services.Services{AuthFailures: authlimit.New(authlimit.Options{Burst: 3, Rate: 0.1}, nil)}})
	wrong := "sk_live_wrong_0123456789abcdef0123456789"
	for i := range 3 {
		if rec := signInFrom(t, h, wrong, "203.0.113.7:5000"); rec.Code != http.StatusUnauthorized {
			t.Fatalf("wrong key %d: %d, want 401", i+1, rec.Code)
		}
	}
	rec := signInFrom(t, h, wrong, "203.0.113.7:5001")
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" ||
		!strings.Contains(rec.Body.String(), "Too many failed sign-ins") {
		t.Fatalf("from the throttled address: %d, Retry-After %q; want 429 with Retry-After and why",
			rec.Code, rec.Header().Get("Retry-After"))
	}
	for _, addr := range []string{"203.0.113.7:5002", "198.51.100.1:5000"} {
		if rec := signInFrom(t, h, testKey, addr); rec.Code != http.StatusSeeOther {
			t.Fatalf("the valid key from %s: %d, want 303 (signed in)", addr, rec.Code)
		}
	}
}

func sessionOf(t *testing.T, rec *httptest.ResponseRecorder) *http.Cookie {
	t.Helper()
	for _, c := range rec.Result().Cookies() {
		if c.Name == sessionCookie && c.Value != "" {
			return c
		}
	}
	t.Fatalf("sign-in = %d without a session cookie", rec.Code)
	return nil
}

// A test event's result reads as what to do about it.
func TestTestInterpretation(t *testing.T) {
	tests := []struct {
		res  webhook.Result
		want string
	}{
		{webhook.Result{StatusCode: 200}, "Delivered"},
		{webhook.Result{StatusCode: 401}, "did not accept the signature"},
		{webhook.Result{StatusCode: 403}, "did not accept the signature"},
		{webhook.Result{StatusCode: 404}, "path is wrong"},
		{webhook.Result{StatusCode: 503}, "an error on its side"},
		{webhook.Result{Err: "timed out after 10s"}, "did not answer in time"},
		{webhook.Result{Err: "connection refused"}, "could not be reached: connection refused"},
	}
	for _, tt := range tests {
		if got := testInterpretation(tt.res); !strings.Contains(got, tt.want) {
			t.Errorf("%+v reads %q, want it to say %q", tt.res, got, tt.want)
		}
	}
}

// A form's way back leads only to a page of the dashboard: the forms
// that a prefix check let through (a path cleaned into "/\host/", which
// browsers read as another host) go to the fallback page instead.
func TestDashboardPathRefusesOtherHosts(t *testing.T) {
	accepted := map[string]string{
		"/dashboard/calls/call_1":    "/dashboard/calls/call_1",
		"/dashboard/endpoints/ep_1":  "/dashboard/endpoints/ep_1",
		"/dashboard/":                "/dashboard/",
		"/dashboard/calls/a%20b":     "/dashboard/calls/a%20b",
		"/dashboard/calls/call_1%2F": "/dashboard/calls/call_1%2F",
	}
	for raw, want := range accepted {
		if got, ok := dashboardPath(raw); !ok || got != want {
			t.Errorf("dashboardPath(%q) = %q, %v; want %q", raw, got, ok, want)
		}
	}
	for _, raw := range []string{
		`/dashboard/../\evil.example/`, `/dashboard/..\evil.example/`, `/dashboard/\\evil.example`,
		"/dashboard/../evil", "/dashboard/./calls", "/dashboard//evil.example", "//evil.example/dashboard/",
		"/dashboard/%2e%2e/%5cevil.example/", "/dashboard/%2E%2E%2F%5Cevil.example", "/dashboard/%5c%5cevil.example",
		"/dashboard/..%2f..%2fevil", "%2f%2fevil.example/dashboard/", "/%2fevil.example/dashboard/",
		"https://evil.example/dashboard/", "https:/dashboard/x", "//dashboard/", "/\\evil.example/dashboard/",
		"/dashboard", "/dashboardx/", "dashboard/calls", "", "/dashboard/x?next=//evil", "/dashboard/x#frag",
		"/dashboard/\tevil", "/dashboard/\nevil",
	} {
		if got, ok := dashboardPath(raw); ok {
			t.Errorf("dashboardPath(%q) = %q, accepted; want it refused", raw, got)
		}
	}
}

// Pages load audio only from where recordings are stored, and no <base>
// element can move their relative links elsewhere.
func TestContentSecurityPolicy(t *testing.T) {
	local, err := recording.NewLocal(recording.LocalConfig{Dir: t.TempDir(), BaseURL: "https://voice.example:8443",
		SigningKey: []byte(strings.Repeat("k", recording.MinSigningKeyLen))})
	if err != nil {
		t.Fatal(err)
	}
	for store, media := range map[recording.Store]string{
		nil:   "media-src 'self';",
		local: "media-src 'self' https://voice.example:8443;",
	} {
		h := newTestHandler(t, Config{Services: services.Services{Recordings: store}})
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/sign-in", nil))
		csp := rec.Header().Get("Content-Security-Policy")
		if !strings.Contains(csp, media) || !strings.Contains(csp, "base-uri 'none'") {
			t.Errorf("Content-Security-Policy %q, want %q and base-uri 'none'", csp, media)
		}
	}
}

// A waiting group's opening time reads in its zone, named, when it has
// one zone; else in UTC as every page shows times.
func TestOpensText(t *testing.T) {
	for _, tc := range []struct {
		at    string
		zones []string
		want  string
	}{
		{"2026-11-27T13:00:00.000Z", []string{"America/New_York"}, "2026-11-27 08:00:00 America/New_York"},
		{"2026-11-27T13:00:00.000Z", []string{"America/Chicago", "America/Denver"}, "2026-11-27 13:00:00 UTC"},
		{"2026-11-27T13:00:00.000Z", []string{"Not/AZone"}, "2026-11-27 13:00:00 UTC"},
		{"", nil, none},
	} {
		if got := opensText(tc.at, tc.zones); got != tc.want {
			t.Errorf("opensText(%q, %v) = %q, want %q", tc.at, tc.zones, got, tc.want)
		}
	}
}

// fullGate is a placement gate with no room.
type fullGate struct{}

func (fullGate) Enter(context.Context, string) (func(), bool) { return nil, false }

// The place-a-call form places through the REST API's placer and its
// placement gate: with the gate full, the form is answered 503 with
// Retry-After and nothing is placed (the placer has no client to create
// with: a placement past the gate would fail the test).
func TestPlacingFromTheFormWaitsForTheGate(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{switchboardv1.AddToScheme, corev1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	cache := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "acme"}}).Build()
	h := newTestHandler(t, Config{Cache: cache, Services: services.Services{Placer: &calls.Placer{Quota: &quota.Admission{Cache: cache, Now: time.Now}, Gate: fullGate{}}}})
	session := sessionOf(t, signInRecorder(t, h, testKey))
	form := url.Values{"csrf_token": {h.sessions.get(session.Value).CSRF}, "agent_id": {"6f1c7a8e-0000-4000-8000-000000000001"},
		"to_number": {"+14155550142"}}
	req := httptest.NewRequest(http.MethodPost, "/calls", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(session)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "1" ||
		!strings.Contains(rec.Body.String(), "nothing was placed") {
		t.Fatalf("with the gate full: %d, Retry-After %q; want 503, Retry-After 1 and why:\n%s",
			rec.Code, rec.Header().Get("Retry-After"), rec.Body.String())
	}
}
