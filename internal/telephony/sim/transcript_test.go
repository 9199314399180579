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
		{Speaker: "callee", Text: "My age is 42."},
		{Speaker: "agent", Text: "Could you tell me your wants callback?"},
		{Speaker: "callee", Text: "My wants callback is yes."},
		{Speaker: "agent", Text: "Thank you for your time. Goodbye."},
	}
	got, err := New(DefaultTimings()).Transcript(context.Background(), r, endedProgress(t, r.To))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
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
	greeting := telephony.Turn{Speaker: "callee", Text: "You have reached the voicemail of +15551230003. Please leave a message after the tone."}
	if len(got) != 2 || got[0] != greeting || got[1].Speaker != "agent" {
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
