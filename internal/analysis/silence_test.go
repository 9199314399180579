package analysis

import (
	"context"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony"
)

// gatherKinds is one gather step per kind of answer a field can take
// (choices for a string and for a boolean, each capture type), with the
// field it fills and the prompt it asks.
var gatherKinds = []struct {
	field  telephony.Field
	prompt string
	step   switchboardv1.GatherStep
}{
	{telephony.Field{Name: "department", Type: "string"}, "Sales or support?",
		switchboardv1.GatherStep{Choices: []switchboardv1.GatherChoice{{Value: "sales"}, {Value: "support"}}}},
	{telephony.Field{Name: "confirmed", Type: "boolean"}, "Shall we keep your booking?",
		switchboardv1.GatherStep{Choices: []switchboardv1.GatherChoice{{Value: "yes", Digits: "1"}, {Value: "no", Digits: "2"}}}},
	{telephony.Field{Name: "attending", Type: "boolean"}, "Will you come?",
		switchboardv1.GatherStep{Capture: switchboardv1.CaptureYesNo}},
	{telephony.Field{Name: "party_size", Type: "number"}, "How many of you?",
		switchboardv1.GatherStep{Capture: switchboardv1.CaptureNumber}},
	{telephony.Field{Name: "account", Type: "string"}, "Your account?",
		switchboardv1.GatherStep{Capture: switchboardv1.CaptureDigits}},
	{telephony.Field{Name: "customer_name", Type: "string"}, "Your name?",
		switchboardv1.GatherStep{Capture: switchboardv1.CaptureText}},
	{telephony.Field{Name: "booking_date", Type: "string"}, "Which day?",
		switchboardv1.GatherStep{Capture: switchboardv1.CaptureDate}},
	{telephony.Field{Name: "arrival_time", Type: "string"}, "At what time?",
		switchboardv1.GatherStep{Capture: switchboardv1.CaptureTime}},
}

// askedBy says how step asks: by choices or its capture type.
func askedBy(step switchboardv1.GatherStep) string {
	if step.Choices != nil {
		return "choices"
	}
	return "capture " + string(step.Capture)
}

// unansweredCall is a call whose agent asks each kind of field by a gather
// step (re-prompting once), and whose callee gives each attempt the answer
// callee makes: the transcript as the SIP engine writes it.
func unansweredCall(callee func() telephony.Turn) (telephony.Request, []telephony.Turn) {
	req := telephony.Request{Agent: &switchboardv1.Agent{}}
	var turns []telephony.Turn
	for _, k := range gatherKinds {
		step := k.step
		step.Field, step.Prompt = k.field.Name, k.prompt
		step.NoInput = &switchboardv1.GatherRetry{Retries: ptr.To[int32](1)}
		step.NoMatch = &switchboardv1.GatherRetry{Retries: ptr.To[int32](1)}
		req.Agent.Spec.Script = append(req.Agent.Spec.Script, switchboardv1.ScriptStep{Gather: &step})
		req.Fields = append(req.Fields, k.field)
		for range 2 {
			turns = append(turns, telephony.Turn{Speaker: "agent", Text: k.prompt}, callee())
		}
	}
	return req, turns
}

// Silence is not "no": a callee who says nothing, or nothing a step can
// take, leaves every field null, whatever its type. The engine's note
// "(no answer)" was read as speech: understand.Match gave the choice
// "no", so a silent callee had cancelled their booking.
func TestUnansweredGathersGiveNull(t *testing.T) {
	callees := map[string]func() telephony.Turn{
		"silent": func() telephony.Turn {
			return telephony.Turn{Speaker: "callee", Text: "(no answer)", Branch: telephony.BranchNoInput, Note: true}
		},
		"nonsense": func() telephony.Turn {
			return telephony.Turn{Speaker: "callee", Text: "purple banana no yes four tomorrow at noon", Branch: telephony.BranchNoMatch,
				Confidence: 0.3, Recognizer: "embedded"}
		},
		"not recognized": func() telephony.Turn {
			return telephony.Turn{Speaker: "callee", Text: "(not recognized: no answer within 10s)", Branch: telephony.BranchNoMatch,
				Recognizer: "server", Note: true}
		},
		"noted outside a gather": func() telephony.Turn {
			return telephony.Turn{Speaker: "callee", Text: "(not recognized: no answer within 10s)", Recognizer: "server", Note: true}
		},
	}
	for name, callee := range callees {
		t.Run(name, func(t *testing.T) {
			req, turns := unansweredCall(callee)
			got := Analyze(req, endedCall(), turns).ExtractedData
			for _, k := range gatherKinds {
				if v, ok := got[k.field.Name]; !ok || v != nil {
					t.Errorf("%s (a %s asked by %s): %#v, want null", k.field.Name, k.field.Type, askedBy(k.step), v)
				}
			}
			// Without the script, the fields' names and types alone.
			req.Agent = nil
			for f, v := range Analyze(req, endedCall(), turns).ExtractedData {
				if v != nil {
					t.Errorf("without the script, %s: %#v, want null", f, v)
				}
			}
		})
	}
}

// What a callee says after an unanswered attempt still counts: the
// re-prompt's answer, or a statement.
func TestAnswerAfterSilenceCounts(t *testing.T) {
	req, _ := unansweredCall(func() telephony.Turn { return telephony.Turn{} })
	turns := []telephony.Turn{
		{Speaker: "agent", Text: "Shall we keep your booking?"},
		{Speaker: "callee", Text: "(no answer)", Branch: telephony.BranchNoInput, Note: true},
		{Speaker: "agent", Text: "Shall we keep your booking?"},
		{Speaker: "callee", Text: "yes", Field: "confirmed", Digits: "yes", Branch: "yes", Recognizer: "embedded"},
		{Speaker: "agent", Text: "How many of you?"},
		{Speaker: "callee", Text: "(no answer)", Branch: telephony.BranchNoInput, Note: true},
		{Speaker: "callee", Text: "my party size is four", Recognizer: "embedded"},
	}
	got := Analyze(req, endedCall(), turns).ExtractedData
	if got["confirmed"] != true || got["party_size"] != 4.0 {
		t.Errorf("confirmed %#v, party_size %#v; want true and 4", got["confirmed"], got["party_size"])
	}
}

// The model reads Switchboard's notes as notes and a refused answer as
// refused, never "User: (no answer)".
func TestModelIsNotFedNotesAsWords(t *testing.T) {
	turns := []telephony.Turn{
		{Speaker: "agent", Text: "Shall we keep your booking?"},
		{Speaker: "callee", Text: "(no answer)", Branch: telephony.BranchNoInput, Note: true},
		{Speaker: "agent", Text: "Shall we keep your booking?"},
		{Speaker: "callee", Text: "purple banana", Branch: telephony.BranchNoMatch, Recognizer: "embedded"},
		{Speaker: "callee", Text: "(not recognized: no answer within 10s)", Recognizer: "server", Note: true},
		{Speaker: "callee", Text: "yes please", Recognizer: "embedded"},
	}
	m := newModelServer(t, completion(`{"summary":"s","extracted_data":{"party_size":null,"confirmed":null,"customer_name":null}}`))
	req := llmRequest(m.URL, nil)
	if _, err := newLLM(orgKey).Analyze(context.Background(), req, endedCall(), turns); err != nil {
		t.Fatal(err)
	}
	messages := (<-m.requests).body["messages"].([]any)
	sent := messages[len(messages)-1].(map[string]any)["content"].(string)
	want := "Agent: Shall we keep your booking?\nNote: (no answer)\nAgent: Shall we keep your booking?\n" +
		"User: purple banana (not taken as an answer)\nNote: (not recognized: no answer within 10s)\nUser: yes please\n"
	if !strings.HasSuffix(sent, want) {
		t.Errorf("the model was sent\n%s\nwant it to end with\n%s", sent, want)
	}
	if strings.Contains(sent, "User: (") {
		t.Errorf("a note was sent as the callee's words:\n%s", sent)
	}
}
