package httpapi

import (
	"context"
	"mime"
	"net/http"
	"time"
)

// DefaultRequestTimeout bounds how long a request waits on what the API
// depends on (the apiserver, the history store).
const DefaultRequestTimeout = 10 * time.Second

// UploadTimeout bounds a multipart request (a campaign's CSV file): it
// reads and stores up to 500,000 contacts, seconds of work (100,000 take
// about 7 s on a 2-core machine), which a slower or busy machine would
// stretch past the 10 s of other requests. Its work is bounded by the
// upload's size limit, not by what it waits on, so the bound is longer.
const UploadTimeout = 2 * time.Minute

// withDeadline gives each request's context a deadline. An overloaded
// apiserver queues requests and answers 429, which client-go retries up to
// ten times: without a bound a create could wait minutes while the requests
// behind it pile up, each holding a connection. With it the request fails as
// 503 "safe to retry" (with Retry-After) and the load sheds. An upload gets
// UploadTimeout, or d when that is longer.
func withDeadline(d time.Duration) func(http.Handler) http.Handler {
	if d <= 0 {
		d = DefaultRequestTimeout
	}
	upload := max(d, UploadTimeout)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			limit := d
			if isUpload(r) {
				limit = upload
			}
			ctx, cancel := context.WithTimeout(r.Context(), limit)
			defer cancel()
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}

// isUpload: the request is a multipart POST (a CSV of contacts).
func isUpload(r *http.Request) bool {
	mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return r.Method == http.MethodPost && mediaType == "multipart/form-data"
}
