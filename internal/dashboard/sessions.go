package dashboard

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/internal/apikeys"
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

// sessions are kept in this process's memory: a restart signs everyone
// out, and with several replicas a load balancer must keep a browser on
// one (sticky sessions).
type sessions struct {
	mu   sync.Mutex
	byID map[string]*session
	ttl  time.Duration
	now  func() time.Time
}

func newSessions(ttl time.Duration, now func() time.Time) *sessions {
	return &sessions{byID: map[string]*session{}, ttl: ttl, now: now}
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

func (s *sessions) open(namespace string, digest [32]byte) *session {
	sess := &session{id: randomToken(), CSRF: randomToken(), Namespace: namespace, keyDigest: digest,
		expires: s.now().Add(s.ttl)}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep()
	s.byID[sess.id] = sess
	return sess
}

// sweep drops expired sessions; the caller holds the lock.
func (s *sessions) sweep() {
	now := s.now()
	for id, sess := range s.byID {
		if !now.Before(sess.expires) {
			delete(s.byID, id)
		}
	}
}

func (s *sessions) get(id string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.byID[id]
	if sess == nil || !s.now().Before(sess.expires) {
		delete(s.byID, id)
		return nil
	}
	return sess
}

func (s *sessions) end(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byID, id)
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
	key := strings.TrimSpace(r.PostFormValue("api_key"))
	digest := apikeys.Digest([]byte(key))
	p, err := d.cfg.Keys.AuthenticateDigest(digest, d.cfg.Now())
	if err != nil {
		d.renderSignIn(w, r, http.StatusUnauthorized, "", signInMessage(err))
		return
	}
	sess := d.sessions.open(p.Namespace, digest)
	d.clearCookie(w, signInCookie)
	http.SetCookie(w, d.cookie(sessionCookie, sess.id, d.cfg.SessionTTL))
	seeOther(w, r, Prefix+"/")
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
