package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/internal/apikeys"
	"github.com/switchboard-dev/switchboard/internal/authlimit"
	"github.com/switchboard-dev/switchboard/internal/quota"
)

type principalKey struct{}

// organization is the namespace of the authenticated caller.
func organization(ctx context.Context) string {
	p, _ := ctx.Value(principalKey{}).(apikeys.Principal)
	return p.Namespace
}

// authenticate admits requests bearing a valid, unexpired API key and
// attaches the key's organization. Keys are never logged or echoed. The
// key is looked at first, so a valid key is served whatever others failed
// from the same address (an ingress's, say); a client's failures beyond
// its budget are answered 429 instead of 401 (package authlimit).
func authenticate(keys *apikeys.Index, failures *authlimit.Limiter, now func() time.Time) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			key, problem := bearer(r.Header.Get("Authorization"))
			if problem != "" {
				w.Header().Set("WWW-Authenticate", `Bearer realm="switchboard"`)
				writeDetail(w, http.StatusUnauthorized, problem)
				return
			}
			digest := apikeys.Digest([]byte(key))
			p, err := keys.AuthenticateDigest(digest, now())
			if err != nil {
				if wait := failures.Failed(failures.Client(r), keys.Organization(digest)); wait > 0 {
					writeTooManyFailures(w, wait)
					return
				}
				w.Header().Set("WWW-Authenticate", `Bearer realm="switchboard", error="invalid_token"`)
				writeDetail(w, http.StatusUnauthorized, authMessage(err))
				return
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
		})
	}
}

// writeTooManyFailures is the 429 of a client that failed to authenticate
// too often, in the shape of the API's other 429s.
func writeTooManyFailures(w http.ResponseWriter, wait time.Duration) {
	w.Header().Set("Retry-After", authlimit.RetryAfter(wait))
	writeErrorDetail(w, http.StatusTooManyRequests, ErrorDetail{ErrorCode: quota.CodeRateLimited,
		Error: "Too many failed authentications from this client; retry after the Retry-After header's seconds."})
}

// The details of a 401 for a request whose Authorization header carries no
// key: absent, or not in the one form the API takes.
const (
	missingKey      = "Missing API key: send the header Authorization: Bearer <API key>."
	malformedHeader = "The Authorization header is not of the form Bearer <API key>."
)

// bearer returns the API key of an Authorization header, or the detail of
// the 401 that says what is wrong with the header.
func bearer(header string) (key, problem string) {
	header = strings.TrimSpace(header)
	scheme, token, _ := strings.Cut(header, " ")
	switch {
	case header == "":
		return "", missingKey
	case !strings.EqualFold(scheme, "Bearer"):
		// Another scheme, or a key sent without "Bearer ".
		return "", malformedHeader
	}
	if token = strings.TrimSpace(token); token == "" {
		return "", missingKey
	}
	return token, ""
}

func authMessage(err error) string {
	switch {
	case errors.Is(err, apikeys.ErrExpiredKey):
		return "API key has expired."
	case errors.Is(err, apikeys.ErrMissingKey):
		return missingKey
	default:
		return "Invalid API key."
	}
}
