package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/internal/calls"
	"github.com/switchboard-dev/switchboard/internal/callview"
	"github.com/switchboard-dev/switchboard/internal/history"
)

// callList is the body of GET /v1/calls, shaped like the other lists.
type callList struct {
	Data       []callview.Call `json:"data"`
	HasMore    bool            `json:"has_more"`
	NextCursor *string         `json:"next_cursor"`
}

// listCalls implements GET /v1/calls: the organization's calls newest
// first, live and archived together.
func (a *api) listCalls(w http.ResponseWriter, r *http.Request) {
	q, invalid := decodeCallQuery(r.URL.Query(), a.cfg.DefaultRegion)
	if invalid != nil {
		writeValidation(w, invalid)
		return
	}
	out, err := a.callPage(r.Context(), q)
	if err != nil {
		a.unavailable(w, err, "listing calls", "The calls could not be listed")
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// callPage is one page of the caller's calls matching q, rendered as call
// objects, with the cursor of the next page. GET /v1/calls and the SDK's
// list-calls (compat.go) share it.
func (a *api) callPage(ctx context.Context, q history.CallQuery) (callList, error) {
	page, err := a.cfg.Calls.List(ctx, organization(ctx), q)
	if err != nil {
		return callList{}, err
	}
	out := callList{Data: make([]callview.Call, 0, len(page.Calls)), HasMore: page.More}
	for i := range page.Calls {
		view, err := callview.Render(ctx, &page.Calls[i], a.cfg.Recordings)
		if err != nil {
			return callList{}, fmt.Errorf("rendering call: %w", err)
		}
		out.Data = append(out.Data, view)
	}
	if page.More {
		out.NextCursor = ptr(encodeCallCursor(history.KeyOf(&page.Calls[len(page.Calls)-1])))
	}
	return out, nil
}

// decodeCallQuery reads the filters, limit (1..1000, default 50) and cursor
// of GET /v1/calls.
func decodeCallQuery(v url.Values, region string) (history.CallQuery, []ValidationItem) {
	page, errs := decodePageSized(v, defaultCallPageSize, maxCallPageSize, validCallCursor, callCursorPattern)
	d := &decoder{errs: errs}
	q := history.CallQuery{Limit: page.Limit}
	if page.Cursor != "" {
		q.After = decodeCallCursor(page.Cursor)
	}
	q.Status = d.queryEnum(v, "status", calls.Statuses)
	q.Disposition = d.queryEnum(v, "disposition", calls.Dispositions)
	q.Source = d.queryEnum(v, "source", calls.Sources)
	q.AgentID = d.queryAgentID(v)
	q.ToNumber = d.queryPhone(v, "to_number", region)
	q.CreatedAfter = d.queryTime(v, "created_after")
	q.CreatedBefore = d.queryTime(v, "created_before")
	return q, d.errs
}

func (d *decoder) queryEnum(v url.Values, field string, allowed []string) string {
	if !v.Has(field) {
		return ""
	}
	s := v.Get(field)
	if !slices.Contains(allowed, s) {
		d.failCtx("enum", []any{"query", field}, "Input should be "+expectedList(allowed), s,
			map[string]any{"expected": expectedList(allowed)})
		return ""
	}
	return s
}

func (d *decoder) queryAgentID(v url.Values) string {
	if !v.Has("agent_id") {
		return ""
	}
	s := v.Get("agent_id")
	if !uuidPattern.MatchString(s) {
		d.failCtx("uuid_parsing", []any{"query", "agent_id"}, "Input should be a valid UUID", s, nil)
		return ""
	}
	return strings.ToLower(s)
}

var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func (d *decoder) queryPhone(v url.Values, field, region string) string {
	if !v.Has(field) {
		return ""
	}
	s := v.Get(field)
	e164, ok := normalizePhone(s, region)
	if !ok {
		d.failCtx("value_error", []any{"query", field}, phoneError(field), s, nil)
	}
	return e164
}

func (d *decoder) queryTime(v url.Values, field string) time.Time {
	if !v.Has(field) {
		return time.Time{}
	}
	s := v.Get(field)
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		d.failCtx("datetime_from_date_parsing", []any{"query", field},
			"Input should be a valid datetime in RFC 3339, for example 2026-01-31T09:00:00Z", s, nil)
		return time.Time{}
	}
	return t
}

// A call cursor is opaque to clients: the last call's place in the order
// (acceptance time in nanoseconds and call id), base64url-encoded. Unlike an
// id cursor it stays valid after its call has left the cluster.
const callCursorPattern = `^[A-Za-z0-9_-]{1,200}$`

var callCursorChars = regexp.MustCompile(callCursorPattern)

func encodeCallCursor(k history.Key) string { return calls.EncodeCursor(k) }

func decodeCallCursor(s string) *history.Key { return calls.DecodeCursor(s) }

func validCallCursor(s string) bool {
	return callCursorChars.MatchString(s) && decodeCallCursor(s) != nil
}

// DecodeCallQuery reads the filters, limit and cursor of a list of calls
// as GET /v1/calls does, for the dashboard's calls page.
func DecodeCallQuery(v url.Values, region string) (history.CallQuery, []ValidationItem) {
	return decodeCallQuery(v, region)
}
