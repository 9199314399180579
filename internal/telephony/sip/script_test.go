package sip

import (
	"testing"
	"time"
)

// The callee (baresip) types 1234# during the PIN prompt: the gather stops
// the prompt at the first key, keeps 1234, and the script goes on.
func TestGatherDigitsFromBaresip(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	b := startBaresip(t, make([]int16, 20*sampleRate)) // 20 s of silence
	typed := make(chan error, 1)
	res := place(t, e, Trunk{Address: "sip:" + b.addr}, CallSpec{
		Script: []Step{
			{Text: "Enter your PIN, then hash.", Audio: tone(4 * time.Second),
				Gather: &Gather{Field: "pin", FinishOnKey: "#", Timeout: 3 * time.Second}},
			{Text: "Thank you.", Audio: tone(300 * time.Millisecond)},
		},
		OnAnswer: func(time.Time) {
			go func() {
				time.Sleep(time.Second) // baresip got our ACK
				typed <- b.command("sndcode", "1234#")
			}()
		},
	})
	select {
	case err := <-typed:
		if err != nil {
			t.Fatalf("baresip sndcode: %v", err)
		}
	default:
		t.Fatalf("result %+v: the call ended before we typed", res)
	}
	b.waitCallEnded(t)
	if !res.Answered || res.HangupBy != HangupByAgent {
		t.Fatalf("result %+v: want answered, agent hangup after the script", res)
	}
	if got := res.Digits["pin"]; got != "1234" {
		t.Errorf("pin %q, want 1234 (digits %v)", got, res.Digits)
	}
	want := []Event{{Speaker: SpeakerAgent, Text: "Enter your PIN, then hash."}, {Speaker: SpeakerCallee, Text: "pressed 1234#"}, {Speaker: SpeakerAgent, Text: "Thank you."}}
	assertTranscript(t, res, want)
	// The keys cut the 4 s prompt.
	if d := res.EndedAt.Sub(res.AnsweredAt); d > 3500*time.Millisecond {
		t.Errorf("connected for %s, want the prompt cut by the keys (under 3.5 s)", d)
	}
}

// assertTranscript checks the speakers and texts of res.Events, and that
// their times are in order within the call.
func assertTranscript(t *testing.T, res Result, want []Event) {
	t.Helper()
	ok := len(res.Events) == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = res.Events[i].Speaker == want[i].Speaker && res.Events[i].Text == want[i].Text
	}
	if !ok {
		t.Errorf("transcript %+v, want %+v", res.Events, want)
	}
	last := res.AnsweredAt
	for _, ev := range res.Events {
		if ev.At.Before(last) || ev.At.After(res.EndedAt) {
			t.Errorf("event %+v out of order or outside the call (%s to %s)", ev, res.AnsweredAt, res.EndedAt)
		}
		last = ev.At
	}
}
