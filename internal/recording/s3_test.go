package recording_test

// The S3 store against a real S3 server: versitygw, started by s3test
// (`make test` installs it). Links are fetched with plain HTTP, as a
// customer's browser would.

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/switchboard-dev/switchboard/internal/recording"
	"github.com/switchboard-dev/switchboard/internal/recording/s3test"
)

func TestS3(t *testing.T) {
	cfg, _ := s3test.Start(t) // stopped when t ends, after the parallel subtests
	ctx := context.Background()
	store, err := recording.NewS3(ctx, cfg)
	if err != nil {
		t.Fatalf("NewS3: %v", err)
	}

	t.Run("PutThenLink", func(t *testing.T) {
		t.Parallel()
		data := randomBytes(t, 64044)
		obj, err := store.Put(ctx, "org-a/call_1.wav", "audio/wav", bytes.NewReader(data))
		if err != nil {
			t.Fatalf("Put: %v", err)
		}
		want := recording.Object{Key: "org-a/call_1.wav", ContentType: "audio/wav", SizeBytes: int64(len(data))}
		if obj != want {
			t.Fatalf("Put = %+v, want %+v", obj, want)
		}
		before := time.Now()
		link, err := store.Link(ctx, "org-a/call_1.wav", time.Hour)
		after := time.Now()
		if err != nil {
			t.Fatalf("Link: %v", err)
		}
		// Path-style on the gateway's own address, signed with SigV4.
		if prefix := "http://" + cfg.Endpoint + "/" + cfg.Bucket + "/org-a/call_1.wav?"; !strings.HasPrefix(link.URL, prefix) {
			t.Errorf("link %s does not start with %s", link.URL, prefix)
		}
		if got := store.Origin(); !strings.HasPrefix(link.URL, got+"/") || got != "http://"+cfg.Endpoint {
			t.Errorf("Origin() = %q, want the link's, http://%s", got, cfg.Endpoint)
		}
		if !strings.Contains(link.URL, "X-Amz-Signature=") || !strings.Contains(link.URL, "X-Amz-Expires=3600") {
			t.Errorf("link %s is not a SigV4 presigned URL valid 3600 s", link.URL)
		}
		// An hour from the signing, which happened between before and after
		// (SigV4 dates have whole seconds), however long that took.
		if lo, hi := before.Add(time.Hour).Truncate(time.Second), after.Add(time.Hour); link.ExpiresAt.Before(lo) || link.ExpiresAt.After(hi) {
			t.Errorf("ExpiresAt %s is not an hour after the signing, between %s and %s", link.ExpiresAt, lo, hi)
		}
		status, h, body := get(t, link.URL)
		if ct := h.Get("Content-Type"); status != http.StatusOK || ct != "audio/wav" || !bytes.Equal(body, data) {
			t.Fatalf("GET link = %d %q, %d bytes (same: %v); want 200 audio/wav and the %d bytes put",
				status, ct, len(body), bytes.Equal(body, data), len(data))
		}
		// The upload's own encoding (aws-chunked over http) must not stick to
		// the object: a browser would fail to decode the recording.
		if ce := h.Get("Content-Encoding"); ce != "" {
			t.Errorf("GET link: Content-Encoding %q, want none", ce)
		}
		if strings.Contains(link.URL, cfg.SecretKey) {
			t.Error("the link contains the secret key")
		}
	})

	t.Run("ContentTypeGuessedFromExtension", func(t *testing.T) {
		t.Parallel()
		put(t, store, "org-a/guess.wav", "", []byte("RIFF"))
		link := mustLink(t, store, "org-a/guess.wav", time.Minute)
		_, h, _ := get(t, link.URL)
		if ct := h.Get("Content-Type"); ct != "audio/wav" && ct != "audio/x-wav" && ct != "audio/wave" {
			t.Errorf("Content-Type = %q, want a WAV type", ct)
		}
	})

	t.Run("ExpiredLinkIsRefused", func(t *testing.T) {
		t.Parallel()
		put(t, store, "org-a/short.wav", "audio/wav", []byte("RIFF....WAVE"))
		before := time.Now()
		link := mustLink(t, store, "org-a/short.wav", time.Second)
		if limit := before.Add(time.Second); link.ExpiresAt.After(time.Now().Add(time.Second)) || link.ExpiresAt.Before(limit.Truncate(time.Second)) {
			t.Errorf("a 1 s link signed after %s expires at %s", before, link.ExpiresAt)
		}
		time.Sleep(time.Until(link.ExpiresAt) + 1500*time.Millisecond)
		if status, _, body := get(t, link.URL); status != http.StatusForbidden {
			t.Fatalf("GET expired link = %d %s, want 403", status, body)
		}
	})

	t.Run("LinkOfMissingKey", func(t *testing.T) {
		t.Parallel()
		if _, err := store.Link(ctx, "org-a/never-stored.wav", time.Hour); !errors.Is(err, recording.ErrNotFound) {
			t.Fatalf("Link(missing) = %v, want ErrNotFound", err)
		}
		// A "directory" of other keys is no recording either.
		put(t, store, "org-b/dir/call.wav", "audio/wav", []byte("x"))
		if _, err := store.Link(ctx, "org-b/dir", time.Hour); !errors.Is(err, recording.ErrNotFound) {
			t.Fatalf("Link(prefix of a key) = %v, want ErrNotFound", err)
		}
	})

	t.Run("PutAgainReplaces", func(t *testing.T) {
		t.Parallel()
		put(t, store, "org-a/retry.wav", "audio/wav", []byte("first attempt, cut short"))
		second := randomBytes(t, 1000)
		obj := put(t, store, "org-a/retry.wav", "audio/x-wav", second)
		if obj.SizeBytes != int64(len(second)) {
			t.Errorf("SizeBytes = %d, want %d", obj.SizeBytes, len(second))
		}
		status, h, body := get(t, mustLink(t, store, "org-a/retry.wav", time.Minute).URL)
		if ct := h.Get("Content-Type"); status != http.StatusOK || ct != "audio/x-wav" || !bytes.Equal(body, second) {
			t.Fatalf("GET after second Put = %d %q %d bytes; want 200, the second type and bytes", status, ct, len(body))
		}
	})

	t.Run("Delete", func(t *testing.T) {
		t.Parallel()
		put(t, store, "org-d/gone.wav", "audio/wav", []byte("to be deleted"))
		put(t, store, "org-d/kept.wav", "audio/wav", []byte("kept"))
		link := mustLink(t, store, "org-d/gone.wav", time.Minute)
		if err := store.Delete(ctx, "org-d/gone.wav"); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		if _, err := store.Link(ctx, "org-d/gone.wav", time.Minute); !errors.Is(err, recording.ErrNotFound) {
			t.Errorf("Link after Delete = %v, want ErrNotFound", err)
		}
		if status, _, _ := get(t, link.URL); status != http.StatusNotFound {
			t.Errorf("GET of a link handed out before Delete = %d, want 404", status)
		}
		// Deleting again or a key never stored is no error.
		for _, k := range []string{"org-d/gone.wav", "org-d/never.wav"} {
			if err := store.Delete(ctx, k); err != nil {
				t.Errorf("Delete(%q) = %v, want nil", k, err)
			}
		}
		if status, _, body := get(t, mustLink(t, store, "org-d/kept.wav", time.Minute).URL); status != http.StatusOK || string(body) != "kept" {
			t.Errorf("GET other object = %d %q, want 200 %q", status, body, "kept")
		}
		if err := store.Delete(ctx, "../x.wav"); !errors.Is(err, recording.ErrInvalidKey) {
			t.Errorf("Delete(invalid key) = %v, want ErrInvalidKey", err)
		}
	})

	t.Run("LargerThanOnePartStreams", func(t *testing.T) {
		t.Parallel()
		// Over the 16 MiB read ahead: a multipart upload of unknown length.
		data := randomBytes(t, 16<<20+12345)
		obj := put(t, store, "org-a/long.wav", "audio/wav", data)
		if obj.SizeBytes != int64(len(data)) {
			t.Errorf("SizeBytes = %d, want %d", obj.SizeBytes, len(data))
		}
		status, h, body := get(t, mustLink(t, store, "org-a/long.wav", time.Minute).URL)
		if status != http.StatusOK || !bytes.Equal(body, data) {
			t.Fatalf("GET = %d, %d bytes (same: %v), want 200 and the %d bytes put", status, len(body), bytes.Equal(body, data), len(data))
		}
		if ct, ce := h.Get("Content-Type"), h.Get("Content-Encoding"); ct != "audio/wav" || ce != "" {
			t.Errorf("GET: Content-Type %q, Content-Encoding %q; want audio/wav and none", ct, ce)
		}
	})

	t.Run("PrefixApplied", func(t *testing.T) {
		t.Parallel()
		pcfg := cfg
		pcfg.Prefix = "/tenants/eu-1/"
		prefixed, err := recording.NewS3(ctx, pcfg)
		if err != nil {
			t.Fatalf("NewS3 with prefix: %v", err)
		}
		obj := put(t, prefixed, "org-c/call_9.wav", "audio/wav", []byte("RIFF"))
		if obj.Key != "org-c/call_9.wav" {
			t.Errorf("Object.Key = %q, want the key without the prefix", obj.Key)
		}
		var keys []string
		for o := range s3test.Client(t, cfg).ListObjects(ctx, cfg.Bucket, minio.ListObjectsOptions{Prefix: "tenants/", Recursive: true}) {
			if o.Err != nil {
				t.Fatal(o.Err)
			}
			keys = append(keys, o.Key)
		}
		if len(keys) != 1 || keys[0] != "tenants/eu-1/org-c/call_9.wav" {
			t.Fatalf("objects under tenants/ = %q, want [tenants/eu-1/org-c/call_9.wav]", keys)
		}
		link := mustLink(t, prefixed, "org-c/call_9.wav", time.Minute)
		if !strings.Contains(link.URL, "/"+cfg.Bucket+"/tenants/eu-1/org-c/call_9.wav?") {
			t.Errorf("link %s does not name the prefixed object", link.URL)
		}
		if status, _, body := get(t, link.URL); status != http.StatusOK || string(body) != "RIFF" {
			t.Errorf("GET = %d %q", status, body)
		}
		// The unprefixed store does not see it.
		if _, err := store.Link(ctx, "org-c/call_9.wav", time.Minute); !errors.Is(err, recording.ErrNotFound) {
			t.Errorf("unprefixed Link = %v, want ErrNotFound", err)
		}
	})

	t.Run("InvalidInput", func(t *testing.T) {
		t.Parallel()
		if _, err := store.Put(ctx, "../escape.wav", "audio/wav", strings.NewReader("x")); !errors.Is(err, recording.ErrInvalidKey) {
			t.Errorf("Put(../escape.wav) = %v, want ErrInvalidKey", err)
		}
		if _, err := store.Put(ctx, "org-a/bad-type.wav", "not a type;;", strings.NewReader("x")); err == nil {
			t.Error("Put with a malformed content type succeeded")
		}
		for _, ttl := range []time.Duration{0, 500 * time.Millisecond, 8 * 24 * time.Hour} {
			if _, err := store.Link(ctx, "org-a/call_1.wav", ttl); err == nil || errors.Is(err, recording.ErrNotFound) {
				t.Errorf("Link(ttl %s) = %v, want a ttl error", ttl, err)
			}
		}
	})

	t.Run("MissingBucket", func(t *testing.T) {
		t.Parallel()
		bad := cfg
		bad.Bucket = "no-such-recordings"
		_, err := recording.NewS3(ctx, bad)
		if err == nil || !strings.Contains(err.Error(), `"no-such-recordings"`) || !strings.Contains(err.Error(), "does not exist") {
			t.Fatalf("NewS3(missing bucket) = %v, want an error naming the bucket", err)
		}
	})

	t.Run("BadCredentials", func(t *testing.T) {
		t.Parallel()
		for name, mutate := range map[string]func(*recording.S3Config){
			"wrong secret":     func(c *recording.S3Config) { c.SecretKey = "wrong-" + c.SecretKey },
			"unknown key id":   func(c *recording.S3Config) { c.AccessKey = "AKUNKNOWN" },
			"both are unknown": func(c *recording.S3Config) { c.AccessKey, c.SecretKey = "AKUNKNOWN", "s3cr3t-value-42" },
		} {
			bad := cfg
			mutate(&bad)
			_, err := recording.NewS3(ctx, bad)
			if err == nil {
				t.Fatalf("%s: NewS3 succeeded", name)
			}
			msg := err.Error()
			t.Logf("%s: %s", name, msg)
			if !strings.Contains(msg, "access denied") || !strings.Contains(msg, cfg.Bucket) {
				t.Errorf("%s: error %q does not say access was denied to the bucket", name, msg)
			}
			if strings.Contains(msg, bad.SecretKey) || strings.Contains(msg, cfg.SecretKey) {
				t.Errorf("%s: error %q contains a secret key", name, msg)
			}
		}
	})

	t.Run("BadConfig", func(t *testing.T) {
		t.Parallel()
		for name, mutate := range map[string]func(*recording.S3Config){
			"no endpoint":       func(c *recording.S3Config) { c.Endpoint = "" },
			"endpoint with URL": func(c *recording.S3Config) { c.Endpoint = "http://" + c.Endpoint },
			"no bucket":         func(c *recording.S3Config) { c.Bucket = "" },
			"no secret":         func(c *recording.S3Config) { c.SecretKey = "" },
			"bad prefix":        func(c *recording.S3Config) { c.Prefix = "a/../b" },
		} {
			bad := cfg
			mutate(&bad)
			if _, err := recording.NewS3(ctx, bad); err == nil {
				t.Errorf("%s: NewS3 succeeded", name)
			} else if cfg.SecretKey != "" && strings.Contains(err.Error(), cfg.SecretKey) {
				t.Errorf("%s: error %q contains the secret key", name, err)
			}
		}
	})
}

func put(t *testing.T, s *recording.S3, key, ct string, data []byte) recording.Object {
	t.Helper()
	obj, err := s.Put(context.Background(), key, ct, bytes.NewReader(data))
	if err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
	return obj
}

func mustLink(t *testing.T, s *recording.S3, key string, ttl time.Duration) recording.Link {
	t.Helper()
	l, err := s.Link(context.Background(), key, ttl)
	if err != nil {
		t.Fatalf("Link(%q): %v", key, err)
	}
	return l
}

// get fetches a link without credentials.
func get(t *testing.T, url string) (status int, header http.Header, body []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err = io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, body
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}
