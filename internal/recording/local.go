package recording

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrInvalidKey is returned for a key that does not match the key syntax.
var ErrInvalidKey = errors.New("recording: invalid key")

const (
	// MinSigningKeyLen is the shortest signing key NewLocal accepts: a full
	// SHA-256 block of entropy is the HMAC-SHA256 sweet spot.
	MinSigningKeyLen = 32
	// MaxKeyLen bounds keys so they fit comfortably in URLs and file paths.
	MaxKeyLen = 255

	pathPrefix = "/recordings/"
	dirPerm    = 0o750
	filePerm   = 0o640
	// Content types live in a parallel tree and temp files carry a prefix;
	// both contain '~', which keys cannot, so they never collide with (or get
	// served as) a recording, and a meta file name is never longer than its
	// recording's.
	metaDir   = "~meta"
	tmpPrefix = "~tmp-"

	detailInvalidLink = "Recording link is invalid or has expired."
	detailNotFound    = "Recording not found."
)

// LocalConfig configures a Local store.
type LocalConfig struct {
	// Dir holds the recordings. It is created if missing.
	Dir string
	// BaseURL prefixes links, e.g. http://127.0.0.1:8080 (no trailing slash).
	BaseURL string
	// SigningKey signs links; at least MinSigningKeyLen bytes.
	SigningKey []byte
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Local is a Store on the local file system whose links are served by
// Handler.
type Local struct {
	dir        string
	baseURL    string
	signingKey []byte
	now        func() time.Time
}

var _ Store = (*Local)(nil)

// NewLocal checks cfg and creates cfg.Dir.
func NewLocal(cfg LocalConfig) (*Local, error) {
	if cfg.Dir == "" {
		return nil, errors.New("recording: local store needs a Dir")
	}
	if len(cfg.SigningKey) < MinSigningKeyLen {
		return nil, fmt.Errorf("recording: signing key must be at least %d bytes", MinSigningKeyLen)
	}
	if err := os.MkdirAll(cfg.Dir, dirPerm); err != nil {
		return nil, fmt.Errorf("recording: create dir: %w", err)
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Local{
		dir:        cfg.Dir,
		baseURL:    strings.TrimRight(cfg.BaseURL, "/"),
		signingKey: bytes.Clone(cfg.SigningKey), // the caller may reuse its slice
		now:        now,
	}, nil
}

// Put stores r under key. The meta file is written before the recording, so
// a recording present under its final name always has its content type.
func (l *Local) Put(ctx context.Context, key, contentType string, r io.Reader) (Object, error) {
	if err := ValidateKey(key); err != nil {
		return Object{}, err
	}
	ct, err := normalizeContentType(key, contentType)
	if err != nil {
		return Object{}, err
	}
	root, err := os.OpenRoot(l.dir)
	if err != nil {
		return Object{}, fmt.Errorf("recording: open dir: %w", err)
	}
	defer root.Close()

	meta, err := json.Marshal(metaFile{ContentType: ct})
	if err != nil {
		return Object{}, err
	}
	if _, err := writeAtomic(ctx, root, metaName(key), bytes.NewReader(meta)); err != nil {
		return Object{}, fmt.Errorf("recording: write meta for %q: %w", key, err)
	}
	size, err := writeAtomic(ctx, root, key, r)
	if err != nil {
		return Object{}, fmt.Errorf("recording: write %q: %w", key, err)
	}
	return Object{Key: key, ContentType: ct, SizeBytes: size}, nil
}

// Link signs a link to key valid for ttl. It returns ErrNotFound if key
// holds no recording.
func (l *Local) Link(ctx context.Context, key string, ttl time.Duration) (Link, error) {
	if err := ValidateKey(key); err != nil {
		return Link{}, err
	}
	if ttl <= 0 {
		return Link{}, fmt.Errorf("recording: link ttl must be positive, got %s", ttl)
	}
	if err := l.checkExists(key); err != nil {
		return Link{}, err
	}
	exp := l.now().Add(ttl).Unix()
	expires := strconv.FormatInt(exp, 10)
	q := "?expires=" + expires + "&sig=" + l.sign(key, expires)
	// Key characters are all URL-safe, so the key needs no escaping.
	return Link{URL: l.baseURL + pathPrefix + key + q, ExpiresAt: time.Unix(exp, 0).UTC()}, nil
}

// Origin is BaseURL's, where its links point ("" for relative links).
func (l *Local) Origin() string {
	u, err := url.Parse(l.baseURL)
	if err != nil {
		return ""
	}
	return originOf(u)
}

// Delete removes the recording under key and then its content type. A
// missing recording is not an error. Links already handed out answer 404
// from then on.
func (l *Local) Delete(ctx context.Context, key string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	root, err := os.OpenRoot(l.dir)
	if err != nil {
		return fmt.Errorf("recording: open dir: %w", err)
	}
	defer root.Close()
	// The recording goes first: a recording present always has its meta
	// file (see Put), and a meta file left behind by a crash is harmless
	// and removed by the retry.
	removed := false
	for _, name := range []string{key, metaName(key)} {
		fi, err := root.Lstat(name)
		if err != nil {
			if errors.Is(notFoundOr(err), ErrNotFound) {
				continue
			}
			return fmt.Errorf("recording: delete %q: %w", key, err)
		}
		if fi.IsDir() {
			continue // a "directory" of other keys is no recording
		}
		if err := root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("recording: delete %q: %w", key, err)
		}
		removed = removed || name == key
	}
	if !removed {
		return nil
	}
	return syncDir(root, path.Dir(key)) // persist the removal itself
}

// Handler serves GET and HEAD /recordings/{key}?expires=...&sig=... for
// links made by Link. Mount it so it sees the full URL path.
func (l *Local) Handler() http.Handler {
	return http.HandlerFunc(l.serveHTTP)
}

func (l *Local) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeDetail(w, http.StatusMethodNotAllowed, "Method Not Allowed")
		return
	}
	key, ok := strings.CutPrefix(r.URL.Path, pathPrefix)
	// An invalid key was never signed; checking it anyway keeps the file
	// system safe even if the signing key leaks.
	if !ok || ValidateKey(key) != nil {
		writeDetail(w, http.StatusForbidden, detailInvalidLink)
		return
	}
	remaining, ok := l.verify(key, r.URL.Query())
	if !ok {
		writeDetail(w, http.StatusForbidden, detailInvalidLink)
		return
	}
	l.serveFile(w, r, key, remaining)
}

// verify checks the signature and expiry of a link and returns how long it
// stays valid.
func (l *Local) verify(key string, q url.Values) (time.Duration, bool) {
	expires := q.Get("expires")
	sig, err := base64.RawURLEncoding.DecodeString(q.Get("sig"))
	if err != nil || !hmac.Equal(sig, l.mac(key, expires)) {
		return 0, false
	}
	exp, err := strconv.ParseInt(expires, 10, 64)
	if err != nil {
		return 0, false
	}
	remaining := time.Unix(exp, 0).Sub(l.now())
	return remaining, remaining > 0
}

func (l *Local) serveFile(w http.ResponseWriter, r *http.Request, key string, remaining time.Duration) {
	root, err := os.OpenRoot(l.dir)
	if err != nil {
		writeDetail(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	defer root.Close()
	f, fi, err := openRegular(root, key)
	if errors.Is(err, ErrNotFound) {
		writeDetail(w, http.StatusNotFound, detailNotFound)
		return
	}
	if err != nil {
		writeDetail(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	defer f.Close()
	h := w.Header()
	h.Set("Content-Type", readContentType(root, key))
	h.Set("X-Content-Type-Options", "nosniff") // the type is caller-supplied
	h.Set("Cache-Control", "private, max-age="+strconv.FormatInt(int64(remaining/time.Second), 10))
	// ServeContent handles HEAD, Range and conditional requests.
	http.ServeContent(w, r, path.Base(key), fi.ModTime(), f)
}

// ValidateKey reports whether key is a store key: 1 to MaxKeyLen characters
// of '/'-separated segments of [A-Za-z0-9._-], none empty, "." or "..".
// Errors wrap ErrInvalidKey.
func ValidateKey(key string) error {
	if key == "" || len(key) > MaxKeyLen {
		return fmt.Errorf("%w: %q must be 1 to %d characters", ErrInvalidKey, key, MaxKeyLen)
	}
	for seg := range strings.SplitSeq(key, "/") {
		if seg == "" || seg == "." || seg == ".." || !validSegment(seg) {
			return fmt.Errorf("%w: %q", ErrInvalidKey, key)
		}
	}
	return nil
}

func validSegment(seg string) bool {
	for _, c := range []byte(seg) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '.' || c == '_' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

func (l *Local) sign(key, expires string) string {
	return base64.RawURLEncoding.EncodeToString(l.mac(key, expires))
}

// mac signs the exact expires text from the URL, so any edit to it breaks
// the signature.
func (l *Local) mac(key, expires string) []byte {
	m := hmac.New(sha256.New, l.signingKey)
	m.Write([]byte(key + "\n" + expires))
	return m.Sum(nil)
}

func (l *Local) checkExists(key string) error {
	root, err := os.OpenRoot(l.dir)
	if err != nil {
		return fmt.Errorf("recording: open dir: %w", err)
	}
	defer root.Close()
	fi, err := root.Stat(key)
	if err != nil {
		return notFoundOr(err)
	}
	if !fi.Mode().IsRegular() {
		return ErrNotFound
	}
	return nil
}

func openRegular(root *os.Root, key string) (*os.File, fs.FileInfo, error) {
	f, err := root.Open(key)
	if err != nil {
		return nil, nil, notFoundOr(err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = ErrNotFound // e.g. key names a directory
	}
	if err != nil {
		_ = f.Close() // the Stat error is the one worth reporting
		return nil, nil, err
	}
	return f, fi, nil
}

// notFoundOr maps "no such file" errors, including a file where a directory
// was expected ("a.wav/b"), to ErrNotFound.
func notFoundOr(err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return ErrNotFound
	}
	return err
}

// writeAtomic writes r to a temp file next to name, fsyncs it and renames
// it over name, so name only ever holds a complete file.
func writeAtomic(ctx context.Context, root *os.Root, name string, r io.Reader) (n int64, err error) {
	dir := path.Dir(name)
	if err := root.MkdirAll(dir, dirPerm); err != nil {
		return 0, err
	}
	tmp := path.Join(dir, tmpPrefix+rand.Text())
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			_ = root.Remove(tmp)
		}
	}()
	n, err = io.Copy(f, ctxReader{ctx: ctx, r: r})
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, name)
	}
	if err == nil {
		err = syncDir(root, dir) // persist the rename itself
	}
	return n, err
}

func syncDir(root *os.Root, dir string) error {
	d, err := root.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// ctxReader stops a long copy once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

type metaFile struct {
	ContentType string `json:"contentType"`
}

func metaName(key string) string {
	return metaDir + "/" + key
}

// normalizeContentType rejects malformed types, which would otherwise end up
// in a response header, and guesses a type when none is given.
func normalizeContentType(key, ct string) (string, error) {
	if ct == "" {
		return typeByExtension(key), nil
	}
	if _, _, err := mime.ParseMediaType(ct); err != nil {
		return "", fmt.Errorf("recording: invalid content type %q: %w", ct, err)
	}
	return ct, nil
}

// readContentType falls back to the extension if the meta file is
// unreadable, e.g. for files placed in Dir by hand.
func readContentType(root *os.Root, key string) string {
	b, err := root.ReadFile(metaName(key))
	var m metaFile
	if err != nil || json.Unmarshal(b, &m) != nil || m.ContentType == "" {
		return typeByExtension(key)
	}
	return m.ContentType
}

func typeByExtension(key string) string {
	if ct := mime.TypeByExtension(path.Ext(key)); ct != "" {
		return ct
	}
	return "application/octet-stream"
}

func writeDetail(w http.ResponseWriter, code int, detail string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(struct {
		Detail string `json:"detail"`
	}{detail})
}
