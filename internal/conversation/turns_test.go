package conversation

import (
	"testing"
	"time"
)

// Each entry's turns, as every carrier's transcript shows them.
func TestEntryTurns(t *testing.T) {
	answered := time.Now()
	ok := true
	for _, tc := range []struct {
		name string
		e    Entry
		want []string // speaker: text, note
	}{
		{"agent line placed at its start", Entry{Message: Message{Role: RoleAgent, Content: "Hello."}, At: answered.Add(2 * time.Second)},
			[]string{"agent: Hello. 2s-2s"}},
		{"callee placed as heard", Entry{Message: Message{Role: RoleUser, Content: "Hi."}, Start: time.Second, End: 1500 * time.Millisecond,
			Confidence: 0.9, Recognizer: "embedded"}, []string{"callee: Hi. 1s-1.5s"}},
		{"interrupted", Entry{Message: Message{Role: RoleAgent, Content: "Let me"}, At: answered, Interrupted: true},
			[]string{"agent: Let me 0s-0s", "callee: (interrupted the agent) note"}},
		{"tool invocation", Entry{Message: Message{Role: RoleToolCallInvocation, Name: "book", Arguments: `{"n":4}`, ToolCallID: "c1"}},
			[]string{`agent: (called book {"n":4}) note`}},
		{"tool result", Entry{Message: Message{Role: RoleToolCallResult, Content: "done", ToolCallID: "c1", Successful: &ok}},
			[]string{"agent: (the tool answered: done) note"}},
		{"note not placed", Entry{Message: Message{Role: RoleAgent, Content: "(failed)"}, At: answered.Add(time.Second), Note: true},
			[]string{"agent: (failed) note"}},
	} {
		got := tc.e.Turns(answered)
		if len(got) != len(tc.want) {
			t.Fatalf("%s: %d turns, want %d", tc.name, len(got), len(tc.want))
		}
		for i, tr := range got {
			s := tr.Speaker + ": " + tr.Text
			if tr.Note {
				s += " note"
			} else {
				s += " " + tr.Start.String() + "-" + tr.End.String()
			}
			if s != tc.want[i] {
				t.Errorf("%s: turn %q, want %q", tc.name, s, tc.want[i])
			}
			if tc.e.Role == RoleUser && (tr.Confidence != 0.9 || tr.Recognizer != "embedded") {
				t.Errorf("%s: %+v, want the recognizer's", tc.name, tr)
			}
			if (tc.e.Role == RoleToolCallInvocation || tc.e.Role == RoleToolCallResult) && (tr.Tool == nil || tr.Tool.ID != "c1") {
				t.Errorf("%s: tool %+v, want c1", tc.name, tr.Tool)
			}
		}
	}
}
