package conversation

import (
	"strings"
	"testing"
)

func TestConversationTransfersOnceSpokenAndEndsWithTheTransfersReason(t *testing.T) {
	s, line := newFakeSession(), newFakeLine(true)
	line.transfers = []TransferResult{{Connected: true, Reason: "transfer_bridged", Result: "bridged"}}
	out := runAsync(t, quickTurns(), s, line)
	s.say(0, "Hello.")
	line.callee("can I talk to a person")
	nextRequest(t, s)
	s.chunks <- Chunk{ResponseID: 1, Content: "Connecting you now.", Complete: true,
		TransferNumber: "+14155550100", TransferSummary: "wants a person", TransferToolCallID: "call_1"}
	o := wait(t, out)
	if o.Reason != "transfer_bridged" {
		t.Fatalf("reason = %q, want transfer_bridged", o.Reason)
	}
	asked := line.transfersAsked()
	if len(asked) != 1 || asked[0] != (TransferRequest{Number: "+14155550100", Summary: "wants a person"}) {
		t.Fatalf("transfers asked = %+v", asked)
	}
	if got := line.saidSoFar(); got[len(got)-1] != "Connecting you now." {
		t.Fatalf("the line before the transfer was not spoken: %q", got)
	}
	last := o.Transcript[len(o.Transcript)-1]
	if last.Role != RoleToolCallResult || last.ToolCallID != "call_1" || last.Successful == nil || !*last.Successful {
		t.Fatalf("last entry = %+v, want transfer_call's successful result", last)
	}
}

func TestConversationFailedTransferToolResultAndAnAnswerAtOnce(t *testing.T) {
	s, line := newFakeSession(), newFakeLine(true)
	line.transfers = []TransferResult{{Result: "busy", Detail: "the line was busy (486)"}}
	out := runAsync(t, quickTurns(), s, line)
	s.say(0, "Hello.")
	line.callee("transfer me")
	nextRequest(t, s)
	s.chunks <- Chunk{ResponseID: 1, Tool: &Message{Role: RoleToolCallInvocation, ToolCallID: "call_1", Name: "transfer_call",
		Arguments: `{"number":"+14155550100"}`}}
	s.chunks <- Chunk{ResponseID: 1, Content: "One moment.", Complete: true, TransferNumber: "+14155550100",
		TransferToolCallID: "call_1", EndCall: true}
	// The callee says nothing: the engine is asked at once.
	r := nextRequest(t, s)
	if r.Kind != Respond || r.ResponseID != 2 {
		t.Fatalf("request after the failed transfer = %+v", r)
	}
	res := r.Transcript[len(r.Transcript)-1]
	if res.Role != RoleToolCallResult || res.ToolCallID != "call_1" || res.Successful == nil || *res.Successful ||
		!strings.Contains(res.Content, "busy") || !strings.Contains(res.Content, "486") {
		t.Fatalf("the engine was sent %+v last, want transfer_call's failed result with why", res)
	}
	s.chunks <- Chunk{ResponseID: 2, Content: "They are busy. Goodbye.", Complete: true, EndCall: true}
	o := wait(t, out)
	if o.Reason != ReasonAgentHangup {
		t.Fatalf("reason = %q, want agent_hangup (the failed transfer's end_call dropped, the next one kept)", o.Reason)
	}
	if got := line.saidSoFar(); got[len(got)-1] != "Goodbye." {
		t.Fatalf("spoken = %q", got)
	}
}

func TestConversationFailedTransferNoteReachesTheEngine(t *testing.T) {
	s, line := newFakeSession(), newFakeLine(true)
	line.transfers = []TransferResult{{Result: "no_answer", Detail: "nobody answered within 30s"}}
	out := runAsync(t, quickTurns(), s, line)
	s.chunks <- Chunk{ResponseID: 0, Content: "Transferring you.", Complete: true, TransferNumber: "+14155550100"}
	r := nextRequest(t, s)
	if r.ResponseID != 1 || r.Kind != Respond {
		t.Fatalf("request = %+v", r)
	}
	note := r.Transcript[len(r.Transcript)-1]
	if note.Role != RoleAgent || !strings.Contains(note.Content, "no_answer") || !strings.Contains(note.Content, "nobody answered") {
		t.Fatalf("the engine was sent %+v last, want the failed transfer's note", note)
	}
	s.chunks <- Chunk{ResponseID: 1, Content: "Nobody is free. Bye.", Complete: true, EndCall: true}
	o := wait(t, out)
	var found bool
	for _, e := range o.Transcript {
		found = found || e.Note && strings.Contains(e.Content, "no_answer")
	}
	if !found || o.Reason != ReasonAgentHangup {
		t.Fatalf("outcome %q, transcript:\n%s", o.Reason, transcriptText(o))
	}
}

func TestConversationInterruptedTransferIsDropped(t *testing.T) {
	s, line := newFakeSession(), newFakeLine(false)
	line.transfers = []TransferResult{{Connected: true, Reason: "call_transfer", Result: "transferred"}}
	out := runAsync(t, quickTurns(), s, line)
	s.chunks <- Chunk{ResponseID: 0, Content: "Let me transfer you to billing.", Complete: true, TransferNumber: "+14155550100"}
	waitFor(t, func() bool { return len(line.saidSoFar()) == 1 })
	line.callee("wait no") // a barge-in: the loop cuts the line
	r := nextRequest(t, s)
	if len(line.transfersAsked()) != 0 {
		t.Fatalf("an interrupted response transferred")
	}
	s.chunks <- Chunk{ResponseID: r.ResponseID, Content: "Okay. Bye.", Complete: true, EndCall: true}
	waitFor(t, func() bool { return len(line.saidSoFar()) == 3 })
	line.finish()
	if o := wait(t, out); o.Reason != ReasonAgentHangup {
		t.Fatalf("reason = %q", o.Reason)
	}
}
