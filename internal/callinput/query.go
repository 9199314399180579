package callinput

import (
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/internal/calls"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/phone"
	"github.com/switchboard-dev/switchboard/internal/validation"
)

// Page sizes of a list of calls, larger than other lists' (an export
// walks them all).
const (
	DefaultPageSize = 50
	MaxPageSize     = 1000
)

// queryDecoder decodes the filters of one list query, collecting every
// problem.
type queryDecoder struct {
	values url.Values
	validation.Problems
}

// DecodeQuery decodes and validates the filters, limit (1..MaxPageSize,
// default DefaultPageSize) and cursor of a list of calls (GET /v1/calls,
// the dashboard's calls page); a to_number without "+" is read in region.
// It returns every problem found, or none.
func DecodeQuery(v url.Values, region string) (history.CallQuery, []validation.Item) {
	page, problems := validation.DecodePage(v, DefaultPageSize, MaxPageSize,
		func(s string) bool { return ParseCursor(s) != nil }, cursorPattern)
	d := &queryDecoder{values: v, Problems: problems}
	q := history.CallQuery{Limit: page.Limit}
	if page.Cursor != "" {
		q.After = calls.DecodeCursor(page.Cursor)
	}
	q.Status = d.enum("status", calls.Statuses)
	q.Disposition = d.enum("disposition", calls.Dispositions)
	q.Source = d.enum("source", calls.Sources)
	q.AgentID = d.agentID()
	q.ToNumber = d.phone("to_number", region)
	q.CreatedAfter = d.time("created_after")
	q.CreatedBefore = d.time("created_before")
	return q, d.Problems
}

func (d *queryDecoder) enum(field string, allowed []string) string {
	if !d.values.Has(field) {
		return ""
	}
	s := d.values.Get(field)
	if !slices.Contains(allowed, s) {
		d.NotOneOf([]any{"query", field}, s, allowed)
		return ""
	}
	return s
}

func (d *queryDecoder) agentID() string {
	if !d.values.Has("agent_id") {
		return ""
	}
	s := d.values.Get("agent_id")
	id, ok := ParseAgentID(s)
	if !ok {
		d.Fail("uuid_parsing", []any{"query", "agent_id"}, "Input should be a valid UUID", s, nil)
	}
	return id
}

func (d *queryDecoder) phone(field, region string) string {
	if !d.values.Has(field) {
		return ""
	}
	s := d.values.Get(field)
	e164, ok := phone.Normalize(s, region)
	if !ok {
		d.Fail("value_error", []any{"query", field}, phone.Invalid(field), s, nil)
	}
	return e164
}

func (d *queryDecoder) time(field string) time.Time {
	if !d.values.Has(field) {
		return time.Time{}
	}
	s := d.values.Get(field)
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		d.Fail("datetime_from_date_parsing", []any{"query", field},
			"Input should be a valid datetime in RFC 3339, for example 2026-01-31T09:00:00Z", s, nil)
		return time.Time{}
	}
	return t
}

var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// ParseAgentID reads an agent id a list is filtered by: a UUID with its
// dashes, in either case; it returns it lowercased, as agents are stored.
func ParseAgentID(s string) (string, bool) {
	if !uuidPattern.MatchString(s) {
		return "", false
	}
	return strings.ToLower(s), true
}

// A cursor of a list of calls is calls.EncodeCursor's (opaque to
// clients), and no longer than a call's place in the order can be.
const cursorPattern = `^[A-Za-z0-9_-]{1,200}$`

var cursorChars = regexp.MustCompile(cursorPattern)

// ParseCursor reads a cursor of a list of calls: the call whose page it
// follows; nil when s is not such a cursor.
func ParseCursor(s string) *history.Key {
	if !cursorChars.MatchString(s) {
		return nil
	}
	return calls.DecodeCursor(s)
}
