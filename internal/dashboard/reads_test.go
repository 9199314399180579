package dashboard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-logr/logr"

	"github.com/switchboard-dev/switchboard/internal/quota"
)

// The overview and the calls list count against the organization's reads
// in progress, which the REST API's lists share: beyond them, 429 with
// Retry-After, and the page's work is not done.
func TestReadsBeyondTheBoundAre429(t *testing.T) {
	pages, err := parsePages()
	if err != nil {
		t.Fatal(err)
	}
	reads := &quota.Reads{PerOrganization: 1}
	d := &dashboard{cfg: Config{Reads: reads, Log: logr.Discard()}, pages: pages}
	ran := false
	h := d.boundReads(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran = true }))
	serve := func() *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req.WithContext(context.WithValue(req.Context(), sessionKey{}, &session{Namespace: "acme"})))
		return rec
	}
	release, refused := reads.Begin("acme")
	if refused != nil {
		t.Fatal(refused)
	}
	if rec := serve(); rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" || ran {
		t.Fatalf("a page beyond the bound: %d, Retry-After %q, handler ran %v", rec.Code, rec.Header().Get("Retry-After"), ran)
	}
	release()
	if rec := serve(); rec.Code != http.StatusOK || !ran {
		t.Fatalf("once the read ended: %d, handler ran %v", rec.Code, ran)
	}
}
