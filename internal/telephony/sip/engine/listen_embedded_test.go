//go:build pocketsphinx

package engine

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/telephony/media"
	"github.com/switchboard-dev/switchboard/internal/telephony/speech"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// End to end with the embedded recognizer (make test builds it in): a real
// call to baresip, whose callee says a choice's phrase, goes down that
// choice's branch, and one who says the other choice's goes down the
// other, in flite's voice and in espeak-ng's (another synthesizer, another
// voice). The choices' phrases are the recognizer's hints, as on any
// gather.
func TestEmbeddedRecognizerBranches(t *testing.T) {
	embedded, err := speech.NewEmbedded(speech.EmbeddedOptions{Decoders: 1})
	if err != nil {
		t.Fatalf("the embedded recognizer (apt-get install libpocketsphinx-dev pocketsphinx-en-us): %v", err)
	}
	for _, tt := range []struct {
		voice, say, branch, then string
	}{
		{voiceFlite, "yes, that's right", "yes", "Booked."},
		{voiceFlite, "no, cancel it", "no", "Goodbye."},
		{voiceESpeak, "yes, that's right", "yes", "Booked."},
		{voiceESpeak, "no, cancel it", "no", "Goodbye."},
	} {
		t.Run(tt.voice+"/"+tt.branch, func(t *testing.T) {
			voice := slices.Concat(make([]int16, 1500*sampleRate/1000), say(t, tt.voice, tt.say), make([]int16, 4*sampleRate))
			e := newEngine(t, EngineConfig{})
			b := startBaresip(t, voice)
			res := place(t, e, Trunk{Address: "sip:" + b.addr}, CallSpec{Script: confirmScript(time.Second), Recognizer: embedded,
				RecordPath: filepath.Join(t.TempDir(), "call.wav"), MaxDuration: 12 * time.Second})
			// The callee's words after the decision (a pause in "yes,
			// that's right" ends the first utterance) are transcribed,
			// not answered: the decision is the gather's one branch.
			var decided *Event
			for i := range res.Events {
				if res.Events[i].Branch != "" && decided == nil {
					decided = &res.Events[i]
				}
			}
			last := res.Events[len(res.Events)-1]
			if decided == nil || decided.Branch != tt.branch || decided.Recognizer != speech.EmbeddedName || last.Text != tt.then {
				t.Fatalf("the callee said %q; transcript:%s\nwant the %s branch, heard by %s, then %q",
					tt.say, describe(res.Events), tt.branch, speech.EmbeddedName, tt.then)
			}
			// PocketSphinx's words, placed where the callee said them.
			for _, w := range decided.Words {
				if w.Start < decided.Start || w.End > decided.End+20*time.Millisecond || w.End <= w.Start {
					t.Errorf("word %+v outside the utterance, %s to %s", w, decided.Start, decided.End)
				}
			}
			if len(decided.Words) == 0 {
				t.Errorf("no words in %+v: want the recognizer's words with their offsets", *decided)
			}
			t.Logf("heard %q (confidence %.2f), words %+v", decided.Text, decided.Confidence, decided.Words)
		})
	}
}

// A number gather heard by the embedded recognizer, constrained to the
// numbers' words (speech.CaptureHints), takes the number said in a
// sentence, in both voices, and the transcript keeps the words placed in
// the recording.
func TestEmbeddedRecognizerCapturesNumber(t *testing.T) {
	embedded, err := speech.NewEmbedded(speech.EmbeddedOptions{Decoders: 1})
	if err != nil {
		t.Fatalf("the embedded recognizer (apt-get install libpocketsphinx-dev pocketsphinx-en-us): %v", err)
	}
	ms := time.Millisecond
	script := []Step{
		{Text: "How many of you will come?", Audio: tone(500 * ms), Gather: &Gather{Field: "party_size", Speech: true,
			Capture: CaptureNumber, Timeout: 3 * time.Second}},
		{Text: "Thank you.", Audio: tone(300 * ms)},
	}
	// Answers the recognizer hears right in these voices (the decoder is
	// deterministic): this checks the path, capture vocabulary included;
	// accuracy over many answers is the benchmarks' (numbers 50 % on the
	// held-out set: flite's "there will be four of us" is heard "eighty
	// four").
	for _, tt := range []struct{ voice, say, want string }{
		{voiceESpeak, "there will be four of us", "4"},
		{voiceFlite, "twenty three", "23"},
	} {
		t.Run(tt.voice+"/"+tt.want, func(t *testing.T) {
			voice := slices.Concat(make([]int16, sampleRate), say(t, tt.voice, tt.say), make([]int16, 4*sampleRate))
			b := startBaresip(t, voice)
			res := place(t, newEngine(t, EngineConfig{}), Trunk{Address: "sip:" + b.addr}, CallSpec{Script: script,
				Recognizer: embedded, MaxDuration: 10 * time.Second})
			if res.Digits["party_size"] != tt.want {
				t.Fatalf("the callee said %q in %s's voice; party_size %q, want %s:%s", tt.say, tt.voice,
					res.Digits["party_size"], tt.want, describe(res.Events))
			}
			for _, e := range res.Events {
				if e.Field == "party_size" && (len(e.Words) == 0 || e.Words[0].Start < e.Start) {
					t.Errorf("answer %+v: want its words placed within it", e)
				}
			}
		})
	}
}

// With the embedded recognizer and a number gather's default confidence
// threshold, a callee whose answer the recognizer doubts ("there will be
// four of us" in flite's voice, which the number grammar alone takes for
// "eighty four" or "eleven") is asked again rather than recorded with a
// wrong number, on a real call to baresip; the number said next, heard
// surely, is taken.
func TestEmbeddedRecognizerAsksAgainWhenInDoubt(t *testing.T) {
	embedded, err := speech.NewEmbedded(speech.EmbeddedOptions{Decoders: 1})
	if err != nil {
		t.Fatalf("the embedded recognizer (apt-get install libpocketsphinx-dev pocketsphinx-en-us): %v", err)
	}
	ms := time.Millisecond
	script := []Step{
		{Text: "How many of you will come?", Audio: tone(500 * ms), Gather: &Gather{Field: "party_size", Speech: true,
			Capture: CaptureNumber, Timeout: 3 * time.Second, MinConfidence: speech.DefaultMinConfidence(CaptureNumber),
			NoMatch: &Retry{Text: "Sorry, how many?", Audio: tone(500 * ms), Retries: 1}}},
		{Text: "Thank you.", Audio: tone(300 * ms)},
	}
	voice := slices.Concat(make([]int16, sampleRate), say(t, voiceFlite, "there will be four of us"),
		make([]int16, 2*sampleRate), say(t, voiceFlite, "twenty three"), make([]int16, 4*sampleRate))
	b := startBaresip(t, voice)
	res := place(t, newEngine(t, EngineConfig{}), Trunk{Address: "sip:" + b.addr}, CallSpec{Script: script,
		Recognizer: embedded, MaxDuration: 14 * time.Second})
	var answers []Event
	for _, e := range res.Events {
		if e.Speaker == SpeakerCallee && e.Branch != "" || e.Field != "" {
			answers = append(answers, e)
		}
	}
	if len(answers) != 2 || answers[0].Branch != BranchNoMatch || res.Digits["party_size"] != "23" {
		t.Fatalf("want the doubtful answer noMatch, then 23; party_size %q, transcript:%s",
			res.Digits["party_size"], describe(res.Events))
	}
	t.Logf("the doubt: %q at confidence %.2f", answers[0].Text, answers[0].Confidence)
}

// timedRecognizer records how long each recognition took (the wait for a
// decoder included) of the utterances a gather heard (with hints), or with
// all of every utterance.
type timedRecognizer struct {
	speech.Recognizer
	all  bool
	mu   sync.Mutex
	took []time.Duration
}

func (r *timedRecognizer) Recognize(ctx context.Context, pcm []int16, hints []string) (speech.Result, error) {
	start := time.Now()
	res, err := r.Recognizer.Recognize(ctx, pcm, hints)
	if hints != nil || r.all {
		r.mu.Lock()
		r.took = append(r.took, time.Since(start))
		r.mu.Unlock()
	}
	return res, err
}

func (r *timedRecognizer) durations() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(slices.Values(r.took))
}

// BenchmarkReplyLatencyEmbedded is BenchmarkReplyLatency with the
// embedded recognizer (PocketSphinx) hearing the answers: the issue's
// figure, from the callee's end of speech (as the detector placed it in
// the recording) to the first frame of the agent's next prompt in the
// recording. The script asks a yes/no question by choices, then a number,
// and back; the callee answers in two voices (flite's and espeak-ng's) and
// in varied wording (replyAnswers). It reports the breakdown: the hangover
// (a set time: the silence that ends an utterance), the recognition
// (recognize_ms: the wait for a decoder and the decoding), and what is
// left (the prompts are synthesized before the call; the writer sends the
// next one at its next 20 ms tick). It also reports how many answers took
// the value said (heard_right_%): a shorter hangover that cut answers in
// two would show there.
//
// SWITCHBOARD_BENCH_ANSWERS sets the number of answers (default 40),
// SWITCHBOARD_BENCH_HANGOVER the detector's hangover (default the
// engine's).
func BenchmarkReplyLatencyEmbedded(b *testing.B) {
	n := testsupport.EnvPositive(b, "SWITCHBOARD_BENCH_ANSWERS", 40)
	vad := media.VADConfig{Hangover: envDuration(b, "SWITCHBOARD_BENCH_HANGOVER", media.DefaultVADConfig().Hangover)}
	embedded, err := speech.NewEmbedded(speech.EmbeddedOptions{})
	if err != nil {
		b.Fatalf("the embedded recognizer (apt-get install libpocketsphinx-dev pocketsphinx-en-us): %v", err)
	}
	testsupport.Needs(b, "flite, espeak-ng and baresip")
	var spoken [][]int16
	for _, a := range replyAnswers {
		spoken = append(spoken, say(b, a.voice, a.text))
	}
	said := make([][]int16, n)
	for i := range said {
		said[i] = spoken[i%len(spoken)]
	}
	for b.Loop() {
		r := &timedRecognizer{Recognizer: embedded}
		lat, res := replyCall(b, EngineConfig{VAD: vad}, r, replyScript(), said)
		reportReplies(b, lat, vad.Hangover)
		took := r.durations()
		b.ReportMetric(float64(took[len(took)/2].Milliseconds()), "p50_recognize_ms")
		b.ReportMetric(float64(percentile(took, 95).Milliseconds()), "p95_recognize_ms")
		b.ReportMetric(float64(vad.Hangover.Milliseconds()), "hangover_ms")
		right, i := 0, 0
		for _, e := range res.Events {
			if e.Branch == "" && e.Digits == "" {
				continue // an agent's line, or words transcribed outside a gather
			}
			if e.Digits == replyAnswers[i%len(replyAnswers)].value {
				right++
			}
			i++
		}
		b.ReportMetric(100*float64(right)/float64(n), "heard_right_%")
		if right < n*3/4 {
			b.Logf("transcript:%s", describe(res.Events))
		}
	}
}

// replyAnswers are the callee's answers in BenchmarkReplyLatencyEmbedded,
// in turn: to the yes/no question, the number, and again.
var replyAnswers = []struct{ voice, text, value string }{
	{voiceFlite, "yeah sure", "yes"},
	{voiceESpeak, "there will be four of us", "4"},
	{voiceESpeak, "no thanks", "no"},
	{voiceFlite, "twenty three", "23"},
}

// replyScript asks yes or no by choices, then a number, and back, whatever
// the answer (a miss goes on too, so the answers stay in turn).
func replyScript() []Step {
	ms := time.Millisecond
	on := func(next string) *Retry { return &Retry{Next: next} }
	return []Step{
		{ID: "ask", Text: "Shall we?", Audio: tone(300 * ms), Gather: &Gather{Field: "confirmed", Speech: true,
			Timeout: 5 * time.Second, NoInput: on("size"), NoMatch: on("size"), Choices: []Choice{
				{Value: "yes", Phrases: []string{"yeah", "sure", "that's right"}, Next: "size"},
				{Value: "no", Phrases: []string{"no thanks", "cancel it"}, Next: "size"},
			}}},
		{ID: "size", Text: "How many?", Audio: tone(300 * ms), Gather: &Gather{Field: "party_size", Speech: true,
			Capture: CaptureNumber, Timeout: 5 * time.Second, NoInput: on("ask"), NoMatch: on("ask"), Next: "ask"}},
	}
}
