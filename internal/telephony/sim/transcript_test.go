package sim

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/telephony"
)

func endedProgress(t *testing.T, to string) telephony.Progress {
	t.Helper()
	return progress(t, New(DefaultTimings()), req(to), placedAt.Add(time.Hour))
}

func TestTranscriptAnswered(t *testing.T) {
	r := req("+15551230000")
	r.Variables = map[string]any{"first_name": "Ada", "city": 7}
	r.Fields = []telephony.Field{
		{Name: "first_name", Type: "string"},
		{Name: "city", Type: "string", Description: "Where the callee lives."},
		{Name: "age", Type: "number", Description: "NPS score"},
		{Name: "wants_callback", Type: "boolean"},
	}
	want := []telephony.Turn{
		{Speaker: "agent", Text: "Hello, this is an automated call."},
		{Speaker: "agent", Text: "Could you tell me your first name?"},
		{Speaker: "callee", Text: "My first name is Ada."},
		{Speaker: "agent", Text: "Could you tell me where the callee lives?"},
		{Speaker: "callee", Text: "My city is simulated."}, // variable is not a string
		{Speaker: "agent", Text: "Could you tell me NPS score?"},
		{Speaker: "callee", Text: "Four."},
		{Speaker: "agent", Text: "Could you tell me your wants callback?"},
		{Speaker: "callee", Text: "Yes."},
		{Speaker: "agent", Text: "Thank you for your time. Goodbye."},
	}
	p := endedProgress(t, r.To)
	got, err := New(DefaultTimings()).Transcript(context.Background(), r, p)
	if err != nil {
		t.Fatal(err)
	}
	// Each turn has an equal slot of the recording and speaks in the
	// first four fifths of it.
	slot := p.Duration / time.Duration(len(want))
	for i := range want {
		want[i].Start = (time.Duration(i) * slot).Truncate(time.Millisecond)
		want[i].End = (time.Duration(i)*slot + slot*4/5).Truncate(time.Millisecond)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
	if last := got[len(got)-1]; last.End > p.Duration || last.End <= last.Start {
		t.Errorf("the last turn ends at %v, after the %v recording", last.End, p.Duration)
	}
}

// The callee's wording varies with the destination's last two digits, so
// the analysis is shown real phrasing.
func TestTranscriptWording(t *testing.T) {
	tests := []struct {
		to                       string
		number, boolean, stringy string
	}{
		{"+15551230100", "Four.", "Yes.", "My first name is Ada."},
		{"+15551230101", "There will be four of us.", "Yeah, sure.", "It's Ada."},
		{"+14155551234", "Um, four people.", "That's right.", "Um, Ada."},
		{"+15551230199", "4.", "Yep, that's correct.", "Ada."},
	}
	for _, tt := range tests {
		r := req(tt.to)
		r.Variables = map[string]any{"first_name": "Ada"}
		r.Fields = []telephony.Field{{Name: "party_size", Type: "number"}, {Name: "ok", Type: "boolean"},
			{Name: "first_name", Type: "string"}}
		got, err := New(DefaultTimings()).Transcript(context.Background(), r, endedProgress(t, r.To))
		if err != nil {
			t.Fatal(err)
		}
		if got[2].Text != tt.number || got[4].Text != tt.boolean || got[6].Text != tt.stringy {
			t.Errorf("%s: answers %q, %q, %q; want %q, %q, %q", tt.to, got[2].Text, got[4].Text, got[6].Text,
				tt.number, tt.boolean, tt.stringy)
		}
	}
}

func TestTranscriptGreeting(t *testing.T) {
	r := req("+15551230000")
	r.Greeting = "Hi, this is Dr. Who's office."
	got, err := New(DefaultTimings()).Transcript(context.Background(), r, endedProgress(t, r.To))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Text != r.Greeting || got[1].Speaker != "agent" {
		t.Errorf("got %+v", got)
	}
}

func TestTranscriptVoicemail(t *testing.T) {
	r := req("+15551230003")
	r.Fields = []telephony.Field{{Name: "first_name", Type: "string"}}
	got, err := New(DefaultTimings()).Transcript(context.Background(), r, endedProgress(t, r.To))
	if err != nil {
		t.Fatal(err)
	}
	greeting := "You have reached the voicemail of +15551230003. Please leave a message after the tone."
	if len(got) != 2 || got[0].Speaker != "callee" || got[0].Text != greeting || got[1].Speaker != "agent" {
		t.Errorf("got %+v", got)
	}
}

// TestNoAudio covers calls that have no transcript or recording.
func TestNoAudio(t *testing.T) {
	c, ctx := New(DefaultTimings()), context.Background()
	r := req("+15551230000")
	tests := map[string]telephony.Progress{
		"busy":      endedProgress(t, "+15551230001"),
		"no answer": endedProgress(t, "+15551230002"),
		"ringing":   progress(t, c, r, placedAt),
		"connected": progress(t, c, r, placedAt.Add(2*time.Second)),
	}
	for name, p := range tests {
		if _, err := c.Transcript(ctx, r, p); err == nil {
			t.Errorf("%s: Transcript: want error", name)
		}
		if _, err := c.Recording(ctx, r, p); err == nil {
			t.Errorf("%s: Recording: want error", name)
		}
	}
}
