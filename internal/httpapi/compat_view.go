package httpapi

// The shapes of the hosted voice-AI service's SDK (retell-sdk, the version
// pinned in hack/sdk-compat), and their mapping onto Switchboard's: the
// call object is rendered from the /v1 call object, so both always say
// the same thing of a call; a list-calls body becomes a GET /v1/calls
// query. The compatibility table of api/README.md is the user's view of this file.

import (
	"bytes"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/callinput"
	"github.com/switchboard-dev/switchboard/internal/calls"
	"github.com/switchboard-dev/switchboard/internal/callview"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/phone"
	"github.com/switchboard-dev/switchboard/internal/validation"
)

// sdkCall is the SDK's phone call object (PhoneCallResponse, and
// V3PhoneCallResponse in lists). Fields Switchboard has no value for are
// left out, as the service leaves out those it has not filled yet:
// agent_version, agent_name, costs, latency, public logs.
type sdkCall struct {
	CallID              string           `json:"call_id"`
	CallType            string           `json:"call_type"`
	AgentID             string           `json:"agent_id,omitempty"`
	CallStatus          string           `json:"call_status"`
	Direction           string           `json:"direction"`
	FromNumber          string           `json:"from_number,omitempty"`
	ToNumber            string           `json:"to_number,omitempty"`
	StartTimestamp      *int64           `json:"start_timestamp,omitempty"`
	EndTimestamp        *int64           `json:"end_timestamp,omitempty"`
	DurationMS          *int64           `json:"duration_ms,omitempty"`
	DisconnectionReason string           `json:"disconnection_reason,omitempty"`
	RecordingURL        string           `json:"recording_url,omitempty"`
	Metadata            json.RawMessage  `json:"metadata,omitempty"`
	DynamicVariables    json.RawMessage  `json:"retell_llm_dynamic_variables,omitempty"`
	CallAnalysis        *sdkCallAnalysis `json:"call_analysis,omitempty"`
	// Transcript and TranscriptObject are on call.retrieve only, once the
	// call has a transcript (see sdkTranscript).
	Transcript       string         `json:"transcript,omitempty"`
	TranscriptObject []sdkUtterance `json:"transcript_object,omitempty"`
	// TranscriptWithToolCalls is transcript_object with a conversation's
	// tool calls woven in where they happened: sdkUtterance,
	// sdkToolCallInvocation and sdkToolCallResult items.
	TranscriptWithToolCalls []any `json:"transcript_with_tool_calls,omitempty"`
}

// sdkUtterance is the SDK's transcript_object item: role agent or user,
// content, and words (with their offsets where the recognizer gave them,
// else empty).
type sdkUtterance struct {
	Role    string          `json:"role"`
	Content string          `json:"content"`
	Words   []callview.Word `json:"words"`
}

// sdkToolCallInvocation and sdkToolCallResult are the SDK's
// transcript_with_tool_calls items of a tool call (ToolCallInvocationUtterance,
// ToolCallResultUtterance); successful is left out when not reported.
type sdkToolCallInvocation struct {
	Role       string `json:"role"`
	ToolCallID string `json:"tool_call_id"`
	Name       string `json:"name"`
	Arguments  string `json:"arguments"`
}

type sdkToolCallResult struct {
	Role       string `json:"role"`
	ToolCallID string `json:"tool_call_id"`
	Content    string `json:"content"`
	Successful *bool  `json:"successful,omitempty"`
}

// sdkTranscript fills the SDK's transcript, transcript_object and
// transcript_with_tool_calls from the call's transcript. The SDK's
// transcript and transcript_object hold the agent's and the user's
// utterances only, so keypresses (Switchboard's dtmf role, which the SDK
// keeps in another field) and tool calls are left out of them; tool calls
// are in transcript_with_tool_calls, beside the utterances, as the
// service's call object has them.
func (out *sdkCall) sdkTranscript(t callview.Transcript) {
	var text strings.Builder
	for _, u := range t.Utterances {
		switch u.Role {
		case callview.RoleAgent, callview.RoleUser:
			item := sdkUtterance{Role: u.Role, Content: u.Content, Words: u.Words}
			out.TranscriptObject = append(out.TranscriptObject, item)
			out.TranscriptWithToolCalls = append(out.TranscriptWithToolCalls, item)
			text.WriteString(callview.Line(u))
			text.WriteByte('\n')
		case callview.RoleToolCallInvocation:
			out.TranscriptWithToolCalls = append(out.TranscriptWithToolCalls, sdkToolCallInvocation{
				Role: u.Role, ToolCallID: u.ToolCallID, Name: u.Name, Arguments: u.Arguments})
		case callview.RoleToolCallResult:
			out.TranscriptWithToolCalls = append(out.TranscriptWithToolCalls, sdkToolCallResult{
				Role: u.Role, ToolCallID: u.ToolCallID, Content: u.Content, Successful: u.Successful})
		}
	}
	out.Transcript = text.String()
}

// sdkCallAnalysis is the SDK's call_analysis. call_successful and
// user_sentiment are left out: Switchboard's analysis judges neither.
type sdkCallAnalysis struct {
	CallSummary        string                     `json:"call_summary"`
	InVoicemail        bool                       `json:"in_voicemail"`
	CustomAnalysisData map[string]json.RawMessage `json:"custom_analysis_data"`
}

// sdkCallList is the body of list-calls (CallListResponse); a page is
// streamed as its items and then sdkCallListTail.
type sdkCallList struct {
	Items         []sdkCall `json:"items"`
	HasMore       bool      `json:"has_more"`
	PaginationKey *string   `json:"pagination_key,omitempty"`
}

type sdkCallListTail struct {
	HasMore       bool    `json:"has_more"`
	PaginationKey *string `json:"pagination_key,omitempty"`
}

// sdkStatuses maps a call's status to the SDK's call_status. The SDK's
// not_connected is never reported: a call that never connected (busy, no
// answer, ...) is ended, its disconnection_reason says why, as on /v1.
var sdkStatuses = map[string]string{
	string(switchboardv1.CallQueued):     "registered",
	string(switchboardv1.CallInProgress): "ongoing",
	string(switchboardv1.CallEnded):      "ended",
	string(switchboardv1.CallFailed):     "error",
}

// sdkReasons maps the disconnection reasons that the SDK spells otherwise;
// agent_hangup, user_hangup, dial_busy, dial_failed and
// invalid_destination are spelled alike, and a reason without an SDK
// counterpart is passed through unchanged.
var sdkReasons = map[string]string{
	"voicemail":     "voicemail_reached",
	"no_answer":     "dial_no_answer",
	"dial_rejected": "user_declined",
	"carrier_error": "telephony_provider_unavailable",
	"max_duration":  "max_duration_reached",
	"api_hangup":    "manual_stopped", // stopped through the API while out
	"canceled":      "manual_stopped", // stopped before it was dialed
}

// sdkCallOf renders a call object as the SDK's.
func sdkCallOf(c callview.Call) sdkCall {
	out := sdkCall{
		CallID:           c.CallID,
		CallType:         "phone_call",
		AgentID:          deref(c.AgentID),
		CallStatus:       sdkStatuses[c.Status],
		Direction:        c.Direction,
		FromNumber:       deref(c.FromNumber),
		ToNumber:         deref(c.ToNumber),
		StartTimestamp:   epochMillis(c.StartedAt),
		EndTimestamp:     epochMillis(c.EndedAt),
		DurationMS:       c.DurationMS,
		RecordingURL:     deref(c.RecordingURL),
		Metadata:         c.Metadata,
		DynamicVariables: c.Variables,
	}
	if r := deref(c.DisconnectionReason); r != "" {
		out.DisconnectionReason = r
		if mapped, ok := sdkReasons[r]; ok {
			out.DisconnectionReason = mapped
		}
	}
	if a := c.Analysis; a != nil {
		out.CallAnalysis = &sdkCallAnalysis{CallSummary: a.Summary, CustomAnalysisData: a.ExtractedData,
			InVoicemail: deref(c.Disposition) == string(switchboardv1.DispositionAnsweringMachine)}
	}
	return out
}

// epochMillis reads a call object's timestamp as milliseconds since the epoch.
func epochMillis(ts *string) *int64 {
	if ts == nil {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, *ts)
	if err != nil {
		return nil
	}
	return ptr(t.UnixMilli())
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// decodeCreatePhoneCall reads a create-phone-call body. It is a POST
// /v1/calls body under the aliases (override_agent_id,
// retell_llm_dynamic_variables) callinput.DecodeRequest already accepts, and
// validated as such; only a missing agent is reported under the SDK's
// name, since the SDK's callers never send agent_id.
func decodeCreatePhoneCall(body []byte, region string) (*calls.Request, []validation.Item) {
	req, errs := callinput.DecodeRequest(body, region)
	for i := range errs {
		if errs[i].Type == "missing" && slices.Equal(errs[i].Loc, []any{"body", "agent_id"}) {
			errs[i].Loc = []any{"body", "override_agent_id"}
			errs[i].Msg = "Field required: Switchboard binds no agent to a number, so every call names its agent"
		}
	}
	return req, errs
}

// sdkListFilters are the filter_criteria keys Switchboard can answer.
var sdkListFilters = []string{"agent", "call_status", "call_type", "direction", "start_timestamp", "to_number"}

// decodeSDKListCalls reads a list-calls body as a GET /v1/calls query.
// none reports a filter no call of Switchboard's can pass (web calls,
// inbound calls, not_connected). What the query cannot express is refused
// rather than ignored, so a caller never mistakes a wider list for the
// one asked for: several agents or statuses at once, ascending order,
// skip, include_total, and the filters not in sdkListFilters.
func decodeSDKListCalls(body []byte, region string) (q history.CallQuery, none bool, errs []validation.Item) {
	q = history.CallQuery{Limit: callinput.DefaultPageSize}
	if len(bytes.TrimSpace(body)) == 0 {
		return q, false, nil // the SDK's list() with no argument
	}
	obj, invalid := validation.ParseObject(body)
	if invalid != nil {
		return q, false, invalid
	}
	l := &sdkListDecoder{Object: obj, region: region, q: &q}
	l.limit()
	l.paginationKey()
	l.refuseUnless("sort_order", `"descending"`, "Switchboard lists calls newest first only: sort_order must be descending")
	l.refuseUnless("skip", "0", "Switchboard pages with pagination_key, not skip")
	l.refuseUnless("include_total", "false", "Switchboard does not count the matching calls: include_total must be false")
	l.filters()
	if len(l.Problems) > 0 {
		return q, false, l.Problems
	}
	return q, l.none, nil
}

type sdkListDecoder struct {
	*validation.Object
	// region is where a to_number without "+" is read.
	region string
	q      *history.CallQuery
	none   bool
}

// field returns a top-level field that holds a value (null is absent).
func (l *sdkListDecoder) field(name string) (json.RawMessage, bool) {
	raw, ok := l.Fields[name]
	return raw, ok && !isNull(raw)
}

func (l *sdkListDecoder) limit() {
	raw, ok := l.field("limit")
	if !ok {
		return
	}
	var n int
	loc := []any{"body", "limit"}
	switch err := json.Unmarshal(raw, &n); {
	case err != nil:
		l.Fail("int_type", loc, "Input should be a valid integer", decodeAny(raw), nil)
	case n < 1:
		l.Fail("greater_than_equal", loc, "Input should be greater than or equal to 1", n, map[string]any{"ge": 1})
	case n > callinput.MaxPageSize:
		l.Fail("less_than_equal", loc, "Input should be less than or equal to 1000", n,
			map[string]any{"le": callinput.MaxPageSize})
	default:
		l.q.Limit = n
	}
}

func (l *sdkListDecoder) paginationKey() {
	raw, ok := l.field("pagination_key")
	if !ok {
		return
	}
	var key string
	var after *history.Key
	if json.Unmarshal(raw, &key) == nil {
		after = callinput.ParseCursor(key)
	}
	if after == nil {
		l.Fail("value_error", []any{"body", "pagination_key"},
			"Value error, pass the pagination_key of the previous page, or none to start over", decodeAny(raw), nil)
		return
	}
	l.q.After = after
}

// refuseUnless refuses field unless it is absent or holds the JSON value
// want (the service's default).
func (l *sdkListDecoder) refuseUnless(field, want, msg string) {
	raw, ok := l.field(field)
	if !ok || jsonEqual(raw, want) {
		return
	}
	l.Fail("value_error", []any{"body", field}, "Value error, "+msg, decodeAny(raw), nil)
}

func jsonEqual(raw json.RawMessage, want string) bool {
	var a, b any
	return json.Unmarshal(raw, &a) == nil && json.Unmarshal([]byte(want), &b) == nil && reflect.DeepEqual(a, b)
}

func (l *sdkListDecoder) filters() {
	raw, ok := l.field("filter_criteria")
	if !ok {
		return
	}
	var criteria map[string]json.RawMessage
	if err := json.Unmarshal(raw, &criteria); err != nil {
		l.Fail("dict_type", []any{"body", "filter_criteria"}, "Input should be a valid dictionary", decodeAny(raw), nil)
		return
	}
	for _, k := range slices.Sorted(maps.Keys(criteria)) { // errors in a stable order
		raw, loc := criteria[k], []any{"body", "filter_criteria", k}
		if isNull(raw) {
			continue
		}
		switch k {
		case "agent":
			l.agentFilter(loc, raw)
		case "call_status":
			l.statusFilter(loc, raw)
		case "call_type":
			l.noneUnless(loc, raw, "phone_call")
		case "direction":
			l.noneUnless(loc, raw, "outbound")
		case "to_number":
			l.toNumberFilter(loc, raw)
		case "start_timestamp":
			l.timeFilter(loc, raw)
		default:
			l.Fail("value_error", loc, "Value error, Switchboard does not filter calls on "+k+"; it filters on "+
				validation.Expected(sdkListFilters), decodeAny(raw), nil)
		}
	}
}

// sdkFilter is one filter of filter_criteria: {op, type, value}.
type sdkFilter struct {
	Op    string          `json:"op"`
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

// filter decodes a filter whose op is one of ops.
func (l *sdkListDecoder) filter(loc []any, raw json.RawMessage, typ string, ops ...string) (sdkFilter, bool) {
	var f sdkFilter
	if err := json.Unmarshal(raw, &f); err != nil || f.Type != typ || !slices.Contains(ops, f.Op) {
		l.Fail("value_error", loc, "Value error, Switchboard answers this filter with type "+typ+
			" and op "+validation.Expected(ops), decodeAny(raw), nil)
		return f, false
	}
	return f, true
}

// oneOf decodes an enum filter's value list; Switchboard's list takes a
// single value, except where any value will do.
func (l *sdkListDecoder) oneOf(loc []any, raw json.RawMessage) ([]string, bool) {
	f, ok := l.filter(loc, raw, "enum", "in")
	if !ok {
		return nil, false
	}
	var values []string
	if err := json.Unmarshal(f.Value, &values); err != nil || len(values) == 0 {
		l.Fail("value_error", append(loc, "value"), "Value error, value should be a non-empty list of strings",
			decodeAny(f.Value), nil)
		return nil, false
	}
	return values, true
}

// noneUnless: a filter on a field whose value is always want passes every
// call when it lists want, and none otherwise.
func (l *sdkListDecoder) noneUnless(loc []any, raw json.RawMessage, want string) {
	if values, ok := l.oneOf(loc, raw); ok && !slices.Contains(values, want) {
		l.none = true
	}
}

func (l *sdkListDecoder) statusFilter(loc []any, raw json.RawMessage) {
	values, ok := l.oneOf(loc, raw)
	if !ok {
		return
	}
	if len(values) > 1 {
		l.Fail("value_error", append(loc, "value"), "Value error, Switchboard filters on one call_status at a time",
			values, nil)
		return
	}
	if values[0] == "not_connected" { // never reported: see sdkStatuses
		l.none = true
		return
	}
	for ours, theirs := range sdkStatuses {
		if theirs == values[0] {
			l.q.Status = ours
			return
		}
	}
	l.NotOneOf(append(loc, "value", 0), values[0], []string{"registered", "ongoing", "ended", "error", "not_connected"})
}

func (l *sdkListDecoder) agentFilter(loc []any, raw json.RawMessage) {
	var agents []struct {
		AgentID string `json:"agent_id"`
		Version []int  `json:"version"`
	}
	switch err := json.Unmarshal(raw, &agents); {
	case err != nil:
		l.Fail("list_type", loc, "Input should be a list of {agent_id, version}", decodeAny(raw), nil)
		return
	case len(agents) == 0:
		return
	case len(agents) > 1:
		l.Fail("value_error", loc, "Value error, Switchboard filters on one agent at a time", decodeAny(raw), nil)
		return
	case len(agents[0].Version) > 0:
		l.Fail("value_error", append(loc, 0, "version"), "Value error, Switchboard's agents have no versions",
			agents[0].Version, nil)
		return
	}
	id, ok := callinput.ParseAgentID(agents[0].AgentID)
	if !ok {
		l.Fail("uuid_parsing", append(loc, 0, "agent_id"), "Input should be a valid UUID", agents[0].AgentID, nil)
		return
	}
	l.q.AgentID = id
}

func (l *sdkListDecoder) toNumberFilter(loc []any, raw json.RawMessage) {
	f, ok := l.filter(loc, raw, "string", "eq")
	if !ok {
		return
	}
	var s string
	_ = json.Unmarshal(f.Value, &s)
	e164, ok := phone.Normalize(s, l.region)
	if !ok {
		l.Fail("value_error", append(loc, "value"), phone.Invalid("to_number"), decodeAny(f.Value), nil)
		return
	}
	l.q.ToNumber = e164
}

// timeFilter bounds the calls' acceptance time, the order Switchboard
// lists in (the SDK's start_timestamp, which is when a call went out,
// comes moments later). Values are epoch milliseconds, compared as a
// timestamp in whole milliseconds is: le 5 takes 5.9 ms.
func (l *sdkListDecoder) timeFilter(loc []any, raw json.RawMessage) {
	var f sdkFilter
	if json.Unmarshal(raw, &f) == nil && f.Type == "range" {
		if f, ok := l.filter(loc, raw, "range", "bt"); ok {
			var bounds []int64
			if err := json.Unmarshal(f.Value, &bounds); err != nil || len(bounds) != 2 {
				l.Fail("value_error", append(loc, "value"), "Value error, value should be [lower_bound, upper_bound]",
					decodeAny(f.Value), nil)
				return
			}
			l.atLeast(bounds[0])
			l.atMost(bounds[1])
		}
		return
	}
	f, ok := l.filter(loc, raw, "number", "eq", "gt", "ge", "lt", "le")
	if !ok {
		return
	}
	var ms int64
	if err := json.Unmarshal(f.Value, &ms); err != nil {
		l.Fail("int_type", append(loc, "value"), "Input should be a valid integer", decodeAny(f.Value), nil)
		return
	}
	switch f.Op {
	case "eq":
		l.atLeast(ms)
		l.atMost(ms)
	case "gt":
		l.atLeast(ms + 1)
	case "ge":
		l.atLeast(ms)
	case "lt":
		l.atMost(ms - 1)
	case "le":
		l.atMost(ms)
	}
}

// atLeast and atMost bound the acceptance time in whole milliseconds; the
// query's bounds are exclusive.
func (l *sdkListDecoder) atLeast(ms int64) {
	l.q.CreatedAfter = time.UnixMilli(ms).Add(-time.Nanosecond).UTC()
}

func (l *sdkListDecoder) atMost(ms int64) {
	l.q.CreatedBefore = time.UnixMilli(ms + 1).UTC()
}
