package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/internal/apikeys"
)

type principalKey struct{}

// organization is the namespace of the authenticated caller.
func organization(ctx context.Context) string {
	p, _ := ctx.Value(principalKey{}).(apikeys.Principal)
	return p.Namespace
}

// authenticate admits requests bearing a valid, unexpired API key and
// attaches the key's organization. Keys are never logged or echoed.
func authenticate(keys *apikeys.Index, now func() time.Time) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			key, ok := bearer(r.Header.Get("Authorization"))
			if !ok {
				w.Header().Set("WWW-Authenticate", `Bearer realm="switchboard"`)
				writeDetail(w, http.StatusUnauthorized, "Missing API key: send the header Authorization: Bearer <API key>.")
				return
			}
			p, err := keys.Authenticate(key, now())
			if err != nil {
				w.Header().Set("WWW-Authenticate", `Bearer realm="switchboard", error="invalid_token"`)
				writeDetail(w, http.StatusUnauthorized, authMessage(err))
				return
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
		})
	}
}

func bearer(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

func authMessage(err error) string {
	switch {
	case errors.Is(err, apikeys.ErrExpiredKey):
		return "API key has expired."
	case errors.Is(err, apikeys.ErrMissingKey):
		return "Missing API key: send the header Authorization: Bearer <API key>."
	default:
		return "Invalid API key."
	}
}
