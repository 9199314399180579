package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/switchboard-dev/switchboard/internal/apikeys"
	"github.com/switchboard-dev/switchboard/internal/calls"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/quota"
	"github.com/switchboard-dev/switchboard/internal/services"
	"github.com/switchboard-dev/switchboard/internal/testsupport"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// gatedStore is a store whose chunk reads after the first wait for gate
// and then fail with fail, when set.
type gatedStore struct {
	history.Store
	reads atomic.Int32
	gate  chan struct{}
	fail  error
	// failFirst fails the first read too.
	failFirst bool
}

func (s *gatedStore) ListCalls(ctx context.Context, ns string, q history.CallQuery) ([]switchboardv1.Call, error) {
	if s.reads.Add(1) == 1 && !s.failFirst {
		return s.Store.ListCalls(ctx, ns, q)
	}
	if s.gate != nil {
		<-s.gate
	}
	if s.fail != nil {
		return nil, s.fail
	}
	return s.Store.ListCalls(ctx, ns, q)
}

// listServer serves GET /v1/calls of organization "org" over store, which
// holds n archived calls with pad bytes of metadata each.
func listServer(t *testing.T, n, pad int, cfg Config, wrap func(history.Store) history.Store) *httptest.Server {
	t.Helper()
	store, err := history.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	for i := range n {
		c := testsupport.BenchCall("org", i)
		if pad > 0 {
			c.Spec.Metadata = &apiextensionsv1.JSON{Raw: []byte(`{"pad":"` + strings.Repeat("x", pad) + `"}`)}
		}
		if err := store.SaveCall(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	cfg.Calls = &calls.Book{Live: testsupport.FakeCache(t), History: wrap(store)}
	cfg.Log = logr.Discard()
	a := &api{cfg: cfg}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := context.WithValue(r.Context(), principalKey{}, apikeys.Principal{Namespace: "org"})
		recoverJSON(logr.Discard())(http.HandlerFunc(a.listCalls)).ServeHTTP(w, r.WithContext(ctx))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func same(s history.Store) history.Store { return s }

// A page is written as it is read: its first calls reach the client while
// the store has not yet given the rest.
func TestListStreamsBeforeThePageIsRead(t *testing.T) {
	gated := &gatedStore{gate: make(chan struct{})}
	srv := listServer(t, 120, 0, Config{}, func(s history.Store) history.Store { gated.Store = s; return gated })
	resp, err := http.Get(srv.URL + "/v1/calls?limit=1000") //nolint:noctx // test
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	first := make([]byte, len(`{"data":[{"call_id"`))
	got := make(chan error, 1)
	go func() { _, err := io.ReadFull(resp.Body, first); got <- err }()
	select {
	case err := <-got:
		if err != nil || string(first) != `{"data":[{"call_id"` {
			t.Fatalf("first bytes %q, %v", first, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no byte of the page arrived before the store gave all of it")
	}
	close(gated.gate)
	var page struct {
		Data    []map[string]any `json:"data"`
		HasMore bool             `json:"has_more"`
	}
	if err := json.NewDecoder(io.MultiReader(strings.NewReader(string(first)), resp.Body)).Decode(&page); err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 120 || page.HasMore {
		t.Fatalf("page of %d calls, has_more %v; want all 120", len(page.Data), page.HasMore)
	}
}

// A store that fails before the first call is a 503; one that fails once
// calls are on their way cuts the response, which the client sees as a
// broken body rather than a short page.
func TestListFailures(t *testing.T) {
	broken := errors.New("store gone")
	early := listServer(t, 120, 0, Config{}, func(s history.Store) history.Store {
		return &gatedStore{Store: s, fail: broken, failFirst: true}
	})
	r := get(t, early.URL+"/v1/calls?limit=1000")
	var detail stringDetail
	err := json.NewDecoder(r.Body).Decode(&detail)
	_ = r.Body.Close()
	if r.StatusCode != http.StatusServiceUnavailable || err != nil || !strings.Contains(detail.Detail, "safe to retry") {
		t.Fatalf("a store failing at once: %d %+v %v; want 503 saying it is safe to retry", r.StatusCode, detail, err)
	}

	late := listServer(t, 120, 0, Config{}, func(s history.Store) history.Store { return &gatedStore{Store: s, fail: broken} })
	r = get(t, late.URL+"/v1/calls?limit=1000")
	defer func() { _ = r.Body.Close() }()
	body, err := io.ReadAll(r.Body)
	if r.StatusCode != http.StatusOK || err == nil {
		t.Fatalf("a store failing mid-page: %d, body of %d bytes read without error; want 200 and a broken body",
			r.StatusCode, len(body))
	}
}

// A page ends before the call that would take it past the byte budget,
// with has_more and a cursor from which the next page goes on: every call
// once, in order; the first call of a page always goes, however large.
func TestListPageEndsAtTheByteBudget(t *testing.T) {
	const n, pad, budget = 40, 10_000, 50_000
	srv := listServer(t, n, pad, Config{PageBytes: budget}, same)
	var got []string
	cursor := ""
	for range n {
		raw, page := getPage(t, srv.URL, 1000, cursor)
		if len(page.Data) == 0 || len(raw) > budget+200 {
			t.Fatalf("a page of %d calls in %d bytes, budget %d", len(page.Data), len(raw), budget)
		}
		got = append(got, page.ids()...)
		if !page.HasMore {
			break
		}
		cursor = *page.NextCursor
	}
	want := make([]string, 0, n)
	for i := n - 1; i >= 0; i-- {
		want = append(want, testsupport.BenchCallID(i))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("paged through %d calls:\n%v\nwant %d:\n%v", len(got), got, len(want), want)
	}
	// A budget smaller than one call still advances, a call a page.
	tiny := listServer(t, 3, pad, Config{PageBytes: 1}, same)
	if _, page := getPage(t, tiny.URL, 1000, ""); len(page.Data) != 1 || !page.HasMore {
		t.Fatalf("a budget under one call: %d calls, has_more %v; want 1 and true", len(page.Data), page.HasMore)
	}
}

// A page within the budget is the list as it always was: every call up to
// the limit, the same three fields, has_more from the limit alone.
func TestListPageUnderTheBudgetIsUnchanged(t *testing.T) {
	srv := listServer(t, 5, 0, Config{}, same)
	raw, page := getPage(t, srv.URL, 5, "")
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatal(err)
	}
	if len(fields) != 3 || len(page.Data) != 5 || page.HasMore || page.NextCursor != nil || !strings.HasSuffix(string(raw), "}\n") {
		t.Fatalf("page %s", raw)
	}
	if _, page := getPage(t, srv.URL, 4, ""); len(page.Data) != 4 || !page.HasMore || page.NextCursor == nil {
		t.Fatalf("limit 4 of 5: %d calls, has_more %v", len(page.Data), page.HasMore)
	}
}

// An organization's lists beyond its bound are 429 rate_limited with
// Retry-After, in the shape of the create-call limits.
func TestListBeyondTheReadBound(t *testing.T) {
	reads := &quota.Reads{PerOrganization: 1}
	srv := listServer(t, 1, 0, Config{Services: services.Services{Reads: reads}}, same)
	release, refused := reads.Begin("org")
	if refused != nil {
		t.Fatal(refused)
	}
	r := get(t, srv.URL+"/v1/calls")
	var body struct {
		Detail ErrorDetail `json:"detail"`
	}
	err := json.NewDecoder(r.Body).Decode(&body)
	_ = r.Body.Close()
	if err != nil || r.StatusCode != http.StatusTooManyRequests || r.Header.Get("Retry-After") != "1" ||
		body.Detail.ErrorCode != quota.CodeRateLimited || body.Detail.Error == "" {
		t.Fatalf("a list beyond the bound: %d, Retry-After %q, %+v, %v", r.StatusCode, r.Header.Get("Retry-After"), body, err)
	}
	release()
	if _, page := getPage(t, srv.URL, 10, ""); len(page.Data) != 1 {
		t.Fatalf("after the read ended: %d calls, want 1", len(page.Data))
	}
}

type testPage struct {
	Data []struct {
		CallID string `json:"call_id"`
	} `json:"data"`
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
}

func (p testPage) ids() []string {
	out := make([]string, 0, len(p.Data))
	for _, c := range p.Data {
		out = append(out, c.CallID)
	}
	return out
}

func getPage(t *testing.T, base string, limit int, cursor string) ([]byte, testPage) {
	t.Helper()
	q := url.Values{"limit": {fmt.Sprint(limit)}}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	r := get(t, base+"/v1/calls?"+q.Encode())
	defer func() { _ = r.Body.Close() }()
	raw, err := io.ReadAll(r.Body)
	var page testPage
	if err == nil {
		err = json.Unmarshal(raw, &page)
	}
	if err != nil || r.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/calls?%s: %d %v %.300s", q.Encode(), r.StatusCode, err, raw)
	}
	return raw, page
}

func get(t *testing.T, u string) *http.Response {
	t.Helper()
	r, err := http.Get(u) //nolint:noctx,gosec // test, a local server
	if err != nil {
		t.Fatal(err)
	}
	return r
}
