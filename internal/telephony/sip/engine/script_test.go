package engine

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/siptest"
	"github.com/switchboard-dev/switchboard/internal/telephony/speech"
)

// The callee (baresip) types 1234# during the PIN prompt: the gather stops
// the prompt at the first key, keeps 1234, and the script goes on.
func TestGatherDigitsFromBaresip(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	b := startBaresip(t, make([]int16, 20*sampleRate)) // 20 s of silence
	res := placeTypingPIN(t, e, Trunk{Address: "sip:" + b.addr}, b.Baresip, "1234#")
	b.waitCallEnded(t)
	if !res.Answered || res.HangupBy != HangupByAgent {
		t.Fatalf("result %+v: want answered, agent hangup after the script", res)
	}
	if got := res.Digits["pin"]; got != "1234" {
		t.Errorf("pin %q, want 1234 (digits %v)", got, res.Digits)
	}
	want := []Event{{Turn: telephony.Turn{Speaker: SpeakerAgent, Text: "Enter your PIN, then hash."}}, {Turn: telephony.Turn{Speaker: SpeakerCallee, Text: "pressed 1234#"}}, {Turn: telephony.Turn{Speaker: SpeakerAgent, Text: "Thank you."}}}
	assertTranscript(t, res, want)
	if ev := res.Events[1]; ev.Field != "pin" || ev.Digits != "1234" {
		t.Errorf("the gather's event carries field %q digits %q, want pin 1234", ev.Field, ev.Digits)
	}
	// The keys cut the 4 s prompt.
	if d := res.EndedAt.Sub(res.AnsweredAt); d > 3500*time.Millisecond {
		t.Errorf("connected for %s, want the prompt cut by the keys (under 3.5 s)", d)
	}
}

// assertTranscript checks the speakers and texts of res.Events, and that
// their times are in order within the call and placed on its timeline.
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
		// Every event is placed on the call's timeline (issue 36).
		if ev.Start <= 0 || ev.End < ev.Start {
			t.Errorf("event %+v not placed on the call's timeline", ev)
		}
	}
}

// A gather without a key times out, leaves no digits, and the script goes
// on.
func TestGatherTimesOut(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	s := startSipp(t, "udp", scenario(t, "uas.xml")...)
	res := place(t, e, Trunk{Address: "sip:" + s.addr}, CallSpec{Script: []Step{
		{Text: "Press 1.", Audio: tone(500 * time.Millisecond), Gather: &Gather{Field: "choice", NumDigits: 1, Timeout: time.Second}},
		{Text: "Goodbye."},
	}})
	s.wait(t)
	if !res.Answered || res.HangupBy != HangupByAgent || res.Digits != nil {
		t.Fatalf("result %+v: want agent hangup, no digits", res)
	}
	if d := res.EndedAt.Sub(res.AnsweredAt); d < 1500*time.Millisecond || d > 4*time.Second {
		t.Errorf("connected for %s, want the 0.5 s prompt and the 1 s timeout", d)
	}
	assertTranscript(t, res, []Event{{Turn: telephony.Turn{Speaker: SpeakerAgent, Text: "Press 1."}}, {Turn: telephony.Turn{Speaker: SpeakerAgent, Text: "Goodbye."}}})
}

func TestGatherInput(t *testing.T) {
	for _, tc := range []struct {
		name   string
		g      Gather
		keys   string
		used   int // keys taken before the input was complete
		digits string
		event  string
	}{
		{"finish key", Gather{FinishOnKey: "#"}, "1234#9", 5, "1234", "pressed 1234#"},
		{"finish key alone", Gather{FinishOnKey: "#"}, "#", 1, "", "pressed #"},
		{"number of digits", Gather{NumDigits: 2}, "123", 2, "12", "pressed 12"},
		{"finish key before the number", Gather{NumDigits: 4, FinishOnKey: "*"}, "12*3", 3, "12", "pressed 12*"},
		{"star kept without a finish key", Gather{NumDigits: 3}, "*0#", 3, "*0#", "pressed *0#"},
		{"timed out after keys", Gather{}, "42", 2, "42", "pressed 42"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.g.Field = "f"
			in := &input{g: tc.g}
			used := 0
			for i := range len(tc.keys) {
				used++
				if in.press(keyPress{key: tc.keys[i], at: time.Now()}) {
					break
				}
			}
			var res Result
			a := answer{keys: in}
			new(callMedia).record(&res, tc.g, a, tc.g.decide(a, time.Now()))
			if used != tc.used || res.Digits["f"] != tc.digits || len(res.Events) != 1 || res.Events[0].Text != tc.event {
				t.Errorf("took %d keys, digits %v, events %+v: want %d keys, %q, %q", used, res.Digits, res.Events, tc.used, tc.digits, tc.event)
			}
		})
	}
}

// A script that cannot run is refused before we dial, saying why.
func TestValidateScript(t *testing.T) {
	yes := []Choice{{Value: "yes", Digits: "1"}}
	for _, tc := range []struct {
		name   string
		script []Step
		want   string // "" valid
	}{
		{"keyed digits", []Step{{Gather: &Gather{Field: "pin"}}}, ""},
		{"branching", []Step{{ID: "a", Gather: &Gather{Speech: true, Choices: []Choice{{Value: "yes", Next: "a"}},
			NoInput: &Retry{Next: "b"}}}, {ID: "b"}}, ""},
		{"no answer", []Step{{Gather: &Gather{}}}, "script step 0: gather has no field, choices or capture type"},
		{"speech without choices", []Step{{Gather: &Gather{Field: "pin", Speech: true}}},
			"script step 0: gather listens to speech without choices or a capture type"},
		{"unknown capture", []Step{{Gather: &Gather{Capture: "colour"}}},
			`script step 0: gather capture type "colour": want number, digits, date, time, yes_no or text`},
		{"next names nothing", []Step{{Gather: &Gather{Choices: yes, Next: "end"}}},
			`script step 0: gather goes to step "end", which the script does not have`},
		{"choice next names nothing", []Step{{Gather: &Gather{Choices: []Choice{{Value: "no", Next: "bye"}}}}},
			`script step 0: gather goes to step "bye", which the script does not have`},
		{"retry next names nothing", []Step{{Gather: &Gather{Choices: yes, NoMatch: &Retry{Next: "x"}}}},
			`script step 0: gather goes to step "x", which the script does not have`},
		{"duplicate ids", []Step{{ID: "a"}, {ID: "a"}}, `script step 1: id "a" is taken`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CallSpec{Script: tc.script}.validate()
			if got := fmt.Sprint(err); (tc.want == "" && err != nil) || (tc.want != "" && got != tc.want) {
				t.Errorf("validate = %v, want %q", err, tc.want)
			}
		})
	}
}

// What a gather makes of keys and of recognized speech.
func TestGatherDecides(t *testing.T) {
	now := time.Date(2026, 11, 26, 17, 0, 0, 0, time.UTC) // a Thursday
	choices := []Choice{
		{Value: "morning", Phrases: []string{"in the morning", "early"}, Digits: "1", Next: "am"},
		{Value: "afternoon", Phrases: []string{"after lunch"}, Digits: "2"},
	}
	for _, tc := range []struct {
		name       string
		g          Gather
		keys, said string
		want       decision
	}{
		{"keyed digits as they are", Gather{Field: "pin"}, "0042", "", decision{value: "0042", matched: true}},
		{"a choice's digits", Gather{Choices: choices, Next: "n"}, "1", "", decision{value: "morning", branch: "morning", next: "am", matched: true}},
		{"another choice goes to the gather's next", Gather{Choices: choices, Next: "n"}, "2", "", decision{value: "afternoon", branch: "afternoon", next: "n", matched: true}},
		{"digits of no choice", Gather{Choices: choices}, "3", "", decision{branch: BranchNoMatch}},
		{"a choice's phrase", Gather{Choices: choices}, "", "um, after lunch please", decision{value: "afternoon", branch: "afternoon", matched: true}},
		{"a choice's value", Gather{Choices: choices}, "", "Morning.", decision{value: "morning", branch: "morning", next: "am", matched: true}},
		{"nonsense", Gather{Choices: choices}, "", "purple banana", decision{branch: BranchNoMatch}},
		{"a keyed number", Gather{Capture: CaptureNumber}, "012", "", decision{value: "12", matched: true}},
		{"a number in words", Gather{Capture: CaptureNumber, Next: "n"}, "", "there will be four of us", decision{value: "4", next: "n", matched: true}},
		{"no number", Gather{Capture: CaptureNumber}, "", "a few", decision{branch: BranchNoMatch}},
		{"digits spoken", Gather{Capture: CaptureDigits}, "", "one two three four", decision{value: "1234", matched: true}},
		{"keyed yes", Gather{Capture: CaptureYesNo}, "1", "", decision{value: "yes", matched: true}},
		{"keyed no", Gather{Capture: CaptureYesNo}, "2", "", decision{value: "no", matched: true}},
		{"spoken no", Gather{Capture: CaptureYesNo}, "", "no thanks", decision{value: "no", matched: true}},
		{"a date", Gather{Capture: CaptureDate}, "", "tomorrow", decision{value: "2026-11-27", matched: true}},
		{"a keyed date", Gather{Capture: CaptureDate}, "1127", "", decision{branch: BranchNoMatch}},
		{"a time", Gather{Capture: CaptureTime}, "", "half past four in the afternoon", decision{value: "16:30", matched: true}},
		{"free text", Gather{Capture: CaptureText}, "", "call me after six", decision{value: "call me after six", matched: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a answer
			if tc.keys != "" {
				a.keys = &input{g: tc.g}
				a.keys.digits.WriteString(tc.keys)
			} else {
				a.said = &utterance{text: tc.said}
			}
			if got := tc.g.decide(a, now); got != tc.want {
				t.Errorf("decide(%q%q) = %+v, want %+v", tc.keys, tc.said, got, tc.want)
			}
		})
	}
}

// Keys complete a gather with choices as soon as they select one that no
// longer key sequence could.
func TestChoiceDigitsComplete(t *testing.T) {
	g := Gather{Choices: []Choice{{Value: "a", Digits: "1"}, {Value: "b", Digits: "12"}, {Value: "c", Digits: "3"}}}
	for _, tc := range []struct {
		keys string
		done bool
	}{{"3", true}, {"1", false}, {"12", true}, {"4", false}} {
		in := &input{g: g}
		done := false
		for i := range len(tc.keys) {
			done = in.press(keyPress{key: tc.keys[i]})
		}
		if done != tc.done {
			t.Errorf("keys %q complete: %v, want %v", tc.keys, done, tc.done)
		}
	}
}

// A recognizer that failed leaves no match, and the transcript says why
// in a note (Switchboard's words, never read as the callee's answer).
func TestRecognizerFailureIsNoMatch(t *testing.T) {
	g := Gather{Field: "confirmed", Capture: CaptureYesNo}
	answeredAt := time.Now()
	u := &utterance{recognizer: "server", err: errors.New("timeout"), start: answeredAt.Add(time.Second), end: answeredAt.Add(2 * time.Second)}
	a := answer{said: u}
	d := g.decide(a, time.Now())
	if d.matched || d.branch != BranchNoMatch {
		t.Fatalf("decision %+v, want no match", d)
	}
	var res Result
	(&callMedia{answeredAt: answeredAt}).record(&res, g, a, d)
	want := Event{At: u.start, Turn: telephony.Turn{Speaker: SpeakerCallee, Text: "(not recognized: timeout)", Start: time.Second, End: 2 * time.Second,
		Recognizer: "server", Branch: BranchNoMatch, Note: true}}
	if len(res.Events) != 1 || !reflect.DeepEqual(res.Events[0], want) || res.Digits != nil {
		t.Errorf("recorded %+v, digits %v; want %+v and no digits", res.Events, res.Digits, want)
	}
}

// fellBack is a server recognizer whose fallback heard the utterance.
type fellBack struct{}

func (fellBack) Name() string { return speech.ServerName }
func (fellBack) Recognize(context.Context, []int16, []string) (speech.Result, error) {
	return speech.Result{Text: "yes", Confidence: 0.5, Recognizer: "embedded (server failed: timeout)"}, nil
}

// An utterance the server's fallback heard is named after the fallback in
// the transcript, in a gather's answer and outside gathers alike.
func TestFallbackNamedInTranscript(t *testing.T) {
	m := &callMedia{recognizer: fellBack{}, recognizeTimeout: time.Second, answeredAt: time.Now()}
	ev := speechEvent{pcm: make([]int16, frameSamples), start: m.answeredAt, end: m.answeredAt.Add(time.Second)}
	u, ok := m.recognize(context.Background(), ev, Gather{})
	if !ok || u.recognizer != "embedded (server failed: timeout)" {
		t.Errorf("gather's utterance heard by %q, want the fallback's name", u.recognizer)
	}
	tr := startTranscriber(context.Background(), m)
	tr.offer(ev)
	var res Result
	tr.finish(&res, time.Second, func() {})
	if len(res.Events) != 1 || res.Events[0].Recognizer != "embedded (server failed: timeout)" {
		t.Errorf("transcribed %+v, want the fallback's name", res.Events)
	}
}

// placeTypingPIN places a call whose script asks for a PIN (a 4 s prompt,
// a gather finished by #) and thanks the callee, who types keys through
// baresip's sndcode a second after the answer, during the prompt.
func placeTypingPIN(t *testing.T, e *Engine, trunk Trunk, callee *siptest.Baresip, keys string) Result {
	t.Helper()
	typed := make(chan error, 1)
	res := place(t, e, trunk, CallSpec{
		Script: []Step{
			{Text: "Enter your PIN, then hash.", Audio: tone(4 * time.Second),
				Gather: &Gather{Field: "pin", FinishOnKey: "#", Timeout: 3 * time.Second}},
			{Text: "Thank you.", Audio: tone(300 * time.Millisecond)},
		},
		OnAnswer: func(time.Time) {
			go func() {
				time.Sleep(time.Second) // baresip got our ACK
				typed <- callee.Command("sndcode", keys)
			}()
		},
	})
	select {
	case err := <-typed:
		if err != nil {
			t.Fatalf("baresip sndcode: %v", err)
		}
	default:
		t.Fatalf("result %+v: the call ended before the callee typed", res)
	}
	return res
}
