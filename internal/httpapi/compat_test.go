package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/calls"
	"github.com/switchboard-dev/switchboard/internal/callview"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/telephony"
)

func TestSDKCallOf(t *testing.T) {
	base := func(status string) callview.Call {
		return callview.Call{CallID: "call_4a35433fba4ee9a8dde28705f8a6f374",
			AgentID: ptr("7f2c1e9a-3b4d-4c5e-8f60-1a2b3c4d5e6f"), Direction: "outbound", Status: status,
			Source: ptr("api"), ToNumber: ptr("+14155551234"), FromNumber: ptr("+14155550100"),
			Variables: json.RawMessage(`{"customer_name":"Ada"}`), Metadata: json.RawMessage(`{"order":7}`)}
	}
	const head = `{"call_id":"call_4a35433fba4ee9a8dde28705f8a6f374","call_type":"phone_call",` +
		`"agent_id":"7f2c1e9a-3b4d-4c5e-8f60-1a2b3c4d5e6f",`
	const numbers = `"direction":"outbound","from_number":"+14155550100","to_number":"+14155551234",`
	const tail = `"metadata":{"order":7},"retell_llm_dynamic_variables":{"customer_name":"Ada"}`
	tests := []struct {
		name string
		call func() callview.Call
		want string
	}{
		{name: "queued: registered, nothing happened yet",
			call: func() callview.Call { return base("queued") },
			want: head + `"call_status":"registered",` + numbers + tail + `}`},
		{name: "in progress: ongoing, started",
			call: func() callview.Call {
				c := base("in_progress")
				c.StartedAt = ptr("2026-11-22T00:43:16.065Z")
				return c
			},
			want: head + `"call_status":"ongoing",` + numbers + `"start_timestamp":1795308196065,` + tail + `}`},
		{name: "answered, recorded, analyzed",
			call: func() callview.Call {
				c := base("ended")
				c.Disposition, c.DisconnectionReason = ptr("answered"), ptr("agent_hangup")
				c.StartedAt, c.EndedAt, c.DurationMS = ptr("2026-11-22T00:43:16.065Z"), ptr("2026-11-22T00:43:21.065Z"), ptr(int64(4000))
				c.RecordingURL = ptr("http://127.0.0.1:8080/recordings/demo/call.wav?expires=1&sig=x")
				c.Analysis = &callview.Analysis{Summary: "Spoke for 4 seconds.",
					ExtractedData: map[string]json.RawMessage{"confirmed": json.RawMessage("true"), "party_size": json.RawMessage("null")}}
				return c
			},
			want: head + `"call_status":"ended",` + numbers + `"start_timestamp":1795308196065,"end_timestamp":1795308201065,` +
				`"duration_ms":4000,"disconnection_reason":"agent_hangup",` +
				`"recording_url":"http://127.0.0.1:8080/recordings/demo/call.wav?expires=1&sig=x",` + tail +
				`,"call_analysis":{"call_summary":"Spoke for 4 seconds.","in_voicemail":false,` +
				`"custom_analysis_data":{"confirmed":true,"party_size":null}}}`},
		{name: "voicemail: in_voicemail, the SDK's reason",
			call: func() callview.Call {
				c := base("ended")
				c.Disposition, c.DisconnectionReason = ptr("answering_machine"), ptr("voicemail")
				c.Analysis = &callview.Analysis{Summary: "Left a message.", ExtractedData: map[string]json.RawMessage{}}
				return c
			},
			want: head + `"call_status":"ended",` + numbers + `"disconnection_reason":"voicemail_reached",` + tail +
				`,"call_analysis":{"call_summary":"Left a message.","in_voicemail":true,"custom_analysis_data":{}}}`},
		{name: "never went out: error",
			call: func() callview.Call {
				c := base("failed")
				c.FromNumber = nil
				return c
			},
			want: head + `"call_status":"error","direction":"outbound","to_number":"+14155551234",` + tail + `}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			writeJSON(rec, http.StatusOK, sdkCallOf(tt.call()))
			if got := strings.TrimSuffix(rec.Body.String(), "\n"); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// Every status a call can have has an SDK call_status.
func TestSDKStatuses(t *testing.T) {
	for _, s := range calls.Statuses {
		if sdkStatuses[s] == "" {
			t.Errorf("status %s has no call_status", s)
		}
	}
}

// The disconnection reasons Switchboard's carriers report (packages sim,
// sip and its engine) are all among the SDK's (its DisconnectionReason enum).
func TestSDKReasons(t *testing.T) {
	sdkEnum := map[string]bool{}
	for _, r := range strings.Fields(`user_hangup agent_hangup call_transfer voicemail_reached ivr_reached inactivity
		max_duration_reached concurrency_limit_reached no_concurrency_fallback no_valid_payment scam_detected dial_busy
		dial_failed dial_no_answer invalid_destination telephony_provider_permission_denied telephony_provider_unavailable
		sip_routing_error marked_as_spam user_declined error_llm_websocket_open error_llm_websocket_lost_connection
		error_llm_websocket_runtime error_llm_websocket_corrupt_payload error_no_audio_received error_asr error_retell
		error_unknown error_user_not_joined registered_call_timeout transfer_bridged transfer_cancelled manual_stopped
		call_take_over`) {
		sdkEnum[r] = true
	}
	ours := []string{"agent_hangup", "user_hangup", "voicemail", "max_duration", "no_answer", "dial_busy",
		"dial_rejected", "dial_failed", "invalid_destination", "carrier_error", "api_hangup", "canceled",
		"call_transfer", "transfer_bridged"}
	for _, r := range ours {
		got := sdkCallOf(callview.Call{DisconnectionReason: ptr(r)}).DisconnectionReason
		if !sdkEnum[got] {
			t.Errorf("disconnection_reason %s renders as %q, not one of the SDK's", r, got)
		}
	}
	if got := sdkCallOf(callview.Call{DisconnectionReason: ptr("something_new")}).DisconnectionReason; got != "something_new" {
		t.Errorf("an unmapped reason renders as %q, want it unchanged", got)
	}
}

func TestDecodeCreatePhoneCall(t *testing.T) {
	const agent = "7f2c1e9a-3b4d-4c5e-8f60-1a2b3c4d5e6f"
	// What the SDK sends for client.call.createPhoneCall(...).
	req, errs := decodeCreatePhoneCall([]byte(`{"from_number":"+14155550100","to_number":"+14155551234",
		"override_agent_id":"`+agent+`","override_agent_version":2,"retell_llm_dynamic_variables":{"customer_name":"Ada"},
		"metadata":{"order":7},"agent_override":{"agent":{"voice_id":"x"}},"custom_sip_headers":{"X-A":"b"}}`), "US")
	if errs != nil {
		t.Fatalf("errors: %+v", errs)
	}
	if req.AgentID != agent || req.FromNumber != "+14155550100" || req.ToNumber != "+14155551234" ||
		req.Variables["customer_name"] != "Ada" || string(req.Metadata) != `{"order":7}` {
		t.Fatalf("got %+v", req)
	}

	// Without an agent: reported under the SDK's field name.
	_, errs = decodeCreatePhoneCall([]byte(`{"from_number":"+14155550100","to_number":"+1415"}`), "US")
	var got []string
	for _, e := range errs {
		got = append(got, fmt.Sprintf("%s@%v", e.Type, e.Loc))
	}
	if want := []string{"missing@[body override_agent_id]", "value_error@[body to_number]"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("errors = %v, want %v", got, want)
	}
	if !strings.Contains(errs[0].Msg, "names its agent") {
		t.Errorf("message %q does not say why", errs[0].Msg)
	}
}

func TestDecodeSDKListCalls(t *testing.T) {
	const agent = "7F2C1E9A-3B4D-4C5E-8F60-1A2B3C4D5E6F"
	cursor := calls.EncodeCursor(history.Key{CreatedAt: time.Unix(1795308196, 65e6).UTC(), CallID: "call_4a35433fba4ee9a8dde28705f8a6f374"})
	ms := func(n int64) time.Time { return time.UnixMilli(n).UTC() }
	tests := []struct {
		name     string
		body     string
		want     history.CallQuery
		none     bool
		wantErrs []string // "type@loc"
	}{
		{name: "no body", body: ``, want: history.CallQuery{Limit: 50}},
		{name: "the SDK's default", body: `{}`, want: history.CallQuery{Limit: 50}},
		{name: "every supported field",
			body: `{"limit":10,"pagination_key":"` + cursor + `","sort_order":"descending","skip":0,"include_total":false,
				"filter_criteria":{"agent":[{"agent_id":"` + agent + `"}],"call_status":{"op":"in","type":"enum","value":["ended"]},
				"call_type":{"op":"in","type":"enum","value":["phone_call","web_call"]},
				"direction":{"op":"in","type":"enum","value":["outbound"]},
				"to_number":{"op":"eq","type":"string","value":"(415) 555-1234"},
				"start_timestamp":{"op":"bt","type":"range","value":[1000,2000]}}}`,
			want: history.CallQuery{Limit: 10, After: calls.DecodeCursor(cursor), AgentID: strings.ToLower(agent),
				Status: "ended", ToNumber: "+14155551234",
				CreatedAfter: ms(1000).Add(-time.Nanosecond), CreatedBefore: ms(2001)}},
		{name: "statuses map back", body: `{"filter_criteria":{"call_status":{"op":"in","type":"enum","value":["registered"]}}}`,
			want: history.CallQuery{Limit: 50, Status: "queued"}},
		{name: "error is failed", body: `{"filter_criteria":{"call_status":{"op":"in","type":"enum","value":["error"]}}}`,
			want: history.CallQuery{Limit: 50, Status: "failed"}},
		{name: "nulls are absent", body: `{"limit":null,"filter_criteria":{"agent":null,"user_sentiment":null}}`,
			want: history.CallQuery{Limit: 50}},
		{name: "gt", body: `{"filter_criteria":{"start_timestamp":{"op":"gt","type":"number","value":1000}}}`,
			want: history.CallQuery{Limit: 50, CreatedAfter: ms(1001).Add(-time.Nanosecond)}},
		{name: "le", body: `{"filter_criteria":{"start_timestamp":{"op":"le","type":"number","value":1000}}}`,
			want: history.CallQuery{Limit: 50, CreatedBefore: ms(1001)}},
		{name: "lt", body: `{"filter_criteria":{"start_timestamp":{"op":"lt","type":"number","value":1000}}}`,
			want: history.CallQuery{Limit: 50, CreatedBefore: ms(1000)}},
		{name: "eq is that millisecond", body: `{"filter_criteria":{"start_timestamp":{"op":"eq","type":"number","value":1000}}}`,
			want: history.CallQuery{Limit: 50, CreatedAfter: ms(1000).Add(-time.Nanosecond), CreatedBefore: ms(1001)}},
		{name: "web calls only: none", body: `{"filter_criteria":{"call_type":{"op":"in","type":"enum","value":["web_call"]}}}`,
			want: history.CallQuery{Limit: 50}, none: true},
		{name: "inbound only: none", body: `{"filter_criteria":{"direction":{"op":"in","type":"enum","value":["inbound"]}}}`,
			want: history.CallQuery{Limit: 50}, none: true},
		{name: "not_connected: none", body: `{"filter_criteria":{"call_status":{"op":"in","type":"enum","value":["not_connected"]}}}`,
			want: history.CallQuery{Limit: 50}, none: true},

		{name: "not an object", body: `[1]`, wantErrs: []string{"model_attributes_type@[body]"}},
		{name: "limits", body: `{"limit":1001}`, wantErrs: []string{"less_than_equal@[body limit]"}},
		{name: "limit type", body: `{"limit":"ten"}`, wantErrs: []string{"int_type@[body limit]"}},
		{name: "foreign pagination key", body: `{"pagination_key":"119c3f8e47135a29e65947eeb34cf12d"}`,
			wantErrs: []string{"value_error@[body pagination_key]"}},
		{name: "what the list cannot do is refused",
			body:     `{"sort_order":"ascending","skip":20,"include_total":true}`,
			wantErrs: []string{"value_error@[body sort_order]", "value_error@[body skip]", "value_error@[body include_total]"}},
		{name: "several agents or statuses",
			body: `{"filter_criteria":{"agent":[{"agent_id":"` + agent + `"},{"agent_id":"` + agent + `"}],
				"call_status":{"op":"in","type":"enum","value":["ended","error"]}}}`,
			wantErrs: []string{"value_error@[body filter_criteria agent]", "value_error@[body filter_criteria call_status value]"}},
		{name: "bad values",
			body: `{"filter_criteria":{"agent":[{"agent_id":"agent_abc"}],"call_status":{"op":"in","type":"enum","value":["done"]},
				"to_number":{"op":"eq","type":"string","value":"hello"}}}`,
			wantErrs: []string{"uuid_parsing@[body filter_criteria agent 0 agent_id]",
				"enum@[body filter_criteria call_status value 0]", "value_error@[body filter_criteria to_number value]"}},
		{name: "agent versions", body: `{"filter_criteria":{"agent":[{"agent_id":"` + agent + `","version":[1]}]}}`,
			wantErrs: []string{"value_error@[body filter_criteria agent 0 version]"}},
		{name: "ops the list cannot do",
			body: `{"filter_criteria":{"to_number":{"op":"sw","type":"string","value":"+1415"},
				"start_timestamp":{"op":"ne","type":"number","value":1}}}`,
			wantErrs: []string{"value_error@[body filter_criteria start_timestamp]", "value_error@[body filter_criteria to_number]"}},
		{name: "filters Switchboard does not have",
			body: `{"filter_criteria":{"user_sentiment":{"op":"in","type":"enum","value":["Positive"]},
				"metadata":[{"key":"order","op":"eq","type":"number","value":7}]}}`,
			wantErrs: []string{"value_error@[body filter_criteria metadata]", "value_error@[body filter_criteria user_sentiment]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, none, errs := decodeSDKListCalls([]byte(tt.body), "US")
			var got []string
			for _, e := range errs {
				got = append(got, fmt.Sprintf("%s@%v", e.Type, e.Loc))
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.wantErrs) {
				t.Fatalf("errors = %v, want %v (%+v)", got, tt.wantErrs, errs)
			}
			if errs != nil {
				return
			}
			if !reflect.DeepEqual(q, tt.want) || none != tt.none {
				t.Errorf("got %+v none=%v\nwant %+v none=%v", q, none, tt.want, tt.none)
			}
		})
	}
}

// A call rendered at the boundary of a start_timestamp filter is inside it.
func TestSDKTimeFilterBoundaries(t *testing.T) {
	at := time.Date(2026, 11, 22, 0, 43, 16, 65_900_000, time.UTC) // 65.9 ms
	key := history.Key{CreatedAt: at, CallID: "call_1"}
	in := func(body string) bool {
		q, _, errs := decodeSDKListCalls([]byte(`{"filter_criteria":{"start_timestamp":`+body+`}}`), "US")
		if errs != nil {
			t.Fatal(errs)
		}
		return (q.CreatedAfter.IsZero() || key.CreatedAt.After(q.CreatedAfter)) &&
			(q.CreatedBefore.IsZero() || key.CreatedAt.Before(q.CreatedBefore))
	}
	ms := at.UnixMilli()
	for body, want := range map[string]bool{
		fmt.Sprintf(`{"op":"eq","type":"number","value":%d}`, ms):          true,
		fmt.Sprintf(`{"op":"ge","type":"number","value":%d}`, ms):          true,
		fmt.Sprintf(`{"op":"le","type":"number","value":%d}`, ms):          true,
		fmt.Sprintf(`{"op":"gt","type":"number","value":%d}`, ms):          false,
		fmt.Sprintf(`{"op":"lt","type":"number","value":%d}`, ms):          false,
		fmt.Sprintf(`{"op":"gt","type":"number","value":%d}`, ms-1):        true,
		fmt.Sprintf(`{"op":"bt","type":"range","value":[%d,%d]}`, ms, ms):  true,
		fmt.Sprintf(`{"op":"bt","type":"range","value":[0,%d]}`, ms-1):     false,
		fmt.Sprintf(`{"op":"bt","type":"range","value":[%d,%d]}`, ms+1, 0): false,
	} {
		if got := in(body); got != want {
			t.Errorf("%s: in = %v, want %v", body, got, want)
		}
	}
}

// The SDK's transcript and transcript_object hold the agent's and the
// user's utterances only; transcript_with_tool_calls weaves a
// conversation's tool calls in, in the service's item shapes, and leaves
// keypresses out as the other two do.
func TestSDKTranscriptWithToolCalls(t *testing.T) {
	yes := true
	turns := []telephony.Turn{
		{Speaker: "agent", Text: "Hello Ada."},
		{Speaker: "callee", Text: "Is Friday free?"},
		{Speaker: "agent", Text: `(called check_availability {"day":"friday"})`, Note: true,
			Tool: &telephony.ToolCall{ID: "tc_1", Name: "check_availability", Arguments: `{"day":"friday"}`}},
		{Speaker: "agent", Text: "(check_availability answered: 7 pm)", Note: true,
			Tool: &telephony.ToolCall{ID: "tc_1", Name: "check_availability", Answered: true, Result: "7 pm", Successful: &yes}},
		{Speaker: "agent", Text: "(press_digit answered: )", Note: true,
			Tool: &telephony.ToolCall{ID: "tc_2", Name: "press_digit", Answered: true}},
		{Speaker: "callee", Text: "pressed 1", Digits: "1"},
		{Speaker: "agent", Text: "Friday at 7 pm is free."},
	}
	var out sdkCall
	out.sdkTranscript(callview.RenderTranscript("call_1", turns))
	got, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"call_id":"","call_type":"","call_status":"","direction":"",` +
		`"transcript":"Agent: Hello Ada.\nUser: Is Friday free?\nAgent: Friday at 7 pm is free.\n",` +
		`"transcript_object":[{"role":"agent","content":"Hello Ada.","words":[]},{"role":"user","content":"Is Friday free?","words":[]},` +
		`{"role":"agent","content":"Friday at 7 pm is free.","words":[]}],` +
		`"transcript_with_tool_calls":[{"role":"agent","content":"Hello Ada.","words":[]},{"role":"user","content":"Is Friday free?","words":[]},` +
		`{"role":"tool_call_invocation","tool_call_id":"tc_1","name":"check_availability","arguments":"{\"day\":\"friday\"}"},` +
		`{"role":"tool_call_result","tool_call_id":"tc_1","content":"7 pm","successful":true},` +
		`{"role":"tool_call_result","tool_call_id":"tc_2","content":""},` +
		`{"role":"agent","content":"Friday at 7 pm is free.","words":[]}]}`
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
