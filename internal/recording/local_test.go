package recording

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var testSigningKey = []byte("0123456789abcdef0123456789abcdef")

// fakeClock is read by the server goroutine, hence the mutex.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

type fixture struct {
	store *Local
	srv   *httptest.Server
	clock *fakeClock
	dir   string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	fx := &fixture{
		clock: &fakeClock{t: time.Unix(1_700_000_000, 500_000_000)},
		dir:   filepath.Join(t.TempDir(), "recordings"),
	}
	// Mount like chi would: the handler sees the full /recordings/... path.
	mux := http.NewServeMux()
	mux.Handle("/recordings/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fx.store.Handler().ServeHTTP(w, r)
	}))
	fx.srv = httptest.NewServer(mux)
	t.Cleanup(fx.srv.Close)
	s, err := NewLocal(LocalConfig{Dir: fx.dir, BaseURL: fx.srv.URL, SigningKey: testSigningKey, Now: fx.clock.Now})
	if err != nil {
		t.Fatalf("NewLocal: %v", err)
	}
	fx.store = s
	return fx
}

func (fx *fixture) put(t *testing.T, key, ct string, data []byte) Object {
	t.Helper()
	obj, err := fx.store.Put(context.Background(), key, ct, bytes.NewReader(data))
	if err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
	return obj
}

func (fx *fixture) link(t *testing.T, key string, ttl time.Duration) Link {
	t.Helper()
	l, err := fx.store.Link(context.Background(), key, ttl)
	if err != nil {
		t.Fatalf("Link(%q): %v", key, err)
	}
	return l
}

func do(t *testing.T, method, rawURL string, hdr http.Header) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func assertDetail(t *testing.T, resp *http.Response, body []byte, code int, detail string) {
	t.Helper()
	if resp.StatusCode != code {
		t.Fatalf("status = %d, want %d (body %s)", resp.StatusCode, code, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	var got struct{ Detail string }
	if err := json.Unmarshal(body, &got); err != nil || got.Detail != detail {
		t.Errorf("body = %s, want detail %q", body, detail)
	}
}

func testAudio() []byte {
	b := make([]byte, 10_000)
	for i := range b {
		b[i] = byte(i * 7)
	}
	return b
}

func TestPutLinkGet(t *testing.T) {
	fx := newFixture(t)
	key, data := "demo/call_0123abcd.wav", testAudio()

	obj := fx.put(t, key, "audio/wav", data)
	if want := (Object{Key: key, ContentType: "audio/wav", SizeBytes: int64(len(data))}); obj != want {
		t.Fatalf("Put = %+v, want %+v", obj, want)
	}

	l := fx.link(t, key, 10*time.Minute)
	wantExp := time.Unix(1_700_000_600, 0)
	if !l.ExpiresAt.Equal(wantExp) {
		t.Errorf("ExpiresAt = %v, want %v", l.ExpiresAt, wantExp)
	}
	wantPrefix := fx.srv.URL + "/recordings/" + key + "?expires=1700000600&sig="
	if !strings.HasPrefix(l.URL, wantPrefix) {
		t.Fatalf("URL = %q, want prefix %q", l.URL, wantPrefix)
	}
	if got := fx.store.Origin(); got != fx.srv.URL { // what the dashboard lets audio load from
		t.Errorf("Origin() = %q, want %q", got, fx.srv.URL)
	}

	resp, body := do(t, http.MethodGet, l.URL, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET status = %d, body %s", resp.StatusCode, body)
	}
	if !bytes.Equal(body, data) {
		t.Errorf("GET body differs: got %d bytes, want %d", len(body), len(data))
	}
	if ct := resp.Header.Get("Content-Type"); ct != "audio/wav" {
		t.Errorf("Content-Type = %q, want audio/wav", ct)
	}
	// 599.5s remain on the fake clock; max-age rounds down.
	if cc := resp.Header.Get("Cache-Control"); cc != "private, max-age=599" {
		t.Errorf("Cache-Control = %q", cc)
	}

	resp, body = do(t, http.MethodHead, l.URL, nil)
	if resp.StatusCode != http.StatusOK || len(body) != 0 {
		t.Errorf("HEAD = %d with %d body bytes, want 200 and none", resp.StatusCode, len(body))
	}
	if cl := resp.Header.Get("Content-Length"); cl != strconv.Itoa(len(data)) {
		t.Errorf("HEAD Content-Length = %q, want %d", cl, len(data))
	}
}

// TestLinkSignature pins the documented signature format, so other
// components can verify links independently.
func TestLinkSignature(t *testing.T) {
	fx := newFixture(t)
	key := "demo/call_sig.wav"
	fx.put(t, key, "audio/wav", []byte("x"))
	u, err := url.Parse(fx.link(t, key, time.Minute).URL)
	if err != nil {
		t.Fatal(err)
	}
	expires := u.Query().Get("expires")
	m := hmac.New(sha256.New, testSigningKey)
	m.Write([]byte(key + "\n" + expires))
	if want := base64.RawURLEncoding.EncodeToString(m.Sum(nil)); u.Query().Get("sig") != want {
		t.Errorf("sig = %q, want %q", u.Query().Get("sig"), want)
	}
}

func TestHandlerRejectsInvalidLinks(t *testing.T) {
	fx := newFixture(t)
	fx.put(t, "demo/a.wav", "audio/wav", []byte("a"))
	fx.put(t, "demo/b.wav", "audio/wav", []byte("b"))
	l := fx.link(t, "demo/a.wav", time.Minute)
	u, err := url.Parse(l.URL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	expires, sig := q.Get("expires"), q.Get("sig")
	base := fx.srv.URL + "/recordings/"
	flipped := []byte(sig)
	flipped[0] ^= 1

	tests := []struct {
		name string
		url  string
		now  time.Time // zero keeps the fixture clock
	}{
		{"tampered sig", base + "demo/a.wav?expires=" + expires + "&sig=" + string(flipped), time.Time{}},
		{"sig not base64", base + "demo/a.wav?expires=" + expires + "&sig=%21%21", time.Time{}},
		{"missing sig", base + "demo/a.wav?expires=" + expires, time.Time{}},
		{"missing expires", base + "demo/a.wav?sig=" + sig, time.Time{}},
		{"extended expires", base + "demo/a.wav?expires=1800000000&sig=" + sig, time.Time{}},
		{"tampered key", base + "demo/b.wav?expires=" + expires + "&sig=" + sig, time.Time{}},
		{"invalid key", base + "demo/%2E%2E/x?expires=" + expires + "&sig=" + sig, time.Time{}},
		{"expired", l.URL, l.ExpiresAt.Add(time.Second)},
		{"expires exactly now", l.URL, l.ExpiresAt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := tt.now
			if now.IsZero() {
				now = time.Unix(1_700_000_000, 0)
			}
			fx.clock.Set(now)
			resp, body := do(t, http.MethodGet, tt.url, nil)
			assertDetail(t, resp, body, http.StatusForbidden, "Recording link is invalid or has expired.")
		})
	}
}

func TestHandlerMissingFile(t *testing.T) {
	fx := newFixture(t)
	key := "demo/gone.wav"
	fx.put(t, key, "audio/wav", []byte("x"))
	l := fx.link(t, key, time.Minute)
	if err := os.Remove(filepath.Join(fx.dir, "demo", "gone.wav")); err != nil {
		t.Fatal(err)
	}
	resp, body := do(t, http.MethodGet, l.URL, nil)
	assertDetail(t, resp, body, http.StatusNotFound, "Recording not found.")
}

func TestHandlerMethodNotAllowed(t *testing.T) {
	fx := newFixture(t)
	key := "demo/x.wav"
	fx.put(t, key, "audio/wav", []byte("x"))
	l := fx.link(t, key, time.Minute)
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		t.Run(method, func(t *testing.T) {
			resp, body := do(t, method, l.URL, nil)
			assertDetail(t, resp, body, http.StatusMethodNotAllowed, "Method Not Allowed")
			if allow := resp.Header.Get("Allow"); allow != "GET, HEAD" {
				t.Errorf("Allow = %q", allow)
			}
		})
	}
}

func TestHandlerRange(t *testing.T) {
	fx := newFixture(t)
	key, data := "demo/range.wav", testAudio()
	fx.put(t, key, "audio/wav", data)
	l := fx.link(t, key, time.Minute)
	resp, body := do(t, http.MethodGet, l.URL, http.Header{"Range": {"bytes=100-199"}})
	if resp.StatusCode != http.StatusPartialContent {
		t.Fatalf("status = %d, want 206", resp.StatusCode)
	}
	if !bytes.Equal(body, data[100:200]) {
		t.Errorf("range body mismatch")
	}
	if cr := resp.Header.Get("Content-Range"); cr != "bytes 100-199/10000" {
		t.Errorf("Content-Range = %q", cr)
	}
}

func TestPutRejectsInvalidKeys(t *testing.T) {
	fx := newFixture(t)
	keys := []string{
		"", "../x", "a//b", "/abs", "a/./b", "a/../b", ".", "..", "a/", "a b",
		`a\b`, "ä.wav", "~meta/x", "a?b", strings.Repeat("a", MaxKeyLen+1),
	}
	for _, key := range keys {
		t.Run(key, func(t *testing.T) {
			_, err := fx.store.Put(context.Background(), key, "audio/wav", strings.NewReader("x"))
			if !errors.Is(err, ErrInvalidKey) {
				t.Errorf("Put(%q) error = %v, want ErrInvalidKey", key, err)
			}
		})
	}
	entries, err := os.ReadDir(fx.dir)
	if err != nil || len(entries) != 0 {
		t.Errorf("dir should be empty, got %v (err %v)", entries, err)
	}
}

func TestPutAcceptsValidKeys(t *testing.T) {
	fx := newFixture(t)
	for _, key := range []string{"a", ".hidden", "x/b/c-d_e.f", strings.Repeat("a", MaxKeyLen)} {
		if _, err := fx.store.Put(context.Background(), key, "", strings.NewReader("x")); err != nil {
			t.Errorf("Put(%q): %v", key, err)
		}
	}
}

func TestPutRejectsInvalidContentType(t *testing.T) {
	fx := newFixture(t)
	_, err := fx.store.Put(context.Background(), "a.wav", "audio/wav\r\nX-Evil: 1", strings.NewReader("x"))
	if err == nil {
		t.Fatal("want error for malformed content type")
	}
}

func TestLinkNotFound(t *testing.T) {
	fx := newFixture(t)
	fx.put(t, "demo/x.wav", "audio/wav", []byte("x"))
	for _, key := range []string{"demo/missing.wav", "demo", "demo/x.wav/y"} {
		if _, err := fx.store.Link(context.Background(), key, time.Minute); !errors.Is(err, ErrNotFound) {
			t.Errorf("Link(%q) error = %v, want ErrNotFound", key, err)
		}
	}
}

func TestPutOverwrite(t *testing.T) {
	fx := newFixture(t)
	key := "demo/call.wav"
	fx.put(t, key, "audio/wav", []byte("first recording"))
	obj := fx.put(t, key, "audio/mpeg", []byte("second"))
	if obj.SizeBytes != 6 {
		t.Errorf("SizeBytes = %d, want 6", obj.SizeBytes)
	}
	resp, body := do(t, http.MethodGet, fx.link(t, key, time.Minute).URL, nil)
	if string(body) != "second" || resp.Header.Get("Content-Type") != "audio/mpeg" {
		t.Errorf("got %q as %q, want %q as audio/mpeg", body, resp.Header.Get("Content-Type"), "second")
	}
	assertNoTempFiles(t, fx.dir)
}

// errReader fails mid-stream, like a connection dropping during upload.
type errReader struct{ n int }

func (r *errReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, errors.New("boom")
	}
	r.n--
	return copy(p, "partial"), nil
}

func TestPutFailureLeavesNoFile(t *testing.T) {
	fx := newFixture(t)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		r    io.Reader
	}{
		{"reader error", context.Background(), &errReader{n: 3}},
		{"cancelled context", cancelled, strings.NewReader("data")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := fx.store.Put(tt.ctx, "demo/fail.wav", "audio/wav", tt.r); err == nil {
				t.Fatal("Put succeeded, want error")
			}
			if _, err := fx.store.Link(context.Background(), "demo/fail.wav", time.Minute); !errors.Is(err, ErrNotFound) {
				t.Errorf("Link after failed Put: %v, want ErrNotFound", err)
			}
			assertNoTempFiles(t, fx.dir)
		})
	}
}

func assertNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), tmpPrefix) {
			t.Errorf("leftover temp file %s", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestNewLocalValidates(t *testing.T) {
	tests := []struct {
		name string
		cfg  LocalConfig
	}{
		{"empty dir", LocalConfig{SigningKey: testSigningKey}},
		{"short key", LocalConfig{Dir: t.TempDir(), SigningKey: testSigningKey[:31]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewLocal(tt.cfg); err == nil {
				t.Error("want error")
			}
		})
	}

	dir := filepath.Join(t.TempDir(), "a", "b")
	if _, err := NewLocal(LocalConfig{Dir: dir, SigningKey: testSigningKey}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Errorf("Dir not created: %v", err)
	}
}

// TestHandlerRefusesTraversal signs invalid keys by hand, as if the signing
// key had leaked, and calls the handler directly because ServeMux and the
// HTTP client would clean such paths before they arrive.
func TestHandlerRefusesTraversal(t *testing.T) {
	fx := newFixture(t)
	if err := os.WriteFile(filepath.Join(filepath.Dir(fx.dir), "secret"), []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"../secret", "demo/../../secret", "a//b", "~meta/x"} {
		t.Run(key, func(t *testing.T) {
			expires := "1800000000"
			req := httptest.NewRequest(http.MethodGet, "/recordings/x", nil)
			req.URL.Path = "/recordings/" + key
			req.URL.RawQuery = "expires=" + expires + "&sig=" + fx.store.sign(key, expires)
			rec := httptest.NewRecorder()
			fx.store.Handler().ServeHTTP(rec, req)
			assertDetail(t, rec.Result(), rec.Body.Bytes(), http.StatusForbidden, "Recording link is invalid or has expired.")
		})
	}
}

func TestDelete(t *testing.T) {
	fx := newFixture(t)
	ctx := context.Background()
	key := "demo/gone.wav"
	fx.put(t, key, "audio/wav", testAudio())
	fx.put(t, "demo/kept.wav", "audio/wav", []byte("kept"))
	link := fx.link(t, key, time.Minute)

	if err := fx.store.Delete(ctx, key); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	for _, name := range []string{key, metaName(key)} {
		if _, err := os.Stat(filepath.Join(fx.dir, filepath.FromSlash(name))); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after Delete: %v, want it gone", name, err)
		}
	}
	if _, err := fx.store.Link(ctx, key, time.Minute); !errors.Is(err, ErrNotFound) {
		t.Errorf("Link after Delete = %v, want ErrNotFound", err)
	}
	resp, body := do(t, http.MethodGet, link.URL, nil)
	assertDetail(t, resp, body, http.StatusNotFound, detailNotFound)
	// Other recordings are untouched.
	if resp, body := do(t, http.MethodGet, fx.link(t, "demo/kept.wav", time.Minute).URL, nil); resp.StatusCode != http.StatusOK || string(body) != "kept" {
		t.Errorf("GET other recording = %d %q, want 200 %q", resp.StatusCode, body, "kept")
	}

	// Deleting again, a key never stored, a "directory" of keys or a path
	// through a file is no error, and removes nothing.
	for _, k := range []string{key, "demo/never.wav", "demo", "demo/kept.wav/x", "other/never.wav"} {
		if err := fx.store.Delete(ctx, k); err != nil {
			t.Errorf("Delete(%q) = %v, want nil", k, err)
		}
	}
	if _, err := fx.store.Link(ctx, "demo/kept.wav", time.Minute); err != nil {
		t.Errorf("Link(kept) after deleting other keys: %v", err)
	}
}

func TestDeleteRejectsInvalidKeys(t *testing.T) {
	fx := newFixture(t)
	for _, key := range []string{"", "../x.wav", "a/../../x", "~meta/demo/x.wav", "/abs.wav"} {
		if err := fx.store.Delete(context.Background(), key); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Delete(%q) = %v, want ErrInvalidKey", key, err)
		}
	}
}
