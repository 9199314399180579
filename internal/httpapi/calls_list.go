package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"net/http"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/callinput"
	"github.com/switchboard-dev/switchboard/internal/calls"
	"github.com/switchboard-dev/switchboard/internal/callview"
	"github.com/switchboard-dev/switchboard/internal/history"
)

// DefaultPageBytes is the JSON a page of calls may hold by default: a
// page of 1,000 calls of ordinary size fits; one of calls with tens of
// kilobytes of metadata and variables each ends early.
const DefaultPageBytes = 4 << 20

// callListTail closes the body of GET /v1/calls, shaped like the other
// lists: {"data": [call...], "has_more": ..., "next_cursor": ...}.
type callListTail struct {
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
}

// listCalls implements GET /v1/calls: the organization's calls newest
// first, live and archived together.
func (a *api) listCalls(w http.ResponseWriter, r *http.Request) {
	q, invalid := callinput.DecodeQuery(r.URL.Query(), a.cfg.DefaultRegion)
	if invalid != nil {
		writeValidation(w, invalid)
		return
	}
	a.streamCalls(w, r, q, pageFormat{array: "data",
		item: func(c callview.Call) any { return c },
		tail: func(more bool, cursor *string) any { return callListTail{HasMore: more, NextCursor: cursor} }})
}

// pageFormat is how a list of calls is written: the name of its array, the
// shape of each item, and the fields after the array.
type pageFormat struct {
	array string
	item  func(callview.Call) any
	tail  func(more bool, cursor *string) any
}

// streamCalls writes the page of the caller's calls matching q as it reads
// them, one call at a time, so that a request holds one call's JSON (and
// the store's current chunk, see calls.Book.Each), not the page. The page
// ends early, with has_more and the cursor of its last call, before the
// call that would take its calls' JSON past the byte budget; its first
// call is always sent, so paging always advances.
//
// The status is written with the first call: the first call is read and
// rendered before anything is sent, so that a store or cache that fails
// up front is still a 503. Once the header is out a failure cannot change
// the status; the response is then cut short (http.ErrAbortHandler), so
// the client sees a broken body, never a page that looks complete.
func (a *api) streamCalls(w http.ResponseWriter, r *http.Request, q history.CallQuery, f pageFormat) {
	release, ok := a.beginRead(w, r)
	if !ok {
		return
	}
	defer release()
	ctx := r.Context()
	p := &pageWriter{w: w, f: f, budget: a.pageBytes()}
	for c, err := range a.cfg.Calls.Each(ctx, organization(ctx), q) {
		var item []byte
		if err == nil && p.n < q.Limit {
			item, err = a.encodeItem(ctx, c, f)
		}
		switch {
		case err != nil:
			a.listFailed(w, p, err)
			return
		case p.n == q.Limit || !p.fits(item):
			p.finish(true)
			return
		}
		p.add(item, c)
	}
	p.finish(false)
}

// encodeItem is c as a page's item, in JSON.
func (a *api) encodeItem(ctx context.Context, c *switchboardv1.Call, f pageFormat) ([]byte, error) {
	view, err := callview.Render(ctx, c, a.cfg.Recordings)
	if err != nil {
		return nil, fmt.Errorf("rendering call: %w", err)
	}
	item, err := encodeJSON(f.item(view))
	return bytes.TrimSuffix(item, []byte("\n")), err
}

// listFailed answers 503 if nothing was sent yet, else cuts the response.
func (a *api) listFailed(w http.ResponseWriter, p *pageWriter, err error) {
	if !p.started {
		a.unavailable(w, err, "listing calls", "The calls could not be listed")
		return
	}
	a.cfg.Log.Error(err, "listing calls after the first; response cut short")
	panic(http.ErrAbortHandler)
}

func (a *api) pageBytes() int {
	if a.cfg.PageBytes > 0 {
		return a.cfg.PageBytes
	}
	return DefaultPageBytes
}

// pageWriter writes a page of calls item by item.
type pageWriter struct {
	w       http.ResponseWriter
	f       pageFormat
	budget  int
	started bool
	// n items take written bytes; last is the key of the last one.
	n, written int
	last       history.Key
}

// fits: item may follow the items written within the budget.
func (p *pageWriter) fits(item []byte) bool {
	return p.n == 0 || p.written+len(item) <= p.budget
}

func (p *pageWriter) add(item []byte, c *switchboardv1.Call) {
	sep := ","
	if !p.started {
		p.start()
		sep = ""
	}
	p.write(sep)
	_, _ = p.w.Write(item)
	p.n++
	p.written += len(item)
	p.last = history.KeyOf(c)
}

func (p *pageWriter) start() {
	p.started = true
	writeJSONHeader(p.w, http.StatusOK)
	p.write(`{"` + p.f.array + `":[`)
}

// finish closes the array and writes the tail: more says calls follow
// the last one written.
func (p *pageWriter) finish(more bool) {
	if !p.started {
		p.start()
	}
	var cursor *string
	if more {
		cursor = ptr(calls.EncodeCursor(p.last))
	}
	tail, err := encodeJSON(p.f.tail(more, cursor))
	if err != nil {
		panic(http.ErrAbortHandler) // a struct of a bool and a string encodes
	}
	// The tail's own object, opened by the array: `],` then its fields.
	p.write("],")
	_, _ = p.w.Write(tail[1:])
}

func (p *pageWriter) write(s string) { _, _ = p.w.Write([]byte(s)) }

// beginRead takes one of the organization's read slots, or answers 429
// rate_limited with Retry-After, in the shape of the create-call limits.
func (a *api) beginRead(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	release, refused := a.cfg.Reads.Begin(organization(r.Context()))
	if refused != nil {
		res := errorReply(http.StatusTooManyRequests, ErrorDetail{Error: refused.Message, ErrorCode: refused.Code})
		res.retryAfter = retryAfterSeconds(refused.RetryAfter)
		writeReply(w, res)
		return nil, false
	}
	return release, true
}
