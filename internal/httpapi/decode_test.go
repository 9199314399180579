package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

func TestReadBody(t *testing.T) {
	read := func(n int) (*httptest.ResponseRecorder, []byte, bool) {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/v1/calls", strings.NewReader(strings.Repeat(" ", n)))
		body, ok := readBody(rec, r)
		return rec, body, ok
	}
	if _, body, ok := read(MaxBodyBytes); !ok || len(body) != MaxBodyBytes {
		t.Fatalf("a body of exactly %d bytes: ok %v, %d bytes read", MaxBodyBytes, ok, len(body))
	}
	rec, _, ok := read(MaxBodyBytes + 1)
	if ok || rec.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("a body of %d bytes: ok %v, status %d", MaxBodyBytes+1, ok, rec.Code)
	}
	var detail struct {
		Detail string `json:"detail"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &detail); err != nil || !strings.Contains(detail.Detail, strconv.Itoa(MaxBodyBytes)) {
		t.Fatalf("413 body %s: want a string detail naming the limit", rec.Body)
	}
}
