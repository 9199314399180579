// Package recording stores call recordings and hands out signed,
// short-lived links to them. Links are computed when a call is rendered,
// never stored.
package recording

import (
	"context"
	"errors"
	"io"
	"net/url"
	"time"
)

// ErrNotFound is returned for a key that holds no recording.
var ErrNotFound = errors.New("recording not found")

// Object describes a stored recording.
type Object struct {
	Key         string
	ContentType string
	SizeBytes   int64
}

// Link is a signed URL and when it stops working.
type Link struct {
	URL       string
	ExpiresAt time.Time
}

// Store keeps recordings.
type Store interface {
	// Put stores the recording under key, replacing any previous one. It is
	// safe to call again with the same key after a crash.
	Put(ctx context.Context, key, contentType string, r io.Reader) (Object, error)
	// Link returns a link to key valid for ttl, or ErrNotFound.
	Link(ctx context.Context, key string, ttl time.Duration) (Link, error)
	// Delete removes the recording under key. A key that holds no recording
	// is not an error, so a delete can be retried after a crash.
	Delete(ctx context.Context, key string) error
	// Origin is the scheme://host[:port] its links point at, for a page's
	// Content-Security-Policy; "" when links are relative to the page.
	Origin() string
}

// originOf is the scheme://host[:port] of an absolute URL, "" otherwise.
func originOf(u *url.URL) string {
	if u.Scheme == "" || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}
