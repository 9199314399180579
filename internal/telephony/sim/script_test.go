package sim

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/analysis"
	"github.com/switchboard-dev/switchboard/internal/phone"
	"github.com/switchboard-dev/switchboard/internal/telephony"
)

// scriptReq is a call to `to` of an agent with spec, its extracted-data
// fields in the request as BuildRequest puts them.
func scriptReq(to string, spec switchboardv1.AgentSpec) telephony.Request {
	r := req(to)
	r.Agent = &switchboardv1.Agent{Spec: spec}
	r.Greeting = spec.Greeting
	for _, f := range spec.ExtractedData {
		r.Fields = append(r.Fields, telephony.Field{Name: f.Name, Type: string(f.Type), Description: f.Description})
	}
	return r
}

// scriptTurns is the transcript of the call, without the offsets.
func scriptTurns(t *testing.T, r telephony.Request) []telephony.Turn {
	t.Helper()
	c := New(DefaultTimings())
	got, err := c.Transcript(context.Background(), r, progress(t, c, r, placedAt.Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		got[i].Start, got[i].End = 0, 0
	}
	return got
}

func checkTurns(t *testing.T, got, want []telephony.Turn) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		var g, w strings.Builder
		for _, x := range got {
			g.WriteString("\n  " + strings.ReplaceAll(strings.TrimPrefix(fmtTurn(x), "telephony."), "\n", " "))
		}
		for _, x := range want {
			w.WriteString("\n  " + fmtTurn(x))
		}
		t.Errorf("got%s\nwant%s", g.String(), w.String())
	}
}

func fmtTurn(x telephony.Turn) string {
	return strings.Join([]string{x.Speaker, x.Text, "field=" + x.Field, "digits=" + x.Digits, "branch=" + x.Branch,
		"next=" + x.Next, map[bool]string{true: "note", false: ""}[x.Note], x.Recognizer}, " | ")
}

func agentTurn(text string) telephony.Turn { return telephony.Turn{Speaker: "agent", Text: text} }

// said is a callee's spoken turn as the simulator records it.
func said(text string, d ...string) telephony.Turn {
	t := telephony.Turn{Speaker: "callee", Text: text, Confidence: 1, Recognizer: "simulated"}
	for i, v := range d {
		*[]*string{&t.Field, &t.Digits, &t.Branch, &t.Next}[i] = v
	}
	return t
}

var (
	noAnswer = telephony.Turn{Speaker: "callee", Text: "(no answer)", Branch: telephony.BranchNoInput, Note: true}
	retries  = func(n int32, prompt, next string) *switchboardv1.GatherRetry {
		return &switchboardv1.GatherRetry{Retries: ptr.To(n), Prompt: prompt, Next: next}
	}
)

// attendance asks yes or no and branches on the answer, by id.
func attendance() switchboardv1.AgentSpec {
	return switchboardv1.AgentSpec{
		Greeting:      "Hi {{first_name}}, this is the clinic.",
		ExtractedData: []switchboardv1.ExtractedDataField{{Name: "attending", Type: switchboardv1.ExtractedBoolean}},
		Script: []switchboardv1.ScriptStep{
			{Say: "We have you down for {{day}} at {{hour}}."},
			{ID: "ask", Gather: &switchboardv1.GatherStep{Field: "attending", Prompt: "Will you be there? Please say yes or no.",
				Choices: []switchboardv1.GatherChoice{
					{Value: "yes", Phrases: []string{"yes", "yeah"}, Digits: "1", Next: "see-you"},
					{Value: "no", Digits: "2", Next: "sorry"},
				},
				NoInput: retries(1, "Sorry, I did not hear you. Please say yes or no.", "bye"),
				NoMatch: retries(1, "", "bye")}},
			{ID: "sorry", Say: "Sorry to hear that, we will call you to find another time."},
			{Hangup: &switchboardv1.HangupStep{}},
			{ID: "see-you", Play: &switchboardv1.AudioSource{ConfigMapKeyRef: switchboardv1.ConfigMapKeyReference{Name: "sounds", Key: "chime.wav"}}},
			{Say: "See you on {{day}}!"},
			{ID: "bye", Say: "Goodbye."},
		},
	}
}

// The agent's own lines, variables filled, its prompt, and the branch the
// callee's answer takes; the greeting is the agent's, not the simulator's,
// and no goodbye is added after the last step.
func TestScriptChoicesAndBranches(t *testing.T) {
	r := scriptReq("+15551230000", attendance())
	r.Variables = map[string]any{"first_name": "Ada", "day": "Tuesday", "hour": 9}
	checkTurns(t, scriptTurns(t, r), []telephony.Turn{
		agentTurn("Hi Ada, this is the clinic."),
		agentTurn("We have you down for Tuesday at 9."),
		agentTurn("Will you be there? Please say yes or no."),
		said("Yes.", "attending", "yes", "yes", "see-you"),
		agentTurn("(plays sounds/chime.wav)"),
		agentTurn("See you on Tuesday!"),
		agentTurn("Goodbye."),
	})

	// Keys only: the first choice's digits.
	spec := attendance()
	spec.Script[1].Gather.Input = []switchboardv1.GatherInput{switchboardv1.GatherDTMF}
	got := scriptTurns(t, scriptReq("+15551230000", spec))
	want := telephony.Turn{Speaker: "callee", Text: "pressed 1", Field: "attending", Digits: "yes", Branch: "yes", Next: "see-you"}
	if !reflect.DeepEqual(got[3], want) {
		t.Errorf("keyed: got %+v, want %+v", got[3], want)
	}
}

// Each wording names the first choice, and the step takes it.
func TestScriptChoiceWordings(t *testing.T) {
	for _, to := range []string{"+15551230100", "+15551230101", "+15551230102", "+15551230103"} {
		got := scriptTurns(t, scriptReq(to, attendance()))
		if c := got[3]; c.Branch != "yes" || c.Digits != "yes" || c.Field != "attending" {
			t.Errorf("%s: the callee's %q took %+v", to, c.Text, c)
		}
	}
	// A wording that would name another choice too is said bare.
	spec := attendance()
	spec.Script[1].Gather.Choices[1].Phrases = []string{"please"}
	if got := scriptTurns(t, scriptReq("+15551230102", spec)); got[3].Text != "Yes." || got[3].Branch != "yes" {
		t.Errorf("got %+v", got[3])
	}
}

// captures is one gather per capture type, each its own field.
func captures(input ...switchboardv1.GatherInput) switchboardv1.AgentSpec {
	var spec switchboardv1.AgentSpec
	for _, c := range []struct {
		field string
		typ   switchboardv1.ExtractedDataType
		kind  switchboardv1.CaptureType
	}{
		{"party_size", switchboardv1.ExtractedNumber, switchboardv1.CaptureNumber},
		{"account", switchboardv1.ExtractedString, switchboardv1.CaptureDigits},
		{"booking_date", switchboardv1.ExtractedString, switchboardv1.CaptureDate},
		{"arrival_time", switchboardv1.ExtractedString, switchboardv1.CaptureTime},
		{"attending", switchboardv1.ExtractedBoolean, switchboardv1.CaptureYesNo},
		{"customer_name", switchboardv1.ExtractedString, switchboardv1.CaptureText},
	} {
		spec.ExtractedData = append(spec.ExtractedData, switchboardv1.ExtractedDataField{Name: c.field, Type: c.typ})
		spec.Script = append(spec.Script, switchboardv1.ScriptStep{Gather: &switchboardv1.GatherStep{
			Field: c.field, Prompt: "Your " + words(c.field) + "?", Capture: c.kind, Input: input, FinishOnKey: "#",
			NoInput: retries(1, "", ""), NoMatch: retries(1, "", "")}})
	}
	return spec
}

// tomorrow is the day after the test calls were answered, where the
// callee is.
func tomorrow(to string) string {
	return placedAt.Add(DefaultTimings().Ring).In(phone.CalleeZone(to)).AddDate(0, 0, 1).Format(time.DateOnly)
}

// Each capture type is answered with a value of its type, in each
// wording, and taken.
func TestScriptCaptures(t *testing.T) {
	for _, to := range []string{"+15551230100", "+15551230101", "+15551230102", "+15551230103"} {
		r := scriptReq(to, captures())
		r.Variables = map[string]any{"customer_name": "Ada"}
		got := scriptTurns(t, r)
		want := map[string]string{"party_size": "4", "account": "1234", "booking_date": tomorrow(to),
			"arrival_time": "19:00", "attending": "yes"}
		if len(got) != 12 {
			t.Fatalf("%s: %d turns, want 12 (a prompt and an answer each): %+v", to, len(got), got)
		}
		for i := 1; i < len(got); i += 2 {
			c := got[i]
			if c.Branch != "" || c.Recognizer != "simulated" || c.Field == "" {
				t.Errorf("%s: %+v", to, c)
			}
			if v, ok := want[c.Field]; ok && c.Digits != v {
				t.Errorf("%s: %s: %q took %q, want %q", to, c.Field, c.Text, c.Digits, v)
			}
		}
		if name := got[11]; !strings.Contains(name.Digits, "Ada") {
			t.Errorf("%s: the text capture took %q", to, name.Digits)
		}
	}
	// Keyed: number, digits and yes or no can be keyed; a date, a time and
	// text cannot, so they are no match (and asked again).
	got := scriptTurns(t, scriptReq("+15551230100", captures(switchboardv1.GatherDTMF)))
	keyed := map[string]string{"party_size": "4", "account": "1234", "attending": "yes"}
	for _, c := range got {
		if c.Speaker != "callee" {
			continue
		}
		if v, ok := keyed[c.Field]; ok && (c.Digits != v || !strings.HasPrefix(c.Text, "pressed ") || !strings.HasSuffix(c.Text, "#")) {
			t.Errorf("keyed %s: %+v", c.Field, c)
		}
		if c.Field == "" && c.Branch != telephony.BranchNoMatch {
			t.Errorf("a key that cannot be taken: %+v", c)
		}
	}
}

// A gather of keyed digits: a value of its field's type, numDigits long.
func TestScriptKeyedDigits(t *testing.T) {
	spec := switchboardv1.AgentSpec{
		ExtractedData: []switchboardv1.ExtractedDataField{{Name: "pin", Type: switchboardv1.ExtractedString},
			{Name: "guests", Type: switchboardv1.ExtractedNumber}},
		Script: []switchboardv1.ScriptStep{
			{Gather: &switchboardv1.GatherStep{Field: "pin", Prompt: "Your PIN?", NumDigits: 6}},
			{Gather: &switchboardv1.GatherStep{Field: "guests", Prompt: "How many guests? Then press pound.", FinishOnKey: "#"}},
		},
	}
	checkTurns(t, scriptTurns(t, scriptReq("+15551230000", spec)), []telephony.Turn{
		agentTurn("Your PIN?"),
		{Speaker: "callee", Text: "pressed 001234", Field: "pin", Digits: "001234"},
		agentTurn("How many guests? Then press pound."),
		{Speaker: "callee", Text: "pressed 4#", Field: "guests", Digits: "4"},
	})
	// A silent callee: a gather of keyed digits without noInput goes on,
	// as it always did, and records nothing.
	checkTurns(t, scriptTurns(t, scriptReq("+15551230010", spec)), []telephony.Turn{
		agentTurn("Your PIN?"), agentTurn("How many guests? Then press pound.")})
}

// 0010: silence at every gather, re-prompted as noInput says, then its
// next.
func TestScriptNoInput(t *testing.T) {
	r := scriptReq("+15551230010", attendance())
	r.Variables = map[string]any{"first_name": "Ada", "day": "Tuesday", "hour": "9"}
	checkTurns(t, scriptTurns(t, r), []telephony.Turn{
		agentTurn("Hi Ada, this is the clinic."),
		agentTurn("We have you down for Tuesday at 9."),
		agentTurn("Will you be there? Please say yes or no."),
		noAnswer,
		agentTurn("Sorry, I did not hear you. Please say yes or no."),
		{Speaker: "callee", Text: "(no answer)", Branch: telephony.BranchNoInput, Next: "bye", Note: true},
		agentTurn("Goodbye."),
	})
}

// 0011: nonsense first, then, re-prompted with the gather's own prompt,
// a valid answer. 0012: nonsense every time, then noMatch's next.
func TestScriptNoMatch(t *testing.T) {
	r := scriptReq("+15551230011", attendance())
	r.Variables = map[string]any{"first_name": "Ada", "day": "Tuesday", "hour": "9"}
	checkTurns(t, scriptTurns(t, r)[2:], []telephony.Turn{
		agentTurn("Will you be there? Please say yes or no."),
		said("Purple monkey dishwasher.", "", "", telephony.BranchNoMatch),
		agentTurn("Will you be there? Please say yes or no."),
		said("I'd say yes.", "attending", "yes", "yes", "see-you"),
		agentTurn("(plays sounds/chime.wav)"),
		agentTurn("See you on Tuesday!"),
		agentTurn("Goodbye."),
	})
	r.To = "+15551230012"
	checkTurns(t, scriptTurns(t, r)[2:], []telephony.Turn{
		agentTurn("Will you be there? Please say yes or no."),
		said("Purple monkey dishwasher.", "", "", telephony.BranchNoMatch),
		agentTurn("Will you be there? Please say yes or no."),
		said("Purple monkey dishwasher.", "", "", telephony.BranchNoMatch, "bye"),
		agentTurn("Goodbye."),
	})
	// Keys only: a key no choice has.
	spec := attendance()
	spec.Script[1].Gather.Input = []switchboardv1.GatherInput{switchboardv1.GatherDTMF}
	spec.Script[1].Gather.FinishOnKey = "#"
	got := scriptTurns(t, scriptReq("+15551230012", spec))
	if c := got[3]; c.Text != "pressed *#" || c.Branch != telephony.BranchNoMatch || c.Digits != "" {
		t.Errorf("keyed nonsense: %+v", c)
	}
}

// A script that goes round (noMatch goes back to the gather, which never
// gets an answer it can take) is cut at MaxScriptSteps and ends as a real
// call does at its maximum duration; one that ends is the agent's hangup.
func TestScriptLoopBounded(t *testing.T) {
	spec := attendance()
	spec.Script[1].Gather.NoMatch = retries(0, "", "ask")
	c := New(DefaultTimings())
	r := scriptReq("+15551230012", spec)
	p := progress(t, c, r, placedAt.Add(time.Hour))
	if p.DisconnectionReason != "max_duration" || p.Disposition != telephony.Answered {
		t.Errorf("a looping script ended %s, %s; want answered, max_duration", p.Disposition, p.DisconnectionReason)
	}
	got := scriptTurns(t, r)
	// The greeting, the say step, then MaxScriptSteps-2 times the prompt
	// and the nonsense.
	if want := 2 + 2*(MaxScriptSteps-2); len(got) != want {
		t.Errorf("%d turns, want %d", len(got), want)
	}
	if last := got[len(got)-1]; last.Branch != telephony.BranchNoMatch || last.Next != "ask" {
		t.Errorf("last turn %+v", last)
	}
	// The same script ends for a callee who answers.
	if p := progress(t, c, scriptReq("+15551230000", spec), placedAt.Add(time.Hour)); p.DisconnectionReason != "agent_hangup" {
		t.Errorf("a script that ends: %s", p.DisconnectionReason)
	}
	// The recording holds every turn, placed within it.
	placed, err := c.Transcript(context.Background(), r, p)
	if err != nil {
		t.Fatal(err)
	}
	if last := placed[len(placed)-1]; last.End > p.Duration || last.End <= last.Start {
		t.Errorf("the last turn is at %v-%v of %v", last.Start, last.End, p.Duration)
	}
}

// The analysis extracts what the simulated callee gave a scripted agent's
// gathers exactly as from a SIP call: the value each step took, and null,
// never "no", for a gather that got silence or nonsense.
func TestScriptAnalysis(t *testing.T) {
	spec := captures()
	spec.ExtractedData = append(spec.ExtractedData, switchboardv1.ExtractedDataField{Name: "confirmed", Type: switchboardv1.ExtractedBoolean})
	spec.Script = append(spec.Script, switchboardv1.ScriptStep{Gather: &switchboardv1.GatherStep{Field: "confirmed",
		Prompt: "Shall we keep it?", Choices: []switchboardv1.GatherChoice{{Value: "yes", Digits: "1"}, {Value: "no", Digits: "2"}},
		NoInput: retries(1, "", ""), NoMatch: retries(1, "", "")}})
	c := New(DefaultTimings())
	analyze := func(to string) map[string]any {
		r := scriptReq(to, spec)
		r.Variables = map[string]any{"customer_name": "Ada"}
		p := progress(t, c, r, placedAt.Add(time.Hour))
		turns, err := c.Transcript(context.Background(), r, p)
		if err != nil {
			t.Fatal(err)
		}
		return analysis.Analyze(r, p, turns).ExtractedData
	}
	for _, tc := range []struct {
		to, name string
	}{{"+15551230100", "My customer name is Ada."}, {"+15551230101", "It's Ada."},
		{"+15551230102", "Um, Ada."}, {"+15551230103", "Ada."},
		// Asked again after nonsense; but a text capture takes any words.
		{"+15551230011", "Purple monkey dishwasher."}} {
		want := map[string]any{"party_size": 4.0, "account": "1234", "booking_date": tomorrow(tc.to), "arrival_time": "19:00",
			"attending": true, "customer_name": tc.name, "confirmed": true}
		if got := analyze(tc.to); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: extracted %v, want %v", tc.to, got, want)
		}
	}
	nulls := map[string]any{"party_size": nil, "account": nil, "booking_date": nil, "arrival_time": nil,
		"attending": nil, "customer_name": nil, "confirmed": nil}
	if got := analyze("+15551230010"); !reflect.DeepEqual(got, nulls) {
		t.Errorf("a silent callee: extracted %v, want every field null", got)
	}
	// Nonsense is no value, but a text capture takes any words.
	nulls["customer_name"] = "Purple monkey dishwasher."
	if got := analyze("+15551230012"); !reflect.DeepEqual(got, nulls) {
		t.Errorf("a nonsense callee: extracted %v, want %v", got, nulls)
	}
}

// An agent without a script keeps the fields' questions, whatever the
// number (0010 to 0012 included).
func TestNoScriptUnchanged(t *testing.T) {
	for _, to := range []string{"+15551230010", "+15551230012"} {
		r := scriptReq(to, switchboardv1.AgentSpec{Greeting: "Hello.",
			ExtractedData: []switchboardv1.ExtractedDataField{{Name: "party_size", Type: switchboardv1.ExtractedNumber}}})
		got := scriptTurns(t, r)
		if len(got) != 4 || got[1].Text != "Could you tell me your party size?" || got[3].Text != goodbye {
			t.Errorf("%s: %+v", to, got)
		}
	}
}
