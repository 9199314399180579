package engine

import (
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/telephony"
)

// Every event of a SIP call's transcript is placed on the call's timeline,
// so that the dashboard's player can seek to it (issue 36: agent lines,
// keys and a gather's "no answer" had none). An agent's line lasts as long
// as its audio played; the callee's silence is a note, after the prompt
// it followed.
func TestTranscriptTimeline(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	s := startSipp(t, "udp", scenario(t, "uas.xml")...)
	lengths := map[string]time.Duration{"Hello.": time.Second, "Press 1.": 500 * time.Millisecond,
		"Still there?": 300 * time.Millisecond, "Goodbye.": 200 * time.Millisecond}
	res := place(t, e, Trunk{Address: "sip:" + s.addr}, CallSpec{Script: []Step{
		{Text: "Hello.", Audio: tone(lengths["Hello."])},
		{Text: "Press 1.", Audio: tone(lengths["Press 1."]), Gather: &Gather{Field: "choice", Choices: []Choice{{Value: "one", Digits: "1"}},
			Timeout: time.Second, NoInput: &Retry{Text: "Still there?", Audio: tone(lengths["Still there?"]), Retries: 1}}},
		{Text: "Goodbye.", Audio: tone(lengths["Goodbye."])},
	}})
	s.wait(t)
	assertTranscript(t, res, []Event{
		{Turn: telephony.Turn{Speaker: SpeakerAgent, Text: "Hello."}}, {Turn: telephony.Turn{Speaker: SpeakerAgent, Text: "Press 1."}},
		{Turn: telephony.Turn{Speaker: SpeakerCallee, Text: "(no answer)"}}, {Turn: telephony.Turn{Speaker: SpeakerAgent, Text: "Still there?"}},
		{Turn: telephony.Turn{Speaker: SpeakerCallee, Text: "(no answer)"}}, {Turn: telephony.Turn{Speaker: SpeakerAgent, Text: "Goodbye."}},
	})
	var prev Event
	for i, ev := range res.Events {
		if ev.Speaker == SpeakerAgent {
			if played := ev.End - ev.Start; played < lengths[ev.Text] {
				t.Errorf("line %q placed %s to %s: %s, shorter than its audio (%s)", ev.Text, ev.Start, ev.End, played, lengths[ev.Text])
			}
		} else if !ev.Note || ev.Branch != BranchNoInput {
			t.Errorf("event %+v: want a noInput note", ev)
		}
		if i > 0 && (ev.Start <= prev.Start || ev.Note && ev.Start < prev.End) {
			t.Errorf("event %q at %s is not after %q (%s to %s)", ev.Text, ev.Start, prev.Text, prev.Start, prev.End)
		}
		prev = ev
	}
}
