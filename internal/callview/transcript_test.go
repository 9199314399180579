package callview

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/telephony"
)

// The transcript renders each kind of turn as the API documents it: the
// agent's lines, recognized speech with its recognizer and confidence,
// keypresses as dtmf, null offsets where the carrier gave none, words
// with their offsets where the recognizer gave them.
func TestRenderTranscript(t *testing.T) {
	turns := []telephony.Turn{
		{Speaker: "agent", Text: "How many people?", End: 1500 * time.Millisecond},
		{Speaker: "callee", Text: "um, four people", Start: 2 * time.Second, End: 3250 * time.Millisecond,
			Confidence: 0.875, Recognizer: "embedded", Field: "party_size", Digits: "4", Branch: "four", Next: "confirm", Words: []telephony.Word{
				{Text: "four", Start: 2310 * time.Millisecond, End: 2650 * time.Millisecond},
				{Text: "people", Start: 2650 * time.Millisecond, End: 3100 * time.Millisecond}}},
		{Speaker: "callee", Text: "pressed 1#", Field: "confirmed", Digits: "1", Start: 5 * time.Second, End: 5 * time.Second},
		{Speaker: "agent", Text: "Goodbye."},
	}
	got, err := json.Marshal(RenderTranscript("call_1", turns))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"call_id":"call_1","transcript":"Agent: How many people?\nUser: um, four people\nUser (keypad): pressed 1#\nAgent: Goodbye.\n",` +
		`"transcript_object":[` +
		`{"role":"agent","content":"How many people?","words":[],"start":0,"end":1.5},` +
		`{"role":"user","content":"um, four people","words":[{"word":"four","start":2.31,"end":2.65},{"word":"people","start":2.65,"end":3.1}],"start":2,"end":3.25,"confidence":0.875,"recognizer":"embedded","digits":"4","field":"party_size","branch":"four","next":"confirm"},` +
		`{"role":"dtmf","content":"pressed 1#","words":[],"start":5,"end":5,"digits":"1","field":"confirmed"},` +
		`{"role":"agent","content":"Goodbye.","words":[],"start":null,"end":null}]}`
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if empty, _ := json.Marshal(RenderTranscript("call_2", nil)); string(empty) != `{"call_id":"call_2","transcript":"","transcript_object":[]}` {
		t.Errorf("an empty transcript renders as %s", empty)
	}
}

// A conversation's tool call shows as Retell's transcript_with_tool_calls
// items: the invocation with its id, name and arguments, the result with
// its id, content and successful; the text says both in a line each.
func TestRenderTranscriptToolCalls(t *testing.T) {
	yes := true
	turns := []telephony.Turn{
		{Speaker: "callee", Text: "Is Friday free?", Start: time.Second, End: 2 * time.Second},
		{Speaker: "agent", Text: `(called check_availability {"day":"friday"})`, Note: true,
			Tool: &telephony.ToolCall{ID: "call_7", Name: "check_availability", Arguments: `{"day":"friday"}`}},
		{Speaker: "agent", Text: "(check_availability answered: 7 pm is free)", Note: true,
			Tool: &telephony.ToolCall{ID: "call_7", Name: "check_availability", Answered: true, Result: "7 pm is free", Successful: &yes}},
		{Speaker: "agent", Text: "(end_call answered: )", Note: true,
			Tool: &telephony.ToolCall{ID: "call_8", Name: "end_call", Answered: true}},
	}
	got, err := json.Marshal(RenderTranscript("call_1", turns))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"call_id":"call_1","transcript":"User: Is Friday free?\nAgent (tool call): check_availability {\"day\":\"friday\"}\nTool (check_availability): 7 pm is free\nTool (end_call): \n",` +
		`"transcript_object":[` +
		`{"role":"user","content":"Is Friday free?","words":[],"start":1,"end":2},` +
		`{"role":"tool_call_invocation","content":"","words":[],"start":null,"end":null,"tool_call_id":"call_7","name":"check_availability","arguments":"{\"day\":\"friday\"}","note":true},` +
		`{"role":"tool_call_result","content":"7 pm is free","words":[],"start":null,"end":null,"tool_call_id":"call_7","name":"check_availability","successful":true,"note":true},` +
		`{"role":"tool_call_result","content":"","words":[],"start":null,"end":null,"tool_call_id":"call_8","name":"end_call","note":true}]}`
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
