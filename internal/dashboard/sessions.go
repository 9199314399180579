package dashboard

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/internal/apikeys"
	"github.com/switchboard-dev/switchboard/internal/authlimit"
)

const (
	sessionCookie = "switchboard_session"
	// signInCookie carries the sign-in form's CSRF token (double submit):
	// there is no session yet to keep it in.
	signInCookie = "switchboard_sign_in"
	csrfField    = "csrf_token"
)

// session is one sign-in. It holds the digest of the key it was opened
// with, never the key: every request checks that digest against the key
// index again, so a revoked or expired key ends the session at once.
type session struct {
	id        string
	CSRF      string
	Namespace string
	keyDigest [32]byte
	expires   time.Time
	// flash is handed from a form's answer to the next page (flash.go).
	flash flashBox
}

// MaxSessionsPerKey bounds the live sessions of one API key: signing in
// once more ends the oldest, so a script signing in in a loop holds no
// more memory than a team of browsers.
const MaxSessionsPerKey = 16

// sessionSweepInterval is how often expired sessions are dropped, whether
// or not anyone signs in.
const sessionSweepInterval = time.Minute

// sessions are kept in this process's memory: a restart signs everyone
// out, and with several replicas a load balancer must keep a browser on
// one (sticky sessions).
type sessions struct {
	mu    sync.Mutex
	byID  map[string]*session
	byKey map[[32]byte][]*session // oldest first
	ttl   time.Duration
	now   func() time.Time
}

func newSessions(ttl time.Duration, now func() time.Time) *sessions {
	return &sessions{byID: map[string]*session{}, byKey: map[[32]byte][]*session{}, ttl: ttl, now: now}
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// open starts a session of the key with digest, ending the key's oldest
// when it has MaxSessionsPerKey already.
func (s *sessions) open(namespace string, digest [32]byte) *session {
	sess := &session{id: randomToken(), CSRF: randomToken(), Namespace: namespace, keyDigest: digest,
		expires: s.now().Add(s.ttl)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if live := s.byKey[digest]; len(live) >= MaxSessionsPerKey {
		s.drop(live[0])
	}
	s.byID[sess.id] = sess
	s.byKey[digest] = append(s.byKey[digest], sess)
	return sess
}

// sweepEvery drops expired sessions every interval until ctx ends.
func (s *sessions) sweepEvery(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.sweep()
		}
	}
}

func (s *sessions) sweep() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for _, sess := range s.byID {
		if !now.Before(sess.expires) {
			s.drop(sess)
		}
	}
}

// drop ends sess; the caller holds the lock.
func (s *sessions) drop(sess *session) {
	delete(s.byID, sess.id)
	live := slices.DeleteFunc(s.byKey[sess.keyDigest], func(o *session) bool { return o == sess })
	if len(live) == 0 {
		delete(s.byKey, sess.keyDigest)
		return
	}
	s.byKey[sess.keyDigest] = live
}

func (s *sessions) get(id string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.byID[id]
	if sess == nil {
		return nil
	}
	if !s.now().Before(sess.expires) {
		s.drop(sess)
		return nil
	}
	return sess
}

func (s *sessions) end(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess := s.byID[id]; sess != nil {
		s.drop(sess)
	}
}

type sessionKey struct{}

func sessionFrom(ctx context.Context) *session {
	s, _ := ctx.Value(sessionKey{}).(*session)
	return s
}

// organization is the signed-in organization (namespace).
func organization(ctx context.Context) string { return sessionFrom(ctx).Namespace }

// requireSession lets in requests of a live session whose key still
// authenticates its organization, and checks the CSRF token of every
// POST. Others go to the sign-in page.
func (d *dashboard) requireSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie(sessionCookie)
		if err != nil {
			d.toSignIn(w, r, "")
			return
		}
		sess := d.sessions.get(c.Value)
		if sess == nil {
			d.toSignIn(w, r, "expired")
			return
		}
		p, err := d.cfg.Keys.AuthenticateDigest(sess.keyDigest, d.cfg.Now())
		if err != nil || p.Namespace != sess.Namespace {
			d.sessions.end(sess.id)
			d.toSignIn(w, r, "revoked")
			return
		}
		if r.Method == http.MethodPost && !sameToken(r.PostFormValue(csrfField), sess.CSRF) {
			d.problem(w, r, http.StatusForbidden, "This form was sent without its security token (CSRF); reload the page and send it again.")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, sess)))
	})
}

func sameToken(got, want string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// toSignIn sends the browser to the sign-in page; htmx requests (a poll)
// are told to load it in place of the whole page.
func (d *dashboard) toSignIn(w http.ResponseWriter, r *http.Request, why string) {
	target := Prefix + "/sign-in"
	if why != "" {
		target += "?ended=" + why
	}
	d.clearCookie(w, sessionCookie)
	if r.Header.Get("HX-Request") == "true" {
		w.Header().Set("HX-Redirect", target)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if r.Method != http.MethodGet {
		d.problem(w, r, http.StatusUnauthorized, "You are signed out; sign in again and send the form again.")
		return
	}
	seeOther(w, r, target)
}

func (d *dashboard) cookie(name, value string, maxAge time.Duration) *http.Cookie {
	// Secure is off only in development (--dev), over plain http on loopback.
	return &http.Cookie{Name: name, Value: value, Path: Prefix, HttpOnly: true, Secure: !d.cfg.InsecureCookies, //nolint:gosec // see above
		SameSite: http.SameSiteStrictMode, MaxAge: int(maxAge.Seconds())}
}

func (d *dashboard) clearCookie(w http.ResponseWriter, name string) {
	c := d.cookie(name, "", 0) //nolint:gosec // the same attributes, expired
	c.MaxAge = -1
	http.SetCookie(w, c)
}

type signInData struct {
	CSRF  string
	Ended string
}

var endedMessages = map[string]string{
	"expired":    "Your session has expired; sign in again.",
	"revoked":    "The API key of your session was revoked or has expired; sign in with a valid key.",
	"signed-out": "You are signed out.",
}

func (d *dashboard) signInPage(w http.ResponseWriter, r *http.Request) {
	d.renderSignIn(w, r, http.StatusOK, endedMessages[r.URL.Query().Get("ended")], "")
}

func (d *dashboard) renderSignIn(w http.ResponseWriter, r *http.Request, status int, flash, problem string) {
	token := randomToken()
	http.SetCookie(w, d.cookie(signInCookie, token, time.Hour))
	d.render(w, r, status, "sign-in.html", page{Title: "Sign in", Flash: flash, Error: problem,
		Data: signInData{CSRF: token}})
}

// signIn exchanges an API key for a session.
func (d *dashboard) signIn(w http.ResponseWriter, r *http.Request) {
	c, err := r.Cookie(signInCookie)
	if err != nil || !sameToken(r.PostFormValue(csrfField), c.Value) {
		d.problem(w, r, http.StatusForbidden, "This form was sent without its security token (CSRF); reload the page and sign in again.")
		return
	}
	// The key first: a valid one is never refused for others' failures
	// (package authlimit).
	key := strings.TrimSpace(r.PostFormValue("api_key"))
	digest := apikeys.Digest([]byte(key))
	p, err := d.cfg.Keys.AuthenticateDigest(digest, d.cfg.Now())
	if err != nil {
		if wait := d.cfg.AuthFailures.Failed(d.cfg.AuthFailures.Client(r), d.cfg.Keys.Organization(digest)); wait > 0 {
			d.tooManyFailures(w, r, wait)
			return
		}
		d.renderSignIn(w, r, http.StatusUnauthorized, "", signInMessage(err))
		return
	}
	sess := d.sessions.open(p.Namespace, digest)
	d.clearCookie(w, signInCookie)
	http.SetCookie(w, d.cookie(sessionCookie, sess.id, d.cfg.SessionTTL))
	seeOther(w, r, Prefix+"/")
}

// tooManyFailures is the sign-in page of a client that failed to sign in
// too often (package authlimit).
func (d *dashboard) tooManyFailures(w http.ResponseWriter, r *http.Request, wait time.Duration) {
	retry := authlimit.RetryAfter(wait)
	w.Header().Set("Retry-After", retry)
	d.renderSignIn(w, r, http.StatusTooManyRequests, "",
		"Too many failed sign-ins from your address; try again in "+retry+" s.")
}

func signInMessage(err error) string {
	switch {
	case errors.Is(err, apikeys.ErrMissingKey):
		return "Enter your organization's API key."
	case errors.Is(err, apikeys.ErrExpiredKey):
		return "This API key has expired."
	}
	return "This API key is not valid."
}

func (d *dashboard) signOut(w http.ResponseWriter, r *http.Request) {
	d.sessions.end(sessionFrom(r.Context()).id)
	d.clearCookie(w, sessionCookie)
	seeOther(w, r, Prefix+"/sign-in?ended=signed-out")
}
