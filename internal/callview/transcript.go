package callview

import (
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/internal/telephony"
)

// Transcript is the body of GET /v1/calls/{call_id}/transcript. Its shape
// follows the hosted voice-AI service's (Retell's transcript and
// transcript_object, the best-designed among its peers): the whole
// conversation as text to read or feed a model, and the same as a list of
// utterances with their role, content, words and offsets to show or
// process. Switchboard adds what its agents know of each utterance: the
// recognizer and its confidence, keyed digits, and the branch a gather
// step took.
type Transcript struct {
	CallID string `json:"call_id"`
	// Text is the conversation, one "Agent: ..." or "User: ..." line per
	// utterance.
	Text       string      `json:"transcript"`
	Utterances []Utterance `json:"transcript_object"`
}

// Roles of an utterance.
const (
	RoleAgent = "agent"
	RoleUser  = "user"
	// RoleDTMF is a keypress, as Retell's DTMF utterances are.
	RoleDTMF = "dtmf"
	// RoleToolCallInvocation and RoleToolCallResult are a conversation's
	// tool call and its answer, as Retell's transcript_with_tool_calls
	// names them.
	RoleToolCallInvocation = "tool_call_invocation"
	RoleToolCallResult     = "tool_call_result"
)

// Utterance is one turn of the conversation.
type Utterance struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// Words are the utterance's words with their offsets in the recording,
	// where its recognizer gives them (the embedded one does, a server when
	// its answer has them); empty otherwise, never null (Retell's field).
	Words []Word `json:"words"`
	// Start and End are seconds from the start of the recording; null when
	// the carrier cannot place the utterance in it.
	Start *float64 `json:"start"`
	End   *float64 `json:"end"`
	// Confidence (0 to 1) and Recognizer are set on recognized speech.
	Confidence *float64 `json:"confidence,omitempty"`
	Recognizer string   `json:"recognizer,omitempty"`
	// Digits and Field are set on a keypress answering a gather step for
	// the extracted field Field.
	Digits string `json:"digits,omitempty"`
	Field  string `json:"field,omitempty"`
	// Branch is what a gather step decided on this utterance (a choice's
	// value, noMatch or noInput) and Next the step it went to.
	Branch string `json:"branch,omitempty"`
	Next   string `json:"next,omitempty"`
	// Mark is a streaming bot's mark.
	Mark string `json:"mark,omitempty"`
	// ToolCallID, Name and Arguments (the model's arguments, as JSON) are
	// set on a tool call's invocation; ToolCallID, Name, Content (the
	// tool's answer) and Successful (null: not reported) on its result,
	// as Retell's transcript_with_tool_calls items carry them. Content is
	// empty on an invocation.
	ToolCallID string `json:"tool_call_id,omitempty"`
	Name       string `json:"name,omitempty"`
	Arguments  string `json:"arguments,omitempty"`
	Successful *bool  `json:"successful,omitempty"`
	// Note is set when Content is Switchboard's account of what happened
	// ("(no answer)", "(not recognized: timeout)"), not words anyone said.
	Note bool `json:"note,omitempty"`
}

// Word is a word of an utterance with its offsets in seconds.
type Word struct {
	Word  string  `json:"word"`
	Start float64 `json:"start"`
	End   float64 `json:"end"`
}

// RenderTranscript builds the transcript of the call callID from its turns.
func RenderTranscript(callID string, turns []telephony.Turn) Transcript {
	out := Transcript{CallID: callID, Utterances: make([]Utterance, 0, len(turns))}
	var text strings.Builder
	for _, t := range turns {
		u := utterance(t)
		out.Utterances = append(out.Utterances, u)
		text.WriteString(Line(u))
		text.WriteByte('\n')
	}
	out.Text = text.String()
	return out
}

// Line is the utterance as a line of the transcript's text.
func Line(u Utterance) string {
	switch u.Role {
	case RoleAgent:
		return "Agent: " + u.Content
	case RoleDTMF:
		return "User (keypad): " + u.Content
	case RoleToolCallInvocation:
		return "Agent (tool call): " + u.Name + " " + u.Arguments
	case RoleToolCallResult:
		return "Tool (" + u.Name + "): " + u.Content
	}
	return "User: " + u.Content
}

func utterance(t telephony.Turn) Utterance {
	u := Utterance{Role: RoleUser, Content: t.Text, Words: []Word{}, Recognizer: t.Recognizer,
		Digits: t.Digits, Field: t.Field, Branch: t.Branch, Next: t.Next, Mark: t.Mark, Note: t.Note}
	switch {
	case t.Tool != nil && t.Tool.Answered:
		u.Role, u.Content = RoleToolCallResult, t.Tool.Result
		u.ToolCallID, u.Name, u.Successful = t.Tool.ID, t.Tool.Name, t.Tool.Successful
	case t.Tool != nil:
		u.Role, u.Content = RoleToolCallInvocation, ""
		u.ToolCallID, u.Name, u.Arguments = t.Tool.ID, t.Tool.Name, t.Tool.Arguments
	case t.Speaker == "agent":
		u.Role = RoleAgent
	case t.Digits != "" && t.Recognizer == "":
		// Keys: a spoken answer has the value its gather took in Digits
		// too, but a recognizer.
		u.Role = RoleDTMF
		if u.Content == "" {
			u.Content = t.Digits
		}
	}
	if t.Start != 0 || t.End != 0 {
		u.Start, u.End = seconds(t.Start), seconds(t.End)
	}
	if t.Confidence > 0 {
		u.Confidence = &t.Confidence
	}
	for _, w := range t.Words {
		u.Words = append(u.Words, Word{Word: w.Text, Start: *seconds(w.Start), End: *seconds(w.End)})
	}
	return u
}

// seconds is d in seconds, to the millisecond.
func seconds(d time.Duration) *float64 {
	s := float64(d.Milliseconds()) / 1000
	return &s
}
