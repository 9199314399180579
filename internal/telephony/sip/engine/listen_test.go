package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/media"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/siptest"
	"github.com/switchboard-dev/switchboard/internal/telephony/speech"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// These tests place real calls to baresip, whose voice is a WAV of answers
// spoken by flite at set times from the answer, and check that the agent
// listens, branches and stops talking when interrupted.
//
// scriptedRecognizer stands in for a recognizer here, answering each
// utterance with the text the test knows the callee said, so that these
// tests do not depend on a recognizer's accuracy. Everything before it
// (RTP, G.711, voice activity detection and the cut at end of speech) and
// after it (understanding, branching, re-prompting, the transcript) is the
// real path. The tests and benchmarks with the embedded recognizer
// (PocketSphinx) are in listen_embedded_test.go and listen_bench_test.go
// (build tag pocketsphinx, which make test sets).

// said is one answer in a callee's voice: text spoken by flite at an
// offset from the answer.
type said struct {
	at   time.Duration
	text string
	// confidence is the recognizer's in it (0: the scripted default).
	confidence float64
}

// spoken renders a callee's voice: the answers at their offsets, silence
// elsewhere, lasting at least total.
func spoken(t *testing.T, total time.Duration, answers ...said) ([]int16, map[string]int) {
	t.Helper()
	testsupport.Needs(t, "flite")
	var f tts.Flite
	pcm := make([]int16, int(total.Seconds()*sampleRate))
	lengths := map[string]int{}
	for _, a := range answers {
		s, err := f.Speak(context.Background(), a.text)
		if err != nil {
			t.Fatalf("flite: %v", err)
		}
		at := int(a.at.Seconds() * sampleRate)
		if end := at + len(s); end > len(pcm) {
			pcm = append(pcm, make([]int16, end-len(pcm))...)
		}
		copy(pcm[at:], s)
		lengths[a.text] = len(s)
	}
	return pcm, lengths
}

// scriptedRecognizer answers each utterance with the next text the callee
// said, and keeps what it was asked. An utterance much longer or shorter
// than the spoken text (flite's clip, whose silent padding the detector
// leaves out) is taken for something else and answered with no text.
type scriptedRecognizer struct {
	mu      sync.Mutex
	texts   []string
	lengths map[string]int
	// confidence is what it reports for a text; 0.9 for the others.
	confidence map[string]float64
	hints      [][]string
	heard      []time.Duration
}

func (r *scriptedRecognizer) Name() string { return "scripted" }

func (r *scriptedRecognizer) Recognize(_ context.Context, pcm []int16, hints []string) (speech.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hints = append(r.hints, hints)
	r.heard = append(r.heard, samplesDuration(len(pcm)))
	if len(r.texts) == 0 {
		return speech.Result{}, nil
	}
	text := r.texts[0]
	if clip := samplesDuration(r.lengths[text]); samplesDuration(len(pcm)) > clip+300*time.Millisecond ||
		samplesDuration(len(pcm)) < clip/3 {
		return speech.Result{}, nil
	}
	r.texts = r.texts[1:]
	// One "word", from 100 ms into the utterance to 100 ms before its end.
	word := speech.Word{Text: text, Start: 100 * time.Millisecond, End: samplesDuration(len(pcm)) - 100*time.Millisecond}
	conf, ok := r.confidence[text]
	if !ok {
		conf = 0.9
	}
	return speech.Result{Text: text, Confidence: conf, Words: []speech.Word{word}}, nil
}

// listeningCall places a call to a baresip callee speaking answers, with
// a scripted recognizer of them, recording it.
func listeningCall(t *testing.T, script []Step, total time.Duration, answers ...said) (Result, *scriptedRecognizer, string) {
	t.Helper()
	voice, lengths := spoken(t, total, answers...)
	r := &scriptedRecognizer{lengths: lengths, confidence: map[string]float64{}}
	for _, a := range answers {
		r.texts = append(r.texts, a.text)
		if a.confidence != 0 {
			r.confidence[a.text] = a.confidence
		}
	}
	e := newEngine(t, EngineConfig{})
	b := startBaresip(t, voice)
	rec := filepath.Join(t.TempDir(), "call.wav")
	res := place(t, e, Trunk{Address: "sip:" + b.addr}, CallSpec{Script: script, Recognizer: r, RecordPath: rec,
		MaxDuration: total + 5*time.Second})
	if !res.Answered || res.HangupBy != HangupByAgent {
		t.Fatalf("result %+v: want answered, agent hangup after the script", res)
	}
	return res, r, rec
}

// describe is the transcript in a form that shows in a failure.
func describe(events []Event) string {
	var b strings.Builder
	for _, e := range events {
		fmt.Fprintf(&b, "\n  %s: %q", e.Speaker, e.Text)
		if e.Branch != "" || e.Next != "" || e.Digits != "" {
			fmt.Fprintf(&b, " [field %s=%q branch %q next %q]", e.Field, e.Digits, e.Branch, e.Next)
		}
	}
	return b.String()
}

// wantEvent is what a test checks of an event.
type wantEvent struct {
	speaker, text, value, branch, next string
}

func assertEvents(t *testing.T, res Result, want []wantEvent) {
	t.Helper()
	ok := len(res.Events) == len(want)
	for i := 0; ok && i < len(want); i++ {
		e, w := res.Events[i], want[i]
		ok = e.Speaker == w.speaker && e.Text == w.text && e.Digits == w.value && e.Branch == w.branch && e.Next == w.next
	}
	if !ok {
		t.Errorf("transcript:%s\nwant:%s", describe(res.Events), describe(toEvents(want)))
	}
}

func toEvents(want []wantEvent) []Event {
	var out []Event
	for _, w := range want {
		out = append(out, Event{Turn: telephony.Turn{Speaker: w.speaker, Text: w.text, Digits: w.value, Branch: w.branch, Next: w.next}})
	}
	return out
}

// confirmScript asks a yes/no question by choices: yes goes to "booked",
// no to "bye", and the step between is skipped either way.
func confirmScript(prompt time.Duration) []Step {
	return []Step{
		{ID: "ask", Text: "Shall we keep your booking?", Audio: tone(prompt), Gather: &Gather{Field: "confirmed", Speech: true,
			Timeout: 3 * time.Second, Choices: []Choice{
				{Value: "yes", Phrases: []string{"yeah", "sure", "that's right"}, Digits: "1", Next: "booked"},
				{Value: "no", Phrases: []string{"cancel it"}, Digits: "2", Next: "bye"},
			}}},
		{Text: "never said", Audio: tone(200 * time.Millisecond)},
		{ID: "bye", Text: "Goodbye.", Audio: tone(300 * time.Millisecond), Hangup: true},
		{ID: "booked", Text: "Booked.", Audio: tone(300 * time.Millisecond), Hangup: true},
	}
}

// The callee says "yeah, that's right" after the question: the agent
// branches to "booked", records the answer with its place in the
// recording, and answers soon after the callee stopped speaking.
func TestSpeechChoiceBranches(t *testing.T) {
	answer := said{at: 1500 * time.Millisecond, text: "yeah, that's right"}
	res, r, rec := listeningCall(t, confirmScript(time.Second), 6*time.Second, answer)
	assertEvents(t, res, []wantEvent{
		{speaker: SpeakerAgent, text: "Shall we keep your booking?"},
		{speaker: SpeakerCallee, text: answer.text, value: "yes", branch: "yes", next: "booked"},
		{speaker: SpeakerAgent, text: "Booked."},
	})
	if res.Digits["confirmed"] != "yes" {
		t.Errorf("confirmed %q, want yes", res.Digits["confirmed"])
	}
	if len(r.hints) != 1 || !slices.Contains(r.hints[0], "that's right") || !slices.Contains(r.hints[0], "cancel it") {
		t.Errorf("hints %q, want the choices' phrases", r.hints)
	}
	if len(res.Events) < 2 {
		return
	}
	u := res.Events[1]
	if u.Recognizer != "scripted" || u.Confidence != 0.9 || u.Field != "confirmed" {
		t.Errorf("utterance %+v: want the recognizer's name and confidence, the field", u)
	}
	// The recognizer's words are placed in the recording, from the
	// utterance's start.
	if len(u.Words) != 1 || u.Words[0].Start != u.Start+100*time.Millisecond || u.Words[0].End != u.End-100*time.Millisecond {
		t.Errorf("words %+v of the utterance at %s to %s: want the recognizer's word placed in the recording", u.Words, u.Start, u.End)
	}
	// The utterance's offsets are where the callee spoke in the recording.
	_, right := readRecording(t, rec)
	spokeAt, spokeEnd := firstVoiced(right), lastVoiced(right)
	// The utterance starts with the pre-roll (200 ms) before the first
	// frame the detector took for voice, whose threshold is below the
	// one measured here.
	if u.Start > spokeAt || u.Start < spokeAt-600*time.Millisecond || !near(u.End, spokeEnd, 300*time.Millisecond) {
		t.Errorf("utterance placed at %s to %s, the callee spoke from %s to %s in the recording", u.Start, u.End, spokeAt, spokeEnd)
	}
	t.Logf("end of speech to the agent's next audio: %s", replyLatency(t, rec, spokeEnd))
}

// replyLatency is the time from the callee's end of speech (at
// spokeEnd) to the agent's next audio, in the recording.
func replyLatency(t *testing.T, rec string, spokeEnd time.Duration) time.Duration {
	t.Helper()
	left, _ := readRecording(t, rec)
	v := voicedFrames(left)
	for i := int(spokeEnd / (20 * time.Millisecond)); i < len(v); i++ {
		if i >= 0 && v[i] {
			return frameTime(i) - spokeEnd
		}
	}
	t.Fatalf("the agent said nothing after the callee's speech ended at %s", spokeEnd)
	return 0
}

func near(got, want, tol time.Duration) bool { return got >= want-tol && got <= want+tol }

// The callee keys 2 during the question: the digits select "no".
func TestKeyedChoiceBranches(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	b := startBaresip(t, make([]int16, 8*sampleRate))
	typed := make(chan error, 1)
	res := place(t, e, Trunk{Address: "sip:" + b.addr}, CallSpec{Script: confirmScript(3 * time.Second),
		Recognizer: &scriptedRecognizer{},
		OnAnswer: func(time.Time) {
			go func() {
				time.Sleep(time.Second) // baresip got our ACK
				typed <- b.command("sndcode", "2")
			}()
		}})
	if err := <-typed; err != nil {
		t.Fatalf("baresip sndcode: %v", err)
	}
	assertEvents(t, res, []wantEvent{
		{speaker: SpeakerAgent, text: "Shall we keep your booking?"},
		{speaker: SpeakerCallee, text: "pressed 2", value: "no", branch: "no", next: "bye"},
		{speaker: SpeakerAgent, text: "Goodbye."},
	})
	if res.Digits["confirmed"] != "no" {
		t.Errorf("confirmed %q, want no", res.Digits["confirmed"])
	}
}

// The callee says nothing to the question, then nonsense, then the
// number: the agent re-prompts on the silence and on the nonsense with
// the retry prompts, and takes "four people" as 4.
func TestSpeechRepromptsOnSilenceAndNonsense(t *testing.T) {
	ms := time.Millisecond
	script := []Step{
		{Text: "How many of you will come?", Audio: tone(500 * ms), Gather: &Gather{Field: "party_size", Speech: true,
			Capture: CaptureNumber, Timeout: 2500 * ms, NoBargeIn: true, // each prompt plays whole, to be measured
			NoInput: &Retry{Text: "Are you there?", Audio: tone(900 * ms), Retries: 1},
			NoMatch: &Retry{Text: "Sorry, how many?", Audio: tone(500 * ms), Retries: 1}}},
		{Text: "Thank you.", Audio: tone(300 * ms)},
	}
	// Nominally: the question 0-0.5 s, no answer until 3 s, "Are you
	// there?" to 3.9 s; the nonsense from 4.5 s (about 1 s), its end
	// noticed 0.4 s after it, "Sorry, how many?" for 0.5 s to about 6.4 s;
	// the number from 7 s, the thanks by about 8.8 s. Each answer has
	// more than half a second of slack on either side, for a busy machine.
	res, r, rec := listeningCall(t, script, 11*time.Second,
		said{at: 4500 * ms, text: "purple banana"}, said{at: 7 * time.Second, text: "four people"})
	assertEvents(t, res, []wantEvent{
		{speaker: SpeakerAgent, text: "How many of you will come?"},
		{speaker: SpeakerCallee, text: "(no answer)", branch: BranchNoInput},
		{speaker: SpeakerAgent, text: "Are you there?"},
		{speaker: SpeakerCallee, text: "purple banana", branch: BranchNoMatch},
		{speaker: SpeakerAgent, text: "Sorry, how many?"},
		{speaker: SpeakerCallee, text: "four people", value: "4"},
		{speaker: SpeakerAgent, text: "Thank you."},
	})
	if res.Digits["party_size"] != "4" {
		t.Errorf("party_size %q, want 4", res.Digits["party_size"])
	}
	// The agent said the question, each retry's own prompt, and the
	// thanks: four stretches of audio of their lengths.
	left, _ := readRecording(t, rec)
	said := stretches(voicedFrames(left))
	want := []time.Duration{500 * ms, 900 * ms, 500 * ms, 300 * ms}
	ok := len(said) == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = near(said[i], want[i], 60*ms)
	}
	if !ok {
		t.Errorf("the agent's audio lasted %v, want %v", said, want)
	}
	if len(r.hints) == 0 || !slices.Contains(r.hints[0], "four") || !slices.Contains(r.hints[0], "twenty three") {
		t.Errorf("hints %q for a number: want the numbers' words", r.hints)
	}
}

// An answer the recognizer doubts is asked again, not taken (issue 36: a
// wrong value is worse than a question asked twice): on a real call, the
// callee's "eighty four" heard with confidence 0.4 against the gather's
// threshold of 0.6 is noMatch and re-prompts; "four", heard surely, is
// taken.
func TestSpeechDoubtfulAnswerReprompts(t *testing.T) {
	ms := time.Millisecond
	script := []Step{
		{Text: "How many of you will come?", Audio: tone(500 * ms), Gather: &Gather{Field: "party_size", Speech: true,
			Capture: CaptureNumber, Timeout: 3 * time.Second, MinConfidence: 0.6,
			NoMatch: &Retry{Text: "Sorry, how many?", Audio: tone(500 * ms), Retries: 1}}},
		{Text: "Thank you.", Audio: tone(300 * ms)},
	}
	// The doubtful answer from 1.5 s (about 1 s), "Sorry, how many?"
	// after its end, the sure one from 4.5 s.
	res, _, _ := listeningCall(t, script, 8*time.Second,
		said{at: 1500 * ms, text: "eighty four", confidence: 0.4}, said{at: 4500 * ms, text: "four", confidence: 0.8})
	assertEvents(t, res, []wantEvent{
		{speaker: SpeakerAgent, text: "How many of you will come?"},
		{speaker: SpeakerCallee, text: "eighty four", branch: BranchNoMatch},
		{speaker: SpeakerAgent, text: "Sorry, how many?"},
		{speaker: SpeakerCallee, text: "four", value: "4"},
		{speaker: SpeakerAgent, text: "Thank you."},
	})
	if res.Digits["party_size"] != "4" {
		t.Errorf("party_size %q, want 4", res.Digits["party_size"])
	}
	for _, e := range res.Events {
		if e.Text == "eighty four" && e.Confidence != 0.4 {
			t.Errorf("the doubtful answer's confidence %v in the transcript, want 0.4", e.Confidence)
		}
	}
}

// stretches are the lengths of audio (voiced frames) in the stretches of a
// channel separated by at least 200 ms of silence: a writer stalled by a
// busy machine leaves shorter gaps inside a prompt, which do not split it.
func stretches(voiced []bool) []time.Duration {
	var out []time.Duration
	frames, quiet := 0, 0
	for _, v := range append(voiced, make([]bool, 10)...) {
		switch {
		case v:
			frames, quiet = frames+1, 0
		case frames > 0:
			if quiet++; quiet == 10 {
				out, frames = append(out, frameTime(frames)), 0
			}
		}
	}
	return out
}

// Silence through every retry: the gather gives up and goes to its
// noInput's next.
func TestSpeechNoInputGoesOn(t *testing.T) {
	ms := time.Millisecond
	script := []Step{
		{Text: "Shall we?", Audio: tone(300 * ms), Gather: &Gather{Field: "confirmed", Speech: true, Capture: CaptureYesNo,
			Timeout: time.Second, NoInput: &Retry{Retries: 1, Next: "bye"}}},
		{Text: "never said", Audio: tone(200 * ms)},
		{ID: "bye", Text: "We will call again.", Audio: tone(300 * ms)},
	}
	res, _, _ := listeningCall(t, script, 6*time.Second)
	assertEvents(t, res, []wantEvent{
		{speaker: SpeakerAgent, text: "Shall we?"},
		{speaker: SpeakerCallee, text: "(no answer)", branch: BranchNoInput},
		{speaker: SpeakerAgent, text: "Shall we?"},
		{speaker: SpeakerCallee, text: "(no answer)", branch: BranchNoInput, next: "bye"},
		{speaker: SpeakerAgent, text: "We will call again."},
	})
	if res.Digits != nil {
		t.Errorf("digits %v, want none", res.Digits)
	}
}

// The callee talks over a long prompt: the agent's audio stops soon after
// their speech starts (measured in the recording); with barge-in off, as
// for a legal disclaimer, the prompt plays to its end.
func TestBargeInStopsThePrompt(t *testing.T) {
	for _, tc := range []struct {
		name      string
		noBargeIn bool
	}{{"barge-in", false}, {"disclaimer", true}} {
		t.Run(tc.name, func(t *testing.T) {
			script := confirmScript(4 * time.Second)
			script[0].Gather.NoBargeIn = tc.noBargeIn
			answer := said{at: time.Second, text: "yes"}
			res, _, rec := listeningCall(t, script, 8*time.Second, answer)
			if res.Digits["confirmed"] != "yes" {
				t.Errorf("confirmed %q, want yes:%s", res.Digits["confirmed"], describe(res.Events))
			}
			left, right := readRecording(t, rec)
			spokeAt := firstVoiced(right)
			// The prompt's last voiced frame before the reply (200 ms of
			// silence or more: a stalled writer leaves shorter gaps).
			v := voicedFrames(left)
			end, quiet := 0, 0
			for i := range v {
				if v[i] {
					end, quiet = i, 0
				} else if quiet++; end > 0 && quiet == 10 {
					break
				}
			}
			stoppedAt := frameTime(end) + 20*time.Millisecond
			t.Logf("callee spoke at %s, the agent's prompt stopped at %s", spokeAt, stoppedAt)
			if tc.noBargeIn {
				if played := stretches(v); len(played) == 0 || played[0] < 3900*time.Millisecond {
					t.Errorf("the agent's audio lasted %v, want the 4 s prompt played to its end", played)
				}
				return
			}
			// The goal is 300 ms; the bound leaves room for a busy machine
			// while still failing a prompt that plays on (to 4 s).
			if lag := stoppedAt - spokeAt; lag > time.Second {
				t.Errorf("the prompt stopped %s after the callee started speaking, want it stopped (goal 300 ms)", lag)
			} else {
				t.Logf("barge-in: the prompt stopped %s after the callee started speaking", lag)
			}
		})
	}
}

// BenchmarkReplyLatency measures, on one call to baresip, the time from
// the end of the callee's speech to the agent's next audio, in the
// recording: the callee says "yes" 20 times and each answer sends the
// script back to its question. With the scripted recognizer (no cost)
// this is the voice activity detector's hangover (the silence that tells
// the end of speech from a pause) plus the engine's own share; a real
// recognizer's time adds to it (BenchmarkReplyLatencyEmbedded). Run with
// -benchtime=1x: one iteration is the whole call.
func BenchmarkReplyLatency(b *testing.B) {
	const answers = 20
	testsupport.Needs(b, "flite and baresip")
	yes := say(b, voiceFlite, "yes")
	r := &scriptedRecognizer{lengths: map[string]int{"yes": len(yes)}}
	said := make([][]int16, answers)
	for i := range said {
		r.texts, said[i] = append(r.texts, "yes"), yes
	}
	script := []Step{{ID: "ask", Text: "Again?", Audio: tone(300 * time.Millisecond), Gather: &Gather{Field: "again",
		Speech: true, Timeout: 5 * time.Second, Choices: []Choice{{Value: "yes", Next: "ask"}}}}}
	for b.Loop() {
		lat, _ := replyCall(b, EngineConfig{}, r, script, said)
		reportReplies(b, lat, media.DefaultVADConfig().Hangover)
	}
}

// replyGap is the silence after each of the callee's answers in
// replyCall: the hangover, the recognition, the agent's 300 ms prompt and
// room for a slow recognition on a busy machine.
const replyGap = 1400 * time.Millisecond

// replyCall places one call to baresip, whose callee says the answers in
// turn, each replyGap after the last one ended (the first a second after
// the answer), to script. It returns the reply latencies
// (replyLatencies) and the call's result.
func replyCall(b *testing.B, cfg EngineConfig, r speech.Recognizer, script []Step, answers [][]int16) ([]time.Duration, Result) {
	b.Helper()
	voice := make([]int16, sampleRate)
	for _, a := range answers {
		voice = append(voice, a...)
		voice = append(voice, make([]int16, int(replyGap.Seconds()*sampleRate))...)
	}
	e := newEngine(b, cfg)
	bs := siptest.StartBaresip(b, "+14155550123", voice)
	rec := filepath.Join(b.TempDir(), "call.wav")
	talk := samplesDuration(len(voice))
	ctx, cancel := context.WithTimeout(b.Context(), talk+time.Minute)
	defer cancel()
	res, err := e.Place(ctx, Trunk{Address: "sip:" + bs.Addr}, CallSpec{From: "+14155550100", To: "+14155550123",
		Script: script, Recognizer: r, RecordPath: rec, MaxDuration: talk + 10*time.Second})
	if err != nil || !res.Answered {
		b.Fatalf("Place: %v %+v", err, res)
	}
	lat := replyLatencies(b, rec, res)
	if len(lat) < len(answers)*9/10 {
		b.Fatalf("%d replies to %d answers:%s", len(lat), len(answers), describe(res.Events))
	}
	return lat, res
}

// reportReplies reports the p50 and p95 of the reply latencies, and the
// p95's share beyond the hangover.
func reportReplies(b *testing.B, lat []time.Duration, hangover time.Duration) {
	lat = slices.Sorted(slices.Values(lat))
	b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "p50_reply_ms")
	b.ReportMetric(float64(percentile(lat, 95).Milliseconds()), "p95_reply_ms")
	b.ReportMetric(float64((percentile(lat, 95) - hangover).Milliseconds()), "p95_after_hangover_ms")
	b.ReportMetric(float64(len(lat)), "replies")
}

// percentile is the p-th percentile of sorted durations (nearest rank).
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, (len(sorted)*p+99)/100-1)]
}

// replyLatencies are the times from the end of each of the callee's
// utterances (its End: the end of speech as the detector placed it in the
// recording) to the agent's next audio in the recording.
func replyLatencies(b *testing.B, rec string, res Result) []time.Duration {
	left, _ := readRecording(b, rec)
	out := replies(voicedFrames(left), res)
	if len(out) == 0 {
		b.Fatal("no reply found in the recording")
	}
	return out
}

// replies are the reply latencies of res's utterances, given the agent's
// voiced frames in the recording.
func replies(agent []bool, res Result) []time.Duration {
	var out []time.Duration
	for _, e := range res.Events {
		if e.Speaker != SpeakerCallee || e.End == 0 {
			continue
		}
		for j := int(e.End / (20 * time.Millisecond)); j < len(agent); j++ {
			if agent[j] {
				out = append(out, frameTime(j)-e.End)
				break
			}
		}
	}
	return out
}

// A say step with barge-in stops when the callee starts speaking, and the
// script goes on; one without it (the default) plays to its end. Either
// way what the callee said outside a gather is in the transcript, placed
// in the recording.
func TestBargeInOnASayStep(t *testing.T) {
	for _, tc := range []struct {
		name    string
		bargeIn bool
	}{{"barge-in", true}, {"default", false}} {
		t.Run(tc.name, func(t *testing.T) {
			script := []Step{
				{Text: "A long announcement.", Audio: tone(4 * time.Second), BargeIn: tc.bargeIn},
				{Text: "After.", Audio: tone(300 * time.Millisecond)},
			}
			res, r, _ := listeningCall(t, script, 7*time.Second, said{at: time.Second, text: "hello?"})
			assertEvents(t, res, []wantEvent{{speaker: SpeakerAgent, text: "A long announcement."},
				{speaker: SpeakerCallee, text: "hello?"}, {speaker: SpeakerAgent, text: "After."}})
			if len(res.Events) != 3 {
				return
			}
			if u := res.Events[1]; u.Recognizer != "scripted" || !near(u.Start, time.Second, 300*time.Millisecond) || u.End <= u.Start {
				t.Errorf("utterance %+v: want the recognizer's, placed at about 1 s", u)
			}
			if len(r.hints) != 1 || r.hints[0] != nil {
				t.Errorf("hints %q: want open recognition outside a gather", r.hints)
			}
			after := res.Events[2].At.Sub(res.AnsweredAt)
			if tc.bargeIn && after > 3*time.Second {
				t.Errorf("the next step started at %s, want the announcement cut when the callee spoke (about 1.3 s)", after)
			}
			if !tc.bargeIn && after < 4*time.Second {
				t.Errorf("the next step started at %s, want the announcement played to its end (4 s)", after)
			}
		})
	}
}

// countingRecognizer recognizes nothing and counts the utterances it got.
type countingRecognizer struct {
	mu sync.Mutex
	n  int
}

func (r *countingRecognizer) Name() string { return "counting" }

func (r *countingRecognizer) Recognize(context.Context, []int16, []string) (speech.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	return speech.Result{}, nil
}

// A line of steady noise, with a burst in it, is no answer: the steady
// noise is not speech at all, the burst is an utterance in which nothing
// is recognized, and the gather ends with noInput.
func TestSpeechNoiseIsNoAnswer(t *testing.T) {
	noise := make([]int16, 8*sampleRate)
	seed := uint32(1)
	for i := range noise {
		seed = seed*1664525 + 1013904223 // a fixed pseudo-random sequence
		amp := 1200
		if i >= 2*sampleRate && i < 2*sampleRate+sampleRate/2 {
			amp = 12000 // the burst, 2 s to 2.5 s
		}
		noise[i] = int16(int(seed>>16)%(2*amp+1) - amp)
	}
	r := &countingRecognizer{}
	e := newEngine(t, EngineConfig{})
	b := startBaresip(t, noise)
	res := place(t, e, Trunk{Address: "sip:" + b.addr}, CallSpec{Recognizer: r, Script: []Step{
		{Text: "Shall we?", Audio: tone(300 * time.Millisecond), Gather: &Gather{Field: "confirmed", Speech: true,
			Capture: CaptureYesNo, Timeout: 3 * time.Second, NoInput: &Retry{Next: "bye"}}},
		{Text: "never said"},
		{ID: "bye", Text: "Goodbye."},
	}})
	assertEvents(t, res, []wantEvent{
		{speaker: SpeakerAgent, text: "Shall we?"},
		{speaker: SpeakerCallee, text: "(no answer)", branch: BranchNoInput, next: "bye"},
		{speaker: SpeakerAgent, text: "Goodbye."},
	})
	if r.n != 1 {
		t.Errorf("the recognizer got %d utterances, want the burst alone", r.n)
	}
}

// A callee who says "tomorrow" means tomorrow where they are: the date is
// read in the call's Zone (the callee's), not in UTC or the zone of the
// machine the operator runs on. The zone is one whose date differs from
// UTC's now, so reading in UTC gives another answer.
func TestSpokenDateReadInCalleesZone(t *testing.T) {
	zone := "Etc/GMT-14" // UTC+14: already tomorrow from 10:00 UTC
	if time.Now().UTC().Hour() < 10 {
		zone = "Etc/GMT+12" // UTC-12: still yesterday before 12:00 UTC
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	tomorrow := func() string { return time.Now().In(loc).AddDate(0, 0, 1).Format(time.DateOnly) }
	answer := said{at: 1500 * time.Millisecond, text: "tomorrow please"}
	voice, lengths := spoken(t, 6*time.Second, answer)
	r := &scriptedRecognizer{lengths: lengths, texts: []string{answer.text}}
	script := []Step{
		{Text: "Which day suits you?", Audio: tone(time.Second), Gather: &Gather{Field: "day", Speech: true,
			Timeout: 3 * time.Second, Capture: CaptureDate}},
		{Text: "Thank you.", Audio: tone(300 * time.Millisecond), Hangup: true},
	}
	e := newEngine(t, EngineConfig{})
	b := startBaresip(t, voice)
	before := tomorrow()
	res := place(t, e, Trunk{Address: "sip:" + b.addr}, CallSpec{Script: script, Recognizer: r, Zone: loc,
		MaxDuration: 11 * time.Second})
	after := tomorrow()
	if got := res.Digits["day"]; got != before && got != after {
		t.Errorf("\"tomorrow\" said in %s captured as %q, want %s (UTC's tomorrow is %s)%s", zone, got, before,
			time.Now().UTC().AddDate(0, 0, 1).Format(time.DateOnly), describe(res.Events))
	}
}
