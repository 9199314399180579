package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// The one place that writes JSON, so every response, error or not, has the
// documented shape and content type.

func writeJSON(w http.ResponseWriter, status int, v any) {
	// Links are written as they are ("&", not "\u0026"): this is an API,
	// not HTML.
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		body.Reset()
		body.WriteString(`{"detail":"Internal Server Error"}` + "\n")
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(body.Bytes())
}

// stringDetail is the error body for auth and not-found errors.
type stringDetail struct {
	Detail string `json:"detail"`
}

func writeDetail(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, stringDetail{Detail: msg})
}

// ErrorDetail is the `detail` object of create-call errors (spec section 7).
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

// ValidationItem is one entry of a 422 validation-array detail.
type ValidationItem struct {
	Type  string         `json:"type"`
	Loc   []any          `json:"loc"`
	Msg   string         `json:"msg"`
	Input any            `json:"input"`
	Ctx   map[string]any `json:"ctx,omitempty"`
}

type validationDetail struct {
	Detail []ValidationItem `json:"detail"`
}

func writeValidation(w http.ResponseWriter, items []ValidationItem) {
	writeJSON(w, http.StatusUnprocessableEntity, validationDetail{Detail: items})
}

func ptr[T any](v T) *T { return &v }
