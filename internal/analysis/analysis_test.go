package analysis

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/sim"
)

var fields = []telephony.Field{
	{Name: "first_name", Type: "string"},
	{Name: "age", Type: "number"},
	{Name: "wants_callback", Type: "boolean"},
}

func answered(d time.Duration) telephony.Progress {
	return telephony.Progress{Phase: telephony.Ended, Disposition: telephony.Answered, Duration: d}
}

func callee(lines ...string) []telephony.Turn {
	turns := []telephony.Turn{{Speaker: "agent", Text: "My first name is Agent."}}
	for _, l := range lines {
		turns = append(turns, telephony.Turn{Speaker: "callee", Text: l})
	}
	return turns
}

func TestExtraction(t *testing.T) {
	tests := []struct {
		name  string
		turns []telephony.Turn
		want  map[string]any
	}{
		{"all types", callee("My first name is Ada.", "MY AGE IS 42.", "my wants callback is Yes."),
			map[string]any{"first_name": "Ada", "age": 42.0, "wants_callback": true}},
		{"missing", callee("I'd rather not say."),
			map[string]any{"first_name": nil, "age": nil, "wants_callback": nil}},
		{"numbers in words", callee("My age is forty-two.", "My wants callback is maybe."),
			map[string]any{"first_name": nil, "age": 42.0, "wants_callback": nil}},
		{"wrong types", callee("My age is old.", "My wants callback is blue."),
			map[string]any{"first_name": nil, "age": nil, "wants_callback": nil}},
		{"not a JSON number", callee("My age is NaN."),
			map[string]any{"first_name": nil, "age": nil, "wants_callback": nil}},
		{"false and decimals", callee("Well, my age is 3.5! And my wants callback is no. My first name is a@b.com"),
			map[string]any{"first_name": "a@b.com", "age": 3.5, "wants_callback": false}},
		{"other booleans", callee("My wants callback is yeah."),
			map[string]any{"first_name": nil, "age": nil, "wants_callback": true}},
		{"last statement wins", callee("My age is 30.", "Sorry, my age is 31."),
			map[string]any{"first_name": nil, "age": 31.0, "wants_callback": nil}},
		{"agent turns ignored", callee(),
			map[string]any{"first_name": nil, "age": nil, "wants_callback": nil}},
		{"name words must match", callee("My name is Ada.", "My first  name is Bob."),
			map[string]any{"first_name": "Bob", "age": nil, "wants_callback": nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Analyze(telephony.Request{Fields: fields}, answered(4*time.Second), tt.turns)
			if !reflect.DeepEqual(got.ExtractedData, tt.want) {
				t.Errorf("got %#v, want %#v", got.ExtractedData, tt.want)
			}
		})
	}
}

func TestExactKeys(t *testing.T) {
	turns := callee("My nickname is Ace.", "My first name is Ada.")
	got := Analyze(telephony.Request{Fields: fields[:1]}, answered(time.Second), turns).ExtractedData
	if want := map[string]any{"first_name": "Ada"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v, want %#v", got, want)
	}
	if got := Analyze(telephony.Request{}, answered(time.Second), turns).ExtractedData; got == nil || len(got) != 0 {
		t.Errorf("no fields: got %#v, want empty map", got)
	}
}

func TestSummary(t *testing.T) {
	ended := func(d telephony.Disposition) telephony.Progress {
		return telephony.Progress{Phase: telephony.Ended, Disposition: d}
	}
	vm := ended(telephony.AnsweringMachine)
	vm.Duration = 2 * time.Second
	tests := []struct {
		name   string
		fields []telephony.Field
		p      telephony.Progress
		turns  []telephony.Turn
		want   string
	}{
		{"answered", fields, answered(4 * time.Second), callee("My first name is Ada.", "My age is 42."),
			"The callee answered and spoke with the agent for 4 seconds; 2 of 3 requested details were captured."},
		{"one field", fields[:1], answered(time.Second), callee("My first name is Ada."),
			"The callee answered and spoke with the agent for 1 second; the requested detail was captured."},
		{"one field missing", fields[:1], answered(1500 * time.Millisecond), nil,
			"The callee answered and spoke with the agent for 2 seconds; the requested detail was not captured."},
		{"no fields", nil, answered(4 * time.Second), nil,
			"The callee answered and spoke with the agent for 4 seconds; no details were requested."},
		{"answering machine", fields, vm, nil,
			"The call reached an answering machine; the agent left a message (the call lasted 2 seconds)."},
		{"busy", fields, ended(telephony.Busy), nil, "The call was not answered: the line was busy."},
		{"no answer", fields, ended(telephony.NoAnswer), nil, "The call was not answered: nobody answered."},
		{"rejected", fields, ended(telephony.Rejected), nil, "The call was not answered: the callee declined the call."},
		{"unreachable", fields, ended(telephony.Unreachable), nil, "The call was not answered: the number could not be reached."},
		{"invalid", fields, ended(telephony.InvalidNumber), nil, "The call was not answered: the number is not in service."},
		{"carrier", fields, ended(telephony.CarrierFailure), nil, "The call was not answered: the carrier failed to connect it."},
		{"ringing", fields, telephony.Progress{Phase: telephony.Ringing}, nil, "The call has not ended yet."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Analyze(telephony.Request{Fields: tt.fields}, tt.p, tt.turns)
			if got.Summary != tt.want {
				t.Errorf("got  %q\nwant %q", got.Summary, tt.want)
			}
		})
	}
}

// TestNotConnected checks that a non-connected call yields only nulls, even
// if handed a transcript.
func TestNotConnected(t *testing.T) {
	p := telephony.Progress{Phase: telephony.Ended, Disposition: telephony.Busy}
	for _, turns := range [][]telephony.Turn{nil, {}, callee("My age is 42.")} {
		got := Analyze(telephony.Request{Fields: fields}, p, turns).ExtractedData
		want := map[string]any{"first_name": nil, "age": nil, "wants_callback": nil}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got %#v, want %#v", got, want)
		}
	}
}

// TestSimulatedCall runs the simulator's script through the analyzer, the
// way the reconciler does.
func TestSimulatedCall(t *testing.T) {
	req := telephony.Request{To: "+15551230000", Fields: slices.Concat(fields, []telephony.Field{{Name: "plan", Type: "string"}}),
		Variables: map[string]any{"first_name": "Ada"}}
	p, turns := simulate(t, req)
	got := Analyze(req, p, turns)
	want := Result{
		Summary:       "The callee answered and spoke with the agent for 4 seconds; 4 of 4 requested details were captured.",
		ExtractedData: map[string]any{"first_name": "Ada", "age": 4.0, "wants_callback": true, "plan": "simulated"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v, want %#v", got, want)
	}
}

// simulate places req on the simulated carrier and returns how it ended
// and its transcript, as the reconciler reads them.
func simulate(t *testing.T, req telephony.Request) (telephony.Progress, []telephony.Turn) {
	t.Helper()
	ctx, c := context.Background(), sim.New(sim.DefaultTimings())
	placed := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p, err := c.Progress(ctx, req, placed, placed.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	turns, err := c.Transcript(ctx, req, p)
	if err != nil {
		t.Fatal(err)
	}
	return p, turns
}

func TestKeyedDigitsFillFields(t *testing.T) {
	fields := []telephony.Field{{Name: "account", Type: "string"}, {Name: "amount", Type: "number"},
		{Name: "confirmed", Type: "boolean"}, {Name: "callback", Type: "boolean"}}
	turns := []telephony.Turn{
		{Speaker: "agent", Text: "Key your account number."},
		{Speaker: "callee", Text: "pressed 0042", Field: "account", Digits: "0042"},
		{Speaker: "callee", Text: "pressed 17", Field: "amount", Digits: "17"},
		{Speaker: "callee", Text: "pressed 1", Field: "confirmed", Digits: "1"},
		{Speaker: "callee", Text: "pressed 9", Field: "callback", Digits: "9"}, // neither yes nor no
	}
	p := answered(30 * time.Second)
	p.DisconnectionReason = "user_hangup"
	got, err := Rules{}.Analyze(context.Background(), telephony.Request{Fields: fields}, p, turns)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"account": "0042", "amount": 17.0, "confirmed": true, "callback": nil}
	if !reflect.DeepEqual(got.ExtractedData, want) {
		t.Errorf("extracted %v, want %v", got.ExtractedData, want)
	}
	wantSummary := "The callee answered and spoke with the agent for 30 seconds; 3 of 4 requested details were captured." +
		" The callee keyed 0042 for account, 17 for amount, 1 for confirmed, 9 for callback. The callee hung up."
	if got.Summary != wantSummary {
		t.Errorf("summary\n got  %q\n want %q", got.Summary, wantSummary)
	}
}

func TestSummaryOfVoicemailWithoutMessage(t *testing.T) {
	p := telephony.Progress{Phase: telephony.Ended, Disposition: telephony.AnsweringMachine,
		DisconnectionReason: "voicemail", Duration: 3 * time.Second}
	turns := []telephony.Turn{{Speaker: "callee", Text: "(answering machine greeting)"}}
	got := Analyze(telephony.Request{}, p, turns)
	if want := "The call reached an answering machine; the agent hung up without leaving a message."; got.Summary != want {
		t.Errorf("got %q, want %q", got.Summary, want)
	}
}

// A gather that heard its answer records the value it took (a choice's
// "yes", a captured number) where keys would be: the analysis reads it
// as the field's type, and the summary says the callee answered, not keyed.
func TestSpokenGatherAnswers(t *testing.T) {
	fields := []telephony.Field{{Name: "confirmed", Type: "boolean"}, {Name: "party_size", Type: "number"},
		{Name: "day", Type: "string"}}
	turns := []telephony.Turn{
		{Speaker: "agent", Text: "Shall we keep your booking?"},
		{Speaker: "callee", Text: "yeah sure", Field: "confirmed", Digits: "yes", Branch: "yes", Recognizer: "embedded"},
		{Speaker: "agent", Text: "How many of you will come?"},
		{Speaker: "callee", Text: "there will be four of us", Field: "party_size", Digits: "4", Recognizer: "embedded"},
		{Speaker: "callee", Text: "pressed 3", Field: "day", Digits: "3"},
	}
	got, err := Rules{}.Analyze(context.Background(), telephony.Request{Fields: fields}, answered(20*time.Second), turns)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"confirmed": true, "party_size": 4.0, "day": "3"}; !reflect.DeepEqual(got.ExtractedData, want) {
		t.Errorf("extracted %v, want %v", got.ExtractedData, want)
	}
	if !strings.Contains(got.Summary, " The callee keyed 3 for day. The callee answered yes for confirmed, 4 for party_size.") {
		t.Errorf("summary %q: want the keyed and the spoken answers told apart", got.Summary)
	}
}

// A transferred call's summary says it was handed to a person.
func TestSummaryOfTransferredCalls(t *testing.T) {
	for reason, want := range map[string]string{
		"call_transfer":    "The agent transferred the callee to a person, and the carrier connected them.",
		"transfer_bridged": "The agent transferred the callee to a person, who answered and was connected until the call ended.",
	} {
		p := answered(40 * time.Second)
		p.DisconnectionReason = reason
		got := Analyze(telephony.Request{}, p, nil)
		if !strings.HasSuffix(got.Summary, " "+want) {
			t.Errorf("%s: summary %q, want it to end %q", reason, got.Summary, want)
		}
	}
}
