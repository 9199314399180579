package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// A 422 never echoes a URL's credentials: not the password of its
// userinfo, not a query parameter named like a secret, in `input` or
// `msg`, whichever request it refuses (a webhook endpoint's URL too long,
// a list's limit that is not a number; a call's variable:
// TestCallValidationDoesNotEchoCredentials).
func TestValidationErrorsDoNotEchoCredentials(t *testing.T) {
	h := keyedRouter(100)
	secretURL := "https://hookuser:hunter2-pass@hooks.example.com/in?token=tok-secret-77&x=1#"
	for _, tc := range []struct{ method, path, body string }{
		{http.MethodPost, "/v1/webhook-endpoints", `{"url":"` + secretURL + strings.Repeat("a", 2100) + `"}`},
		{http.MethodGet, "/v1/calls?limit=" + url.QueryEscape(secretURL), ""},
	} {
		r := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
		r.RemoteAddr = "203.0.113.7:40000"
		r.Header.Set("Authorization", "Bearer "+validKey)
		r.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		body := rec.Body.String()
		if rec.Code != http.StatusUnprocessableEntity {
			t.Fatalf("%s %s: %d %s, want 422", tc.method, tc.path, rec.Code, body)
		}
		for _, secret := range []string{"hunter2-pass", "tok-secret-77"} {
			if strings.Contains(body, secret) {
				t.Errorf("%s %s: the 422 echoes %q: %s", tc.method, tc.path, secret, body)
			}
		}
		if !strings.Contains(body, "https://REDACTED@hooks.example.com/in?token=REDACTED&x=1") {
			t.Errorf("%s %s: the 422 does not echo the URL with its credentials redacted: %s", tc.method, tc.path, body)
		}
	}
}
