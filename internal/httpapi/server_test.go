package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-logr/logr"
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
	for header, want := range map[string]string{
		"Bearer abc":    "abc",
		"bearer  abc ":  "abc",
		"  Bearer abc":  "abc",
		"Basic abc":     "",
		"Bearer":        "",
		"Bearer ":       "",
		"":              "",
		"Bearerabc":     "",
		"Token abc def": "",
	} {
		got, ok := bearer(header)
		if got != want || ok != (want != "") {
			t.Errorf("bearer(%q) = %q, %v; want %q", header, got, ok, want)
		}
	}
}
