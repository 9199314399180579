package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/switchboard-dev/switchboard/internal/validation"
)

// MaxBodyBytes bounds a request body (create-call and webhook endpoints);
// a longer one is 413. What a body may hold is package callinput's and
// the webhook endpoint decoding's business.
const MaxBodyBytes = 64 << 10

// readBody reads a request body of at most MaxBodyBytes. When it cannot, it
// answers the request itself (413 for a longer body) and reports false.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	return readBodyWithin(w, r, MaxBodyBytes)
}

// readBodyWithin is readBody with another limit than MaxBodyBytes.
func readBodyWithin(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		writeDetail(w, http.StatusRequestEntityTooLarge,
			fmt.Sprintf("The request body is larger than the limit of %d bytes (%s).", limit, sizeOf(limit)))
		return nil, false
	case err != nil:
		writeValidation(w, []validation.Item{{Type: "body_read_error", Loc: []any{"body"},
			Msg: "The request body could not be read.", Input: nil}})
		return nil, false
	}
	return body, true
}

// sizeOf is a limit for people: 64 KiB, 32 MiB.
func sizeOf(n int64) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d KiB", n>>10)
}
