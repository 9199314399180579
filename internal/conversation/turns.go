package conversation

import (
	"cmp"
	"fmt"
	"time"

	"github.com/switchboard-dev/switchboard/internal/telephony"
)

// Speakers of the call transcript's turns.
const (
	speakerAgent  = "agent"
	speakerCallee = "callee"
)

// Turns is the call transcript's account of the entry, as every carrier
// gives it: the entry's turn (the callee's utterance placed as it was
// heard, an agent's line at the moment it started playing, a tool call
// as a note), then, when the callee cut the agent off, the note
// "(interrupted the agent)". answeredAt places an agent's line (zero:
// not placed).
func (e Entry) Turns(answeredAt time.Time) []telephony.Turn {
	t := telephony.Turn{Speaker: speakerAgent, Text: e.Content, Note: e.Note}
	switch e.Role {
	case RoleUser:
		t.Speaker, t.Start, t.End = speakerCallee, e.Start, e.End
		t.Confidence, t.Recognizer = e.Confidence, e.Recognizer
	case RoleToolCallInvocation:
		t.Text, t.Note = fmt.Sprintf("(called %s %s)", e.Name, e.Arguments), true
		t.Tool = &telephony.ToolCall{ID: e.ToolCallID, Name: e.Name, Arguments: e.Arguments}
	case RoleToolCallResult:
		t.Text, t.Note = fmt.Sprintf("(%s answered: %s)", cmp.Or(e.Name, "the tool"), e.Content), true
		t.Tool = &telephony.ToolCall{ID: e.ToolCallID, Name: e.Name, Result: e.Content, Successful: e.Successful, Answered: true}
	default:
		if !e.At.IsZero() && !answeredAt.IsZero() && !e.Note {
			t.Start = max(e.At.Sub(answeredAt), 0)
			t.End = t.Start
		}
	}
	out := []telephony.Turn{t}
	if e.Interrupted {
		out = append(out, telephony.Turn{Speaker: speakerCallee, Text: "(interrupted the agent)", Note: true})
	}
	return out
}
