package apptest

import (
	"strings"
	"testing"
)

// Fetch GETs an absolute URL without credentials, as a browser would.
func Fetch(t *testing.T, url string) Response {
	t.Helper()
	path := strings.TrimPrefix(url, Operator.BaseURL)
	return Do(t, "GET", path, "", nil)
}
