//go:build pocketsphinx

package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/zaf/g711"

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

// BenchmarkConcurrentConversations holds SWITCHBOARD_BENCH_CONVERSATIONS
// (default 100) conversations at once with sipp's callees
// (testdata/bench_stream.xml) for SWITCHBOARD_BENCH_SIP_TALK (default
// 30s): each callee says a line (flite's or espeak-ng's voice) every
// conversationGap, looped, the calls spread over the loop; one embedded
// recognizer shared by all calls hears them (open recognition, as a
// conversation listens), a stand-in model answers "Okay, noted." 200 ms
// after each request, and flite voices it. It reports the voice-to-voice
// latency over every answer of every call (p50, p95, and its parts, as
// BenchmarkVoiceToVoice), the recognitions' latency and the CPU per call
// (cpu_%, 100 is one core). Run it with -benchtime=1x.
func BenchmarkConcurrentConversations(b *testing.B) {
	const endpointing, firstToken = 400 * time.Millisecond, 200 * time.Millisecond
	calls := testsupport.EnvPositive(b, "SWITCHBOARD_BENCH_CONVERSATIONS", 100)
	talk := envDuration(b, "SWITCHBOARD_BENCH_SIP_TALK", 30*time.Second)
	testsupport.Needs(b, "sipp, flite, espeak-ng")
	embedded, err := speech.NewEmbedded(speech.EmbeddedOptions{})
	if err != nil {
		b.Fatalf("the embedded recognizer (apt-get install libpocketsphinx-dev pocketsphinx-en-us): %v", err)
	}
	loop, loopLen := writeConversationLoop(b)
	s := startBenchSipp(b, benchMediaPort(), benchScenario(b, "bench_stream.xml",
		"tone", loop, "talk_ms", strconv.Itoa(int(talk.Milliseconds())))...)
	e, err := NewEngine(b.Context(), EngineConfig{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = e.Close() }()
	voice := &tts.Flite{}
	for range b.N {
		r := &timedRecognizer{Recognizer: embedded, all: true}
		cpu := startCPU(b, s)
		runs := make([]callRun, calls)
		var wg sync.WaitGroup
		for i := range runs {
			script := &answerScript{firstToken: firstToken, repeat: true, answers: []conversation.Chunk{{Content: "Okay, noted."}}}
			cfg := conversation.Config{TurnTaking: conversation.DefaultTurnTaking(), FallbackLine: "Sorry."}
			cfg.TurnTaking.MinEndpointing, cfg.TurnTaking.MaxEndpointing = endpointing, endpointing
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(b.Context(), talk+time.Minute)
				defer cancel()
				runs[i].res, runs[i].err = e.Place(ctx, Trunk{Address: "sip:" + s.addr}, CallSpec{
					CallID: fmt.Sprintf("converse-%d", i), From: "+14155550100", To: "+14155550123",
					MaxDuration: talk + 30*time.Second, Recognizer: r,
					Conversation: &Conversation{Open: script.open, Config: cfg, Voice: voice},
				})
			})
			time.Sleep(loopLen / time.Duration(calls))
		}
		wg.Wait()
		b.StopTimer()
		cpu.report(b, s, calls, "call")
		reportCalls(b, runs)
		var lat []conversation.Latency
		for _, run := range runs {
			lat = append(lat, run.res.Latencies...)
		}
		reportVoiceToVoice(b, lat, endpointing, firstToken)
		if took := r.durations(); len(took) > 0 {
			b.ReportMetric(float64(took[len(took)/2].Milliseconds()), "p50_recognize_ms")
			b.ReportMetric(float64(percentile(took, 95).Milliseconds()), "p95_recognize_ms")
		}
		b.StartTimer()
	}
}

// conversationGap is the time from one of the callee's lines to the next
// in BenchmarkConcurrentConversations: room for the agent's answer.
const conversationGap = 4 * time.Second

// writeConversationLoop writes the callees' loop of lines as raw PCMU for
// sipp: each line, then silence to conversationGap.
func writeConversationLoop(b *testing.B) (string, time.Duration) {
	var pcm []int16
	for i, text := range []string{"I would like a table for four", "at seven tonight please", "yes that is right", "no thank you"} {
		v := voiceFlite
		if i%2 == 1 {
			v = voiceESpeak
		}
		s := say(b, v, text)
		pcm = append(pcm, s...)
		pcm = append(pcm, make([]int16, max(int(conversationGap.Seconds()*sampleRate)-len(s), sampleRate))...)
	}
	ulaw := make([]byte, len(pcm))
	for i, v := range pcm {
		ulaw[i] = g711.EncodeUlawFrame(v)
	}
	path := filepath.Join(b.TempDir(), "conversation.ulaw")
	if err := os.WriteFile(path, ulaw, 0o600); err != nil {
		b.Fatal(err)
	}
	return path, samplesDuration(len(pcm))
}
