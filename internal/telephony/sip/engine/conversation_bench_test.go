//go:build pocketsphinx

package engine

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/conversation"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/siptest"
	"github.com/switchboard-dev/switchboard/internal/telephony/speech"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// BenchmarkVoiceToVoice measures a conversation's voice-to-voice latency
// on a real call to baresip: from the end of the callee's voice to the
// agent's first audio on the wire, with its parts. The embedded recognizer
// hears the callee (open recognition, as a conversation listens); a
// stand-in model (answerScript: no model runs here) sends its first words
// 200 ms after the request; the endpointing delay is 400 ms. The agent's
// own share is everything but the endpointing delay and the model's
// 200 ms: the recognizer's time past the delay, the loop, the voice
// (flite) and the hand-over to the RTP writer.
//
// Run with -benchtime=1x: one iteration is one call of
// SWITCHBOARD_BENCH_TURNS turns (default 12).
func BenchmarkVoiceToVoice(b *testing.B) {
	const endpointing, firstToken = 400 * time.Millisecond, 200 * time.Millisecond
	turns := testsupport.EnvPositive(b, "SWITCHBOARD_BENCH_TURNS", 12)
	testsupport.Needs(b, "flite, espeak-ng and baresip")
	embedded, err := speech.NewEmbedded(speech.EmbeddedOptions{})
	if err != nil {
		b.Fatalf("the embedded recognizer (apt-get install libpocketsphinx-dev pocketsphinx-en-us): %v", err)
	}
	lines := [][]int16{say(b, voiceFlite, "I would like a table for four"), say(b, voiceESpeak, "at seven tonight please"),
		say(b, voiceFlite, "yes that is right"), say(b, voiceESpeak, "no thank you")}
	// Each line, then a pause the agent's short answer fits in.
	const gap = 3 * time.Second
	var voice []int16
	voice = append(voice, make([]int16, sampleRate)...)
	for i := range turns {
		voice = append(voice, lines[i%len(lines)]...)
		voice = append(voice, make([]int16, int(gap.Seconds()*sampleRate))...)
	}
	total := samplesDuration(len(voice))
	for b.Loop() {
		script := &answerScript{firstToken: firstToken, repeat: true,
			answers: []conversation.Chunk{{Content: "Okay, noted."}}}
		cfg := conversation.Config{TurnTaking: conversation.DefaultTurnTaking(), FallbackLine: "Sorry."}
		cfg.TurnTaking.MinEndpointing, cfg.TurnTaking.MaxEndpointing = endpointing, endpointing
		e := newEngine(b, EngineConfig{})
		bs := siptest.StartBaresip(b, "+14155550123", voice)
		r := &timedRecognizer{Recognizer: embedded, all: true}
		ctx, cancel := context.WithTimeout(b.Context(), total+time.Minute)
		res, err := e.Place(ctx, Trunk{Address: "sip:" + bs.Addr}, CallSpec{From: "+14155550100", To: "+14155550123",
			Recognizer: r, RecordPath: filepath.Join(b.TempDir(), "call.wav"), MaxDuration: total + 2*time.Second,
			Conversation: &Conversation{Open: script.open, Config: cfg, Voice: &tts.Flite{}}})
		cancel()
		if err != nil || !res.Answered {
			b.Fatalf("Place: %v %+v", err, res)
		}
		reportVoiceToVoice(b, res.Latencies, endpointing, firstToken)
		took := r.durations()
		if len(took) > 0 {
			b.ReportMetric(float64(percentile(took, 95).Milliseconds()), "p95_recognize_ms")
		}
	}
}

// reportVoiceToVoice reports the answers' latencies and their parts, p50
// and p95.
func reportVoiceToVoice(b *testing.B, lat []conversation.Latency, endpointing, firstToken time.Duration) {
	var total, turnEnd, model, voice, own []time.Duration
	for _, l := range lat {
		if l.FirstAudio.IsZero() || l.VoiceEnded.IsZero() {
			continue // a reminder, or an answer never spoken
		}
		total = append(total, l.FirstAudio.Sub(l.VoiceEnded))
		turnEnd = append(turnEnd, l.TurnEnded.Sub(l.VoiceEnded))
		model = append(model, l.FirstContent.Sub(l.TurnEnded))
		voice = append(voice, l.FirstAudio.Sub(l.FirstContent))
		own = append(own, l.FirstAudio.Sub(l.VoiceEnded)-endpointing-firstToken)
	}
	if len(total) == 0 {
		b.Fatal("no answer was spoken")
	}
	for _, m := range []struct {
		name string
		d    []time.Duration
	}{{"voice_to_voice", total}, {"turn_end", turnEnd}, {"model", model}, {"first_audio", voice}, {"own_share", own}} {
		slices.Sort(m.d)
		b.ReportMetric(float64(m.d[len(m.d)/2].Milliseconds()), "p50_"+m.name+"_ms")
		b.ReportMetric(float64(percentile(m.d, 95).Milliseconds()), "p95_"+m.name+"_ms")
	}
	b.ReportMetric(float64(len(total)), "answers")
}
