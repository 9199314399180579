package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A CSV upload has UploadTimeout to be read and stored; every other
// request the API's own bound.
func TestUploadsHaveTheirOwnDeadline(t *testing.T) {
	var left time.Duration
	h := withDeadline(3 * time.Second)(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		deadline, _ := r.Context().Deadline()
		left = time.Until(deadline)
	}))
	for _, tc := range []struct {
		contentType string
		min, max    time.Duration
	}{
		{"application/json", 0, 3 * time.Second},
		{"multipart/form-data; boundary=x", 3 * time.Second, UploadTimeout},
		{"Multipart/Form-Data; boundary=x", 3 * time.Second, UploadTimeout},
	} {
		r := httptest.NewRequest(http.MethodPost, "/v1/campaigns", strings.NewReader(""))
		r.Header.Set("Content-Type", tc.contentType)
		h.ServeHTTP(httptest.NewRecorder(), r)
		if left <= tc.min || left > tc.max {
			t.Errorf("%s: deadline in %v, want in (%v, %v]", tc.contentType, left, tc.min, tc.max)
		}
	}
}
