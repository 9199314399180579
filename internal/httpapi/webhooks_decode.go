package httpapi

import (
	"bytes"
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"unicode/utf8"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/validation"
	"github.com/switchboard-dev/switchboard/internal/webhook"
	"github.com/switchboard-dev/switchboard/internal/webhook/deliveries"
	"github.com/switchboard-dev/switchboard/internal/webhook/endpoints"
)

// Bounds of an endpoint's fields; the WebhookEndpoint CRD enforces the same.
const (
	maxURLLength         = 2048
	maxDescriptionLength = 512
)

// Page sizes of the webhook lists (calls: callinput's).
const (
	defaultPageSize = 20
	maxPageSize     = 100
)

// endpointRequest is a decoded create or update body.
type endpointRequest = endpoints.Change

// endpointDecoder decodes one create or update body, collecting every
// problem.
type endpointDecoder struct{ *validation.Object }

// decodeEndpoint validates a POST (create) or PATCH (!create) body. On a
// create, url is required; on a PATCH, null resets events (to the call events)
// and description (to ""), while url and disabled cannot be null. The URL
// policy is the caller's business: it needs the network.
func decodeEndpoint(body []byte, create bool) (*endpointRequest, []validation.Item) {
	obj, invalid := validation.ParseObject(body)
	if invalid != nil {
		return nil, invalid
	}
	d := endpointDecoder{obj}
	req := &endpointRequest{}
	if raw, ok := d.Fields["url"]; ok {
		req.URL, req.URLSet = d.webhookURL(raw)
	} else if create {
		d.FailField("missing", "url", "Field required", nil)
	}
	if raw, ok := d.Fields["events"]; ok {
		req.Events, req.EventsSet = d.events(raw)
	}
	if raw, ok := d.Fields["description"]; ok {
		req.Description, req.DescriptionSet = d.description(raw)
	}
	if raw, ok := d.Fields["disabled"]; ok {
		req.Disabled, req.DisabledSet = d.boolean("disabled", raw)
	}
	if len(d.Problems) > 0 {
		return nil, d.Problems
	}
	if create {
		req.URLSet, req.EventsSet, req.DescriptionSet, req.DisabledSet = true, true, true, true
	}
	return req, nil
}

func (d endpointDecoder) webhookURL(raw json.RawMessage) (string, bool) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil || isNull(raw) {
		d.FailField("string_type", "url", "Input should be a valid string", raw)
		return "", false
	}
	if utf8.RuneCountInString(s) > maxURLLength {
		d.Fail("string_too_long", []any{"body", "url"}, "String should have at most "+
			strconv.Itoa(maxURLLength)+" characters", s, map[string]any{"max_length": maxURLLength})
		return "", false
	}
	return s, true
}

// events decodes a list of distinct kinds; null and [] mean the call events.
func (d endpointDecoder) events(raw json.RawMessage) ([]switchboardv1.WebhookEventType, bool) {
	if isNull(raw) {
		return nil, true
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		d.FailField("list_type", "events", "Input should be a valid list", raw)
		return nil, false
	}
	before := len(d.Problems)
	var kinds []switchboardv1.WebhookEventType
	seen := map[string]bool{}
	for i, item := range items {
		loc := []any{"body", "events", i}
		var s string
		if err := json.Unmarshal(item, &s); err != nil || isNull(item) {
			d.Fail("string_type", loc, "Input should be a valid string", decodeAny(item), nil)
			continue
		}
		switch {
		case !webhook.ValidKind(s):
			d.NotOneOf(loc, s, webhook.Kinds)
		case seen[s]:
			d.Fail("value_error", loc, "Value error, "+s+" is listed more than once", s, nil)
		default:
			seen[s] = true
			kinds = append(kinds, switchboardv1.WebhookEventType(s))
		}
	}
	return kinds, len(d.Problems) == before
}

func (d endpointDecoder) description(raw json.RawMessage) (string, bool) {
	if isNull(raw) {
		return "", true
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		d.FailField("string_type", "description", "Input should be a valid string", raw)
		return "", false
	}
	if utf8.RuneCountInString(s) > maxDescriptionLength {
		d.Fail("string_too_long", []any{"body", "description"}, "String should have at most "+
			strconv.Itoa(maxDescriptionLength)+" characters", s, map[string]any{"max_length": maxDescriptionLength})
		return "", false
	}
	return s, true
}

func (d endpointDecoder) boolean(field string, raw json.RawMessage) (bool, bool) {
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil || isNull(raw) {
		d.FailField("bool_type", field, "Input should be a valid boolean", raw)
		return false, false
	}
	return b, true
}

// decodeTestEvent reads the body of POST .../test: empty, {} or
// {"event": kind}; the kind defaults to call.ended.
func decodeTestEvent(body []byte) (string, []validation.Item) {
	if len(bytes.TrimSpace(body)) == 0 {
		return webhook.EventCallEnded, nil
	}
	d, invalid := validation.ParseObject(body)
	if invalid != nil {
		return "", invalid
	}
	raw, ok := d.Fields["event"]
	if !ok || isNull(raw) {
		return webhook.EventCallEnded, nil
	}
	var kind string
	if err := json.Unmarshal(raw, &kind); err != nil {
		d.FailField("string_type", "event", "Input should be a valid string", raw)
		return "", d.Problems
	}
	if !webhook.ValidCallKind(kind) {
		d.NotOneOf([]any{"body", "event"}, kind, webhook.CallKinds)
		return "", d.Problems
	}
	return kind, nil
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func decodeAny(raw json.RawMessage) any {
	var v any
	_ = json.Unmarshal(raw, &v)
	return v
}

// deliveryQuery is a GET .../deliveries query.
type deliveryQuery struct {
	validation.Page
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
func decodePage(q url.Values, valid func(string) bool, pattern string) (validation.Page, []validation.Item) {
	return validation.DecodePage(q, defaultPageSize, maxPageSize, valid, pattern)
}

func decodeDeliveryQuery(q url.Values) (deliveryQuery, []validation.Item) {
	page, errs := decodePage(q, deliveries.ValidID, deliveries.IDPattern)
	dq := deliveryQuery{Page: page}
	problems := validation.Problems(errs)
	if q.Has("status") {
		dq.Status = q.Get("status")
		if !slices.Contains(deliveryStatuses, dq.Status) {
			problems.NotOneOf([]any{"query", "status"}, dq.Status, deliveryStatuses)
		}
	}
	if q.Has("event") {
		dq.Event = q.Get("event")
		if !slices.Contains(deliveryEvents, dq.Event) {
			problems.NotOneOf([]any{"query", "event"}, dq.Event, deliveryEvents)
		}
	}
	return dq, problems
}

// unknownCursor is the 422 of a well-formed cursor that names nothing in
// the list (deleted since, or from another list).
func unknownCursor(cursor string) validation.Item {
	return validation.Item{Type: "value_error", Loc: []any{"query", "cursor"},
		Msg:   "Value error, cursor " + cursor + " is not in this list; pass next_cursor of the previous page, or no cursor to start over",
		Input: cursor}
}
