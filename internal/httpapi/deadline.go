package httpapi

import (
	"context"
	"net/http"
	"time"
)

// DefaultRequestTimeout bounds how long a request waits on what the API
// depends on (the apiserver, the history store).
const DefaultRequestTimeout = 10 * time.Second

// withDeadline gives each request's context a deadline. An overloaded
// apiserver queues requests and answers 429, which client-go retries up to
// ten times: without a bound a create could wait minutes while the requests
// behind it pile up, each holding a connection. With it the request fails as
// 503 "safe to retry" (with Retry-After) and the load sheds.
func withDeadline(d time.Duration) func(http.Handler) http.Handler {
	if d <= 0 {
		d = DefaultRequestTimeout
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx, cancel := context.WithTimeout(r.Context(), d)
			defer cancel()
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}
