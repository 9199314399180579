package dashboard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/telephony"
)

// A conversation's tool calls are in the call page's transcript, each on a
// row of its own that says what was called with what, and what came back,
// apart from what the agent and the callee said.
func TestCallPageShowsToolCalls(t *testing.T) {
	suite.Need(t)
	o := newOrg(t)
	// A busy call has no transcript of its own: the test stores one.
	id := o.placeCall(t, "+14155550001")
	eventually(t, "the call ends", func() bool {
		_, call := o.api(t, "GET", "/v1/calls/"+id, nil)
		return call["disposition"] != nil
	})
	yes := true
	must(t, store.SaveTranscript(context.Background(), o.ns, id, history.Transcript{StoredAt: time.Now(), Turns: []telephony.Turn{
		{Speaker: "agent", Text: "Hello Ada, this is the test clinic."},
		{Speaker: "callee", Text: "Is Friday free?", Start: time.Second, End: 2 * time.Second},
		{Speaker: "agent", Text: `(called check_availability {"day":"friday"})`, Note: true,
			Tool: &telephony.ToolCall{ID: "tc_1", Name: "check_availability", Arguments: `{"day":"friday"}`}},
		{Speaker: "agent", Text: "(check_availability answered: 7 pm is free)", Note: true,
			Tool: &telephony.ToolCall{ID: "tc_1", Name: "check_availability", Answered: true, Result: "7 pm is free", Successful: &yes}},
		{Speaker: "agent", Text: "Friday at 7 pm is free."},
	}}))
	ctx := newTab(t)
	do(t, ctx, signIn(o.key), chromedp.Navigate(baseURL+"/dashboard/calls/"+id),
		chromedp.WaitVisible(chromedp.CSS(`#transcript li.tool_call_invocation`)),
		chromedp.WaitVisible(chromedp.CSS(`#transcript li.tool_call_result`)))
	called, answered := text(t, ctx, `#transcript li.tool_call_invocation`), text(t, ctx, `#transcript li.tool_call_result`)
	if !strings.Contains(called, `Called check_availability {"day":"friday"}`) || !strings.Contains(answered, "check_availability answered: 7 pm is free") {
		t.Errorf("the tool call's rows read %q and %q", called, answered)
	}
	transcript := text(t, ctx, "#transcript")
	if !strings.Contains(transcript, "Callee 0:01.0 Is Friday free?") || !strings.Contains(transcript, "Friday at 7 pm is free.") {
		t.Errorf("the transcript reads %q, want the utterances around the tool call", transcript)
	}
	// Set apart from speech: its own look, not an utterance's.
	if get(t, ctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector("#transcript li.tool_call_invocation")).borderLeftStyle`)) != "solid" {
		t.Error("the tool call's row looks like an utterance's")
	}
}
