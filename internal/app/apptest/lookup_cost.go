package apptest

import (
	"net/http"
	"sync"
)

// ReadCounter records the reads (GET and LIST, not watches) a process makes
// to the API server while counting is on.
type ReadCounter struct {
	Mu       sync.Mutex
	Counting bool
	Reads    []string
}

func (c *ReadCounter) Wrap(rt http.RoundTripper) http.RoundTripper {
	return RoundTripFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method == http.MethodGet && req.URL.Query().Get("watch") != "true" {
			c.Mu.Lock()
			if c.Counting {
				c.Reads = append(c.Reads, req.URL.Path)
			}
			c.Mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

func (c *ReadCounter) Count(on bool) []string {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	c.Counting = on
	return c.Reads
}

type RoundTripFunc func(*http.Request) (*http.Response, error)

func (f RoundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
