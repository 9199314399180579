package apptest

// Recordings are deleted after --recording-retention, once their call has
// left the cluster; the archived call stays, without its recording.

import (
	"net/http"
	"testing"
)

// FetchStatus GETs a recording link as a browser would.
func FetchStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url) //nolint:noctx // test
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}
