package dashboard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/calls"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/quota"
	"github.com/switchboard-dev/switchboard/internal/services"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
	"github.com/switchboard-dev/switchboard/internal/webhook/endpoints"
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
	d := &dashboard{cfg: Config{Services: services.Services{Reads: reads}, Log: logr.Discard()}, pages: pages}
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

// noCallObjects is a store that fails the test when a call object is read.
type noCallObjects struct {
	history.Store
	t *testing.T
}

func (s noCallObjects) ListCalls(context.Context, string, history.CallQuery) ([]switchboardv1.Call, error) {
	s.t.Error("the overview read call objects from the store")
	return nil, nil
}

// The overview's figures are counted by the store and the cache: it reads
// no call object, however many the day holds.
func TestOverviewCountsWithoutReadingCalls(t *testing.T) {
	store, err := history.Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	var live []client.Object
	for i := range 40 { // ten seconds, every twentieth failed, the rest answered
		c := testsupport.BenchCall("acme", i)
		if err := store.SaveCall(t.Context(), c); err != nil {
			t.Fatal(err)
		}
		if i >= 30 { // still in the cluster too
			live = append(live, c)
		}
	}
	queued := testsupport.BenchCall("acme", 40)
	queued.Status = switchboardv1.CallStatus{CallID: queued.Status.CallID, Phase: switchboardv1.CallQueued}
	cache := testsupport.FakeCache(t, append(live, queued)...)
	pages, err := parsePages()
	if err != nil {
		t.Fatal(err)
	}
	now := func() time.Time { return time.Date(2025, 1, 1, 1, 0, 0, 0, time.UTC) }
	d := &dashboard{pages: pages, cfg: Config{Services: services.Services{
		Calls:     &calls.Book{Live: cache, History: noCallObjects{Store: store, t: t}},
		Quota:     &quota.Admission{Cache: cache, Now: now},
		Endpoints: &endpoints.Service{DeliveryLog: store}}, Now: now, Log: logr.Discard()}}
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	rec := httptest.NewRecorder()
	d.overview(rec, req.WithContext(context.WithValue(req.Context(), sessionKey{}, &session{Namespace: "acme"})))
	body := rec.Body.String()
	// 41 calls: 38 answered, 2 failed, 1 queued; 38 of 40 finished answered.
	if rec.Code != http.StatusOK || !strings.Contains(body, `id="fig-calls">41<`) || !strings.Contains(body, `id="fig-answer-rate">95%<`) {
		t.Fatalf("overview %d:\n%s", rec.Code, body)
	}
}
