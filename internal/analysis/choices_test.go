package analysis

import (
	"reflect"
	"testing"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony"
)

// choicesAgent asks for a department and a confirmation by choices, in
// prompts that name neither field.
func choicesAgent() *switchboardv1.Agent {
	return &switchboardv1.Agent{Spec: switchboardv1.AgentSpec{Script: []switchboardv1.ScriptStep{
		{ID: "dept", Gather: &switchboardv1.GatherStep{Field: "department", Prompt: "How can we help, {{customer_name}}?",
			Choices: []switchboardv1.GatherChoice{
				{Value: "sales", Phrases: []string{"buy something"}},
				{Value: "support", Phrases: []string{"i need help", "it is broken"}},
			},
			NoMatch: &switchboardv1.GatherRetry{Prompt: "Sorry: sales or support?"}}},
		{ID: "keep", Gather: &switchboardv1.GatherStep{Field: "confirmed", Prompt: "Shall we keep your booking?",
			Choices: []switchboardv1.GatherChoice{
				{Value: "yes", Phrases: []string{"keep it"}},
				{Value: "no", Phrases: []string{"cancel it", "drop it"}},
			}}},
	}}}
}

var choiceFields = []telephony.Field{{Name: "department", Type: "string"}, {Name: "confirmed", Type: "boolean"}}

// When a gather step did not take the answer, the rules match what the
// callee said against its choices' phrases, as the step would have: in
// words heard after its prompt outside it (open speech after the step
// gave up, or to a step that takes keys only). A field asked by choices
// takes a choice or nothing: never the raw words. A turn the step itself
// refused (noMatch) is no answer, even when its words name a choice: the
// step may have refused them for a reason the words do not show (a
// recognizer unsure of them), and a question asked again is better than
// a wrong answer (issue 36).
func TestTranscriptMatchedAgainstChoices(t *testing.T) {
	ask := func(text string) telephony.Turn { return telephony.Turn{Speaker: "agent", Text: text} }
	heard := func(text string) telephony.Turn {
		return telephony.Turn{Speaker: "callee", Text: text, Recognizer: "embedded"}
	}
	noMatch := func(field, text string) telephony.Turn {
		return telephony.Turn{Speaker: "callee", Text: text, Field: field, Branch: "noMatch", Recognizer: "embedded"}
	}
	tests := []struct {
		name  string
		turns []telephony.Turn
		want  map[string]any
	}{
		{"open speech after the prompts (variables filled in)", []telephony.Turn{
			ask("How can we help, Ada?"), heard("um, I need help please"),
			ask("Shall we keep your booking?"), heard("no, cancel it"),
		}, map[string]any{"department": "support", "confirmed": false}},
		{"a noMatch turn that names a choice is no answer (the retries ran out)", []telephony.Turn{
			ask("How can we help, Ada?"), noMatch("department", "I want to buy something"),
			ask("Shall we keep your booking?"), noMatch("confirmed", "keep it"),
		}, map[string]any{"department": nil, "confirmed": nil}},
		{"the retry prompt asks too", []telephony.Turn{
			ask("How can we help, Ada?"), noMatch("department", "purple banana"),
			ask("Sorry: sales or support?"), heard("sales"),
		}, map[string]any{"department": "sales", "confirmed": nil}},
		{"words that name no choice are no value", []telephony.Turn{
			ask("How can we help, Ada?"), noMatch("department", "purple banana"),
			ask("Shall we keep your booking?"), heard("maybe later"),
		}, map[string]any{"department": nil, "confirmed": nil}},
		{"two choices at once are no value", []telephony.Turn{
			ask("Shall we keep your booking?"), heard("keep it, no, drop it"),
		}, map[string]any{"department": nil, "confirmed": nil}},
		{"the gather's own decision stands", []telephony.Turn{
			ask("Shall we keep your booking?"),
			{Speaker: "callee", Text: "keep it", Field: "confirmed", Digits: "yes", Branch: "yes", Recognizer: "embedded"},
			heard("cancel it"), // said after the step took its answer: not in reply to a prompt
		}, map[string]any{"department": nil, "confirmed": true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := telephony.Request{Fields: choiceFields, Agent: choicesAgent(), Variables: map[string]any{"customer_name": "Ada"}}
			got := Analyze(req, endedCall(), tt.turns).ExtractedData
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %v\nwant %v", got, tt.want)
			}
		})
	}
	// Without the agent's script (deleted mid-call), the words are read
	// by the field's type, as before; a noMatch turn still is no answer.
	turns := []telephony.Turn{ask("Which department?"), heard("purple banana")}
	got := Analyze(telephony.Request{Fields: choiceFields}, endedCall(), turns).ExtractedData
	if got["department"] != "purple banana" {
		t.Errorf("without a script: department %v, want the words", got["department"])
	}
	turns[1] = noMatch("department", "purple banana")
	if got := Analyze(telephony.Request{Fields: choiceFields}, endedCall(), turns).ExtractedData; got["department"] != nil {
		t.Errorf("without a script, a noMatch turn: department %v, want null", got["department"])
	}
}
