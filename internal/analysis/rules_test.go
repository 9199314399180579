package analysis

import (
	"reflect"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/sim"
)

var booking = []telephony.Field{
	{Name: "party_size", Type: "number", Description: "How many people will be dining"},
	{Name: "confirmed", Type: "boolean"},
	{Name: "customer_name", Type: "string"},
	{Name: "booking_date", Type: "string", Description: "The day of the booking"},
	{Name: "arrival_time", Type: "string"},
}

// Thursday 26 November 2026.
var endedAt = time.Date(2026, time.November, 26, 18, 0, 0, 0, time.UTC)

func endedCall() telephony.Progress {
	p := answered(time.Minute)
	p.EndedAt = &endedAt
	return p
}

// The callee's reply to the agent's question fills the field, in the
// words people use: "party_size" is 4 when they said "four people".
func TestRepliesInPeoplesWords(t *testing.T) {
	tests := []struct {
		name    string
		replies []string
		want    map[string]any
	}{
		{"plain", []string{"Four.", "Yes.", "Ada.", "Tomorrow.", "Seven thirty pm."},
			map[string]any{"party_size": 4.0, "confirmed": true, "customer_name": "Ada", "booking_date": "2026-11-27", "arrival_time": "19:30"}},
		{"sentences", []string{"There will be four of us.", "Yeah, sure.", "It's Ada Lovelace.", "Next friday, please.", "At half past seven in the evening."},
			map[string]any{"party_size": 4.0, "confirmed": true, "customer_name": "Ada Lovelace", "booking_date": "2026-11-27", "arrival_time": "19:30"}},
		{"hesitations", []string{"Um, four people.", "That's right.", "Um, Ada.", "Uh, december third.", "Um, 7:30 pm."},
			map[string]any{"party_size": 4.0, "confirmed": true, "customer_name": "Ada", "booking_date": "2026-12-03", "arrival_time": "19:30"}},
		{"digits", []string{"4", "Yep, that's correct.", "Ada", "2027-01-05", "19:30"},
			map[string]any{"party_size": 4.0, "confirmed": true, "customer_name": "Ada", "booking_date": "2027-01-05", "arrival_time": "19:30"}},
		{"no values", []string{"Two or three.", "I'm not sure.", "I'd rather not say.", "Whenever.", "Later."},
			map[string]any{"party_size": nil, "confirmed": nil, "customer_name": nil, "booking_date": nil, "arrival_time": nil}},
		{"no", []string{"Twenty three", "No thanks.", "No.", "Friday", "Noon"},
			map[string]any{"party_size": 23.0, "confirmed": false, "customer_name": nil, "booking_date": "2026-11-27", "arrival_time": "12:00"}},
	}
	questions := []string{"How many people will be dining?", "Is that confirmed?", "Your customer name?",
		"The day of the booking?", "What is your arrival time?"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var turns []telephony.Turn
			for i, q := range questions {
				turns = append(turns, telephony.Turn{Speaker: "agent", Text: q}, telephony.Turn{Speaker: "callee", Text: tt.replies[i]})
			}
			got := Analyze(telephony.Request{Fields: booking}, endedCall(), turns).ExtractedData
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %v\nwant %v", got, tt.want)
			}
		})
	}
}

// Relative dates are read where the callee is, from their number: at
// 18:00 UTC on Thursday it is already Friday morning in Sydney, so
// "tomorrow" there is Saturday, and in New York it is Thursday still.
func TestRelativeDatesInCalleesZone(t *testing.T) {
	turns := []telephony.Turn{{Speaker: "agent", Text: "The day of the booking?"}, {Speaker: "callee", Text: "Tomorrow."}}
	fields := []telephony.Field{booking[3]}
	for to, want := range map[string]string{"+61255550100": "2026-11-28", "+12125550100": "2026-11-27", "+999123": "2026-11-27"} {
		got := Analyze(telephony.Request{To: to, Fields: fields}, endedCall(), turns).ExtractedData["booking_date"]
		if got != want {
			t.Errorf("\"tomorrow\" said on %s: %v, want %s", to, got, want)
		}
	}
}

// A gather step's answer wins over what the transcript says otherwise:
// keys, the choice it matched, or the words it heard; a noMatch is no
// answer.
func TestGatherResultsFirst(t *testing.T) {
	turns := []telephony.Turn{
		{Speaker: "agent", Text: "How many people will be dining?"},
		{Speaker: "callee", Text: "Um, four people.", Field: "party_size", Branch: "noMatch"},
		{Speaker: "callee", Text: "five", Field: "party_size", Confidence: 0.8, Recognizer: "embedded"},
		{Speaker: "agent", Text: "Is that confirmed?"},
		{Speaker: "callee", Text: "yeah", Field: "confirmed", Branch: "no"}, // the interpreter matched the choice "no"
		{Speaker: "callee", Text: "My customer name is Bob."},
		{Speaker: "callee", Text: "pressed 1234#", Field: "customer_name", Digits: "1234"},
	}
	got := Analyze(telephony.Request{Fields: booking}, endedCall(), turns).ExtractedData
	want := map[string]any{"party_size": 5.0, "confirmed": false, "customer_name": "1234", "booking_date": nil, "arrival_time": nil}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
}

// Every wording of the simulated callee reads the same through the same
// analysis code a real call's transcript goes through.
func TestSimulatedCalleeWordings(t *testing.T) {
	for _, to := range []string{"+14155550100", "+14155550101", "+14155551234", "+14155550199"} {
		req := telephony.Request{To: to, Fields: booking[:3], Variables: map[string]any{"customer_name": "Ada"}}
		p, turns := simulate(t, req)
		got := Analyze(req, p, turns).ExtractedData
		want := map[string]any{"party_size": 4.0, "confirmed": true, "customer_name": "Ada"}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s (wording %d): got %v, want %v", to, sim.Wording(to), got, want)
		}
	}
}
