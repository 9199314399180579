package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/switchboard-dev/switchboard/internal/apikeys"
	"github.com/switchboard-dev/switchboard/internal/authlimit"
)

func TestPanicBecomesJSON500(t *testing.T) {
	h := recoverJSON(logr.Discard())(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic("boom")
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/calls/call_1", nil))
	if rec.Code != http.StatusInternalServerError || rec.Header().Get("Content-Type") != "application/json" ||
		rec.Body.String() != "{\"detail\":\"Internal Server Error\"}\n" {
		t.Fatalf("got %d %q %q", rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
	}
}

func TestBearer(t *testing.T) {
	for header, want := range map[string]struct{ key, problem string }{
		"Bearer abc":    {"abc", ""},
		"bearer  abc ":  {"abc", ""},
		"  Bearer abc":  {"abc", ""},
		"Basic abc":     {"", malformedHeader},
		"Bearer":        {"", missingKey},
		"Bearer ":       {"", missingKey},
		"":              {"", missingKey},
		"   ":           {"", missingKey},
		"Bearerabc":     {"", malformedHeader},
		"Token abc def": {"", malformedHeader},
		"sk_live_abc":   {"", malformedHeader},
	} {
		key, problem := bearer(header)
		if key != want.key || problem != want.problem {
			t.Errorf("bearer(%q) = %q, %q; want %q, %q", header, key, problem, want.key, want.problem)
		}
	}
}

// A request whose Authorization header is there but does not carry a key
// as "Bearer <API key>" is told what is wrong with the header, not that
// its key is missing: still a 401 with a string detail.
func TestAuthenticateSaysWhatIsWrongWithTheHeader(t *testing.T) {
	h := authenticate(apikeys.NewIndex(), authlimit.New(authlimit.Defaults, nil), time.Now)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		t.Error("an unauthenticated request got through")
	}))
	for _, tc := range []struct{ authorization, detail string }{
		{"", `{"detail":"Missing API key: send the header Authorization: Bearer <API key>."}`},
		{"Bearer ", `{"detail":"Missing API key: send the header Authorization: Bearer <API key>."}`},
		{"sk_live_0123456789abcdef", `{"detail":"The Authorization header is not of the form Bearer <API key>."}`},
		{"Basic dXNlcjpwYXNz", `{"detail":"The Authorization header is not of the form Bearer <API key>."}`},
		{"Bearer sk_live_0123456789abcdef", `{"detail":"Invalid API key."}`},
	} {
		req := httptest.NewRequest("GET", "/v1/calls/call_1", nil)
		if tc.authorization != "" {
			req.Header.Set("Authorization", tc.authorization)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusUnauthorized || strings.TrimSpace(rec.Body.String()) != tc.detail ||
			!strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), "Bearer ") {
			t.Errorf("Authorization %q: got %d %s (WWW-Authenticate %q); want 401 %s",
				tc.authorization, rec.Code, rec.Body, rec.Header().Get("WWW-Authenticate"), tc.detail)
		}
	}
}
