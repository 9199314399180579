package apptest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/httpapi/openapitest"
)

// Contract sends requests to the running operator and checks each
// exchange against the OpenAPI document the operator serves.
type Contract struct {
	T *testing.T
	V *openapitest.Validator
}

// Exchange is one request to send. Valid says whether the document
// accepts the request: some are sent to see the API refuse them, and the
// document must refuse them too.
type Exchange struct {
	Method, Path string
	Key          string // "" sends no Authorization header
	Body         any    // nil, a string sent as is, or a value sent as JSON
	Header       http.Header
	Valid        bool
	Want         []int // acceptable statuses
}

// Do sends x, checks its status, and validates the request and the
// response against the document.
func (c *Contract) Do(x Exchange) Response {
	c.T.Helper()
	var raw []byte
	switch b := x.Body.(type) {
	case nil:
	case string:
		raw = []byte(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			c.T.Fatal(err)
		}
		raw = j
	}
	req, err := http.NewRequestWithContext(context.Background(), x.Method, Operator.BaseURL+x.Path, bytes.NewReader(raw))
	if err != nil {
		c.T.Fatal(err)
	}
	if x.Body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if x.Key != "" {
		req.Header.Set("Authorization", "Bearer "+x.Key)
	}
	for k, vs := range x.Header {
		req.Header[k] = vs
	}
	name := x.Method + " " + x.Path
	switch err := c.V.Request(req, raw); {
	case x.Valid && err != nil:
		c.T.Errorf("%s: the API takes this request, the OpenAPI document refuses it:\n  %v", name, err)
	case !x.Valid && err == nil:
		c.T.Errorf("%s: the API refuses this request, the OpenAPI document accepts it", name)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.T.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		c.T.Fatal(err)
	}
	if !slices.Contains(x.Want, resp.StatusCode) {
		c.T.Fatalf("%s = %d %s, want %v", name, resp.StatusCode, body, x.Want)
	}
	if err := c.V.Response(req, raw, resp.StatusCode, resp.Header, body); err != nil {
		c.T.Errorf("%s: the %d response does not match the OpenAPI document:\n  %v\n  body: %s", name, resp.StatusCode, err, body)
	}
	r := Response{Status: resp.StatusCode, Header: resp.Header, Raw: body}
	if len(body) > 0 {
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			c.T.Fatalf("%s: invalid JSON %q: %v", name, body, err)
		}
		r.Body, _ = v.(map[string]any)
	}
	return r
}
