package httpapi

import (
	"bytes"
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/webhook"
	"github.com/switchboard-dev/switchboard/internal/webhook/deliveries"
	"github.com/switchboard-dev/switchboard/internal/webhook/endpoints"
)

// Bounds of an endpoint's fields; the WebhookEndpoint CRD enforces the same.
const (
	maxURLLength         = 2048
	maxDescriptionLength = 512
)

// Page sizes of the list endpoints.
const (
	defaultPageSize = 20
	maxPageSize     = 100
	// Calls are listed in larger pages (an export walks them all).
	defaultCallPageSize = 50
	maxCallPageSize     = 1000
)

// endpointRequest is a decoded create or update body.
type endpointRequest = endpoints.Change

// decodeEndpoint validates a POST (create) or PATCH (!create) body. On a
// create, url is required; on a PATCH, null resets events (to all kinds)
// and description (to ""), while url and disabled cannot be null. The URL
// policy is the caller's business: it needs the network.
func decodeEndpoint(body []byte, create bool) (*endpointRequest, []ValidationItem) {
	d := &decoder{}
	if errs := d.parseObject(body); errs != nil {
		return nil, errs
	}
	req := &endpointRequest{}
	if raw, ok := d.fields["url"]; ok {
		req.URL, req.URLSet = d.webhookURL(raw)
	} else if create {
		d.fail("missing", "url", "Field required", nil)
	}
	if raw, ok := d.fields["events"]; ok {
		req.Events, req.EventsSet = d.events(raw)
	}
	if raw, ok := d.fields["description"]; ok {
		req.Description, req.DescriptionSet = d.description(raw)
	}
	if raw, ok := d.fields["disabled"]; ok {
		req.Disabled, req.DisabledSet = d.boolean("disabled", raw)
	}
	if len(d.errs) > 0 {
		return nil, d.errs
	}
	if create {
		req.URLSet, req.EventsSet, req.DescriptionSet, req.DisabledSet = true, true, true, true
	}
	return req, nil
}

func (d *decoder) webhookURL(raw json.RawMessage) (string, bool) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil || isNull(raw) {
		d.fail("string_type", "url", "Input should be a valid string", raw)
		return "", false
	}
	if utf8.RuneCountInString(s) > maxURLLength {
		d.failCtx("string_too_long", []any{"body", "url"}, "String should have at most "+
			strconv.Itoa(maxURLLength)+" characters", s, map[string]any{"max_length": maxURLLength})
		return "", false
	}
	return s, true
}

// events decodes a list of distinct kinds; null and [] mean all kinds.
func (d *decoder) events(raw json.RawMessage) ([]switchboardv1.WebhookEventType, bool) {
	if isNull(raw) {
		return nil, true
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		d.fail("list_type", "events", "Input should be a valid list", raw)
		return nil, false
	}
	before := len(d.errs)
	var kinds []switchboardv1.WebhookEventType
	seen := map[string]bool{}
	for i, item := range items {
		loc := []any{"body", "events", i}
		var s string
		if err := json.Unmarshal(item, &s); err != nil || isNull(item) {
			d.failCtx("string_type", loc, "Input should be a valid string", decodeAny(item), nil)
			continue
		}
		switch {
		case !webhook.ValidKind(s):
			d.failCtx("enum", loc, "Input should be "+expectedList(webhook.Kinds), s,
				map[string]any{"expected": expectedList(webhook.Kinds)})
		case seen[s]:
			d.failCtx("value_error", loc, "Value error, "+s+" is listed more than once", s, nil)
		default:
			seen[s] = true
			kinds = append(kinds, switchboardv1.WebhookEventType(s))
		}
	}
	return kinds, len(d.errs) == before
}

func (d *decoder) description(raw json.RawMessage) (string, bool) {
	if isNull(raw) {
		return "", true
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		d.fail("string_type", "description", "Input should be a valid string", raw)
		return "", false
	}
	if utf8.RuneCountInString(s) > maxDescriptionLength {
		d.failCtx("string_too_long", []any{"body", "description"}, "String should have at most "+
			strconv.Itoa(maxDescriptionLength)+" characters", s, map[string]any{"max_length": maxDescriptionLength})
		return "", false
	}
	return s, true
}

func (d *decoder) boolean(field string, raw json.RawMessage) (bool, bool) {
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil || isNull(raw) {
		d.fail("bool_type", field, "Input should be a valid boolean", raw)
		return false, false
	}
	return b, true
}

// decodeTestEvent reads the body of POST .../test: empty, {} or
// {"event": kind}; the kind defaults to call.ended.
func decodeTestEvent(body []byte) (string, []ValidationItem) {
	if len(bytes.TrimSpace(body)) == 0 {
		return webhook.EventCallEnded, nil
	}
	d := &decoder{}
	if errs := d.parseObject(body); errs != nil {
		return "", errs
	}
	raw, ok := d.fields["event"]
	if !ok || isNull(raw) {
		return webhook.EventCallEnded, nil
	}
	var kind string
	if err := json.Unmarshal(raw, &kind); err != nil {
		d.fail("string_type", "event", "Input should be a valid string", raw)
		return "", d.errs
	}
	if !webhook.ValidKind(kind) {
		d.failCtx("enum", []any{"body", "event"}, "Input should be "+expectedList(webhook.Kinds), kind,
			map[string]any{"expected": expectedList(webhook.Kinds)})
		return "", d.errs
	}
	return kind, nil
}

func (d *decoder) failCtx(typ string, loc []any, msg string, input any, ctx map[string]any) {
	d.errs = append(d.errs, ValidationItem{Type: typ, Loc: loc, Msg: msg, Input: input, Ctx: ctx})
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func decodeAny(raw json.RawMessage) any {
	var v any
	_ = json.Unmarshal(raw, &v)
	return v
}

// expectedList is pydantic's wording of an enum: 'a', 'b' or 'c'.
func expectedList(values []string) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = "'" + v + "'"
	}
	if len(quoted) < 2 {
		return strings.Join(quoted, "")
	}
	return strings.Join(quoted[:len(quoted)-1], ", ") + " or " + quoted[len(quoted)-1]
}

// pageQuery is the limit and cursor of a list request.
type pageQuery struct {
	Limit  int
	Cursor string
}

// deliveryQuery is a GET .../deliveries query.
type deliveryQuery struct {
	pageQuery
	Status string // "" or a phase
	Event  string // "" or a kind or "test"
}

var (
	deliveryStatuses = []string{string(history.DeliveryPending), string(history.DeliverySucceeded),
		string(history.DeliveryFailed)}
	deliveryEvents = append(append([]string(nil), webhook.Kinds...), webhook.EventTest)
)

// decodePage reads limit (1..100, default 20) and cursor, which must look
// like an id of the listed resource (valid reports that).
func decodePage(q url.Values, valid func(string) bool, pattern string) (pageQuery, []ValidationItem) {
	return decodePageSized(q, defaultPageSize, maxPageSize, valid, pattern)
}

// decodePageSized is decodePage with another default and maximum limit.
func decodePageSized(q url.Values, defaultSize, maxSize int, valid func(string) bool, pattern string) (pageQuery, []ValidationItem) {
	d := &decoder{}
	page := pageQuery{Limit: defaultSize}
	if q.Has("limit") {
		s := q.Get("limit")
		n, err := strconv.Atoi(strings.TrimSpace(s))
		loc := []any{"query", "limit"}
		switch {
		case err != nil:
			d.failCtx("int_parsing", loc, "Input should be a valid integer, unable to parse string as an integer", s, nil)
		case n < 1:
			d.failCtx("greater_than_equal", loc, "Input should be greater than or equal to 1", s, map[string]any{"ge": 1})
		case n > maxSize:
			d.failCtx("less_than_equal", loc, "Input should be less than or equal to "+strconv.Itoa(maxSize), s,
				map[string]any{"le": maxSize})
		default:
			page.Limit = n
		}
	}
	if q.Has("cursor") {
		page.Cursor = q.Get("cursor")
		if !valid(page.Cursor) {
			d.failCtx("string_pattern_mismatch", []any{"query", "cursor"}, "String should match pattern '"+pattern+"'",
				page.Cursor, map[string]any{"pattern": pattern})
		}
	}
	return page, d.errs
}

func decodeDeliveryQuery(q url.Values) (deliveryQuery, []ValidationItem) {
	page, errs := decodePage(q, deliveries.ValidID, deliveries.IDPattern)
	dq := deliveryQuery{pageQuery: page}
	d := &decoder{errs: errs}
	if q.Has("status") {
		dq.Status = q.Get("status")
		if !slices.Contains(deliveryStatuses, dq.Status) {
			d.failCtx("enum", []any{"query", "status"}, "Input should be "+expectedList(deliveryStatuses), dq.Status,
				map[string]any{"expected": expectedList(deliveryStatuses)})
		}
	}
	if q.Has("event") {
		dq.Event = q.Get("event")
		if !slices.Contains(deliveryEvents, dq.Event) {
			d.failCtx("enum", []any{"query", "event"}, "Input should be "+expectedList(deliveryEvents), dq.Event,
				map[string]any{"expected": expectedList(deliveryEvents)})
		}
	}
	return dq, d.errs
}

// unknownCursor is the 422 of a well-formed cursor that names nothing in
// the list (deleted since, or from another list).
func unknownCursor(cursor string) ValidationItem {
	return ValidationItem{Type: "value_error", Loc: []any{"query", "cursor"},
		Msg:   "Value error, cursor " + cursor + " is not in this list; pass next_cursor of the previous page, or no cursor to start over",
		Input: cursor}
}
