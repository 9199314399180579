package httpapi

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/idempotency"
	"github.com/switchboard-dev/switchboard/internal/validation"
)

// The one place that writes JSON, so every response, error or not, has the
// documented shape and content type.

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := encodeJSON(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"detail":"Internal Server Error"}`+"\n")
	}
	writeRaw(w, status, body)
}

// encodeJSON encodes v as every response body is encoded. Links are written
// as they are ("&", not "\u0026"): this is an API, not HTML.
func encodeJSON(v any) ([]byte, error) {
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return body.Bytes(), err
}

// writeRaw writes a JSON body already encoded (a replayed response).
func writeRaw(w http.ResponseWriter, status int, body []byte) {
	writeJSONHeader(w, status)
	_, _ = w.Write(body) //nolint:gosec // JSON served as application/json with nosniff, never rendered as HTML
}

// writeJSONHeader sends status with the headers of a JSON body, which
// follows (in one piece, or streamed: a list of calls).
func writeJSONHeader(w http.ResponseWriter, status int) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
}

// reply is a response decided before it is written, so that it can be
// stored and replayed (idempotent create). placed says the request created
// a Call.
type reply struct {
	status int
	body   any
	placed bool
	// call is the Call a 201 placed.
	call *switchboardv1.Call
	// retryAfter, when set, is sent as Retry-After (seconds).
	retryAfter string
	// uncertain: the call may have been created though this reply says it
	// was not (idempotency.Response.Uncertain).
	uncertain bool
}

// retryAfterSeconds is d as Retry-After: whole seconds, rounded up.
func retryAfterSeconds(d time.Duration) string {
	return strconv.Itoa(int(math.Ceil(d.Seconds())))
}

func writeReply(w http.ResponseWriter, r reply) {
	if r.retryAfter != "" {
		w.Header().Set("Retry-After", r.retryAfter)
	}
	writeJSON(w, r.status, r.body)
}

// response is r encoded for the idempotency store.
func (r reply) response() idempotency.Response {
	body, err := encodeJSON(r.body)
	if err != nil {
		return idempotency.Response{Status: http.StatusInternalServerError, Body: []byte(`{"detail":"Internal Server Error"}` + "\n")}
	}
	return idempotency.Response{Status: r.status, Body: body, Placed: r.placed, Uncertain: r.uncertain,
		RetryAfter: r.retryAfter}
}

// unavailableReply is 503: something Switchboard depends on did not
// answer; msg says it is safe to retry.
func unavailableReply(msg string) reply {
	return reply{status: http.StatusServiceUnavailable, body: stringDetail{Detail: msg}, retryAfter: "1"}
}

func errorReply(status int, d ErrorDetail) reply {
	return reply{status: status, body: objectDetail{Detail: d}}
}

// validationReply is a 422 validation array, each input clipped and its
// credentials redacted.
func validationReply(items []validation.Item) reply {
	echoed := make([]validation.Item, len(items))
	for i, item := range items {
		echoed[i] = clipItem(item)
	}
	return reply{status: http.StatusUnprocessableEntity, body: validationDetail{Detail: echoed}}
}

// stringDetail is the error body for auth and not-found errors.
type stringDetail struct {
	Detail string `json:"detail"`
}

func writeDetail(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, stringDetail{Detail: msg})
}

// ErrorDetail is the `detail` object of create-call errors: error, error_code and the code's own fields.
type ErrorDetail struct {
	Error              string   `json:"error"`
	ErrorCode          string   `json:"error_code"`
	CallID             *string  `json:"call_id"`
	ExpectedFromNumber *string  `json:"expected_from_number"`
	MissingVariables   []string `json:"missing_variables"`
}

type objectDetail struct {
	Detail ErrorDetail `json:"detail"`
}

func writeErrorDetail(w http.ResponseWriter, status int, d ErrorDetail) {
	writeJSON(w, status, objectDetail{Detail: d})
}

type validationDetail struct {
	Detail []validation.Item `json:"detail"`
}

func writeValidation(w http.ResponseWriter, items []validation.Item) {
	writeReply(w, validationReply(items))
}

// MaxEchoedInputChars bounds what a validation error quotes back of the
// caller's input: a longer input (a string, or the JSON text of any other
// value) or location key is cut to this many characters followed by "…",
// so a 422 stays short and readable whatever was sent.
const MaxEchoedInputChars = 256

// clipItem is item as a 422 quotes it: credentials redacted (before the
// clip, which could cut a URL's "@" and leave its password bare), its
// input and location keys clipped.
func clipItem(item validation.Item) validation.Item {
	item = validation.RedactItem(item)
	item.Input = clipInput(item.Input)
	loc := make([]any, len(item.Loc))
	for i, step := range item.Loc {
		if s, ok := step.(string); ok {
			step = clip(validation.Redact(s))
		}
		loc[i] = step
	}
	item.Loc = loc
	return item
}

func clipInput(in any) any {
	switch v := in.(type) {
	case nil:
		return nil
	case string:
		return clip(v)
	}
	var text bytes.Buffer
	enc := json.NewEncoder(&text)
	enc.SetEscapeHTML(false)
	if enc.Encode(in) != nil {
		return nil
	}
	if s := strings.TrimSuffix(text.String(), "\n"); utf8.RuneCountInString(s) > MaxEchoedInputChars {
		return clip(s)
	}
	return in
}

// clip cuts s to MaxEchoedInputChars characters and a "…".
func clip(s string) string {
	n := 0
	for i := range s {
		if n == MaxEchoedInputChars {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

func ptr[T any](v T) *T { return &v }
