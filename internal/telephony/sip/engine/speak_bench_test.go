package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/conversation"
	"github.com/switchboard-dev/switchboard/internal/egress"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts/ttstest"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// BenchmarkConcurrentSpeakingCalls: SWITCHBOARD_BENCH_SPEAK_CALLS
// (default 200) answered calls started at SWITCHBOARD_BENCH_SIP_RATE calls
// per second (default 50), each speaking lines with the call's own
// variables (a name, a party size) in a voice server's voice: a
// conversation whose opening line, three sentences, is streamed piece by
// piece from a local stand-in server (ttstest, one tts.Server shared by
// all calls as by an agent's calls) whose first audio comes
// SWITCHBOARD_BENCH_SPEAK_FIRST_BYTE (default 50ms) after each request
// and which says each piece as a 440 Hz tone of
// SWITCHBOARD_BENCH_SPEAK_PIECE (default 2s). sipp
// (testdata/bench_stream.xml) answers, sends digital silence (so that no
// barge-in cuts the agent) and hangs up after SWITCHBOARD_BENCH_SIP_TALK
// (default 10s). Run it with -benchtime=1x.
//
// Each call's recording is read on the agent channel: a gap is a run of
// at least 2 ms (16 samples) of digital silence (|sample| < 64) between
// the line's first and last sound, where the tone never falls that low,
// so it is audio the writer did not have in time (a piece not streamed
// yet, an underrun) or sent late (a stall of more than two frames). It
// reports gaps (must be 0), gapcalls, short_calls (calls that said less
// than the three pieces), first audio from the answer to the line's
// first frame (p50, p95: the request, the server's delay, the first 20 ms
// frame), piece_joins (the one frame of silence, at most, between two
// pieces, which are not counted as gaps), max_wakeup_delay_ms, fallbacks (pieces noted as said in the embedded voice), and
// the CPU as BenchmarkConcurrentRecordedCalls does.
func BenchmarkConcurrentSpeakingCalls(b *testing.B) {
	calls := testsupport.EnvPositive(b, "SWITCHBOARD_BENCH_SPEAK_CALLS", 200)
	rate := testsupport.EnvPositive(b, "SWITCHBOARD_BENCH_SIP_RATE", 50)
	talk := envDuration(b, "SWITCHBOARD_BENCH_SIP_TALK", 10*time.Second)
	firstByte := envDuration(b, "SWITCHBOARD_BENCH_SPEAK_FIRST_BYTE", 50*time.Millisecond)
	piece := envDuration(b, "SWITCHBOARD_BENCH_SPEAK_PIECE", 2*time.Second)
	needFlite(b) // the fallback voice

	silence := filepath.Join(b.TempDir(), "silence.ulaw")
	if err := os.WriteFile(silence, slices.Repeat([]byte{0xFF}, sampleRate), 0o600); err != nil {
		b.Fatal(err)
	}
	s := startBenchSipp(b, benchMediaPort(), benchScenario(b, "bench_stream.xml",
		"tone", silence, "talk_ms", fmt.Sprint(talk.Milliseconds()))...)
	server := ttstest.New(b, ttstest.Behaviour{Length: piece, Delay: firstByte})
	voice := &tts.Server{Config: switchboardv1.VoiceServer{URL: server.URL, Voice: "af_heart", FirstByteTimeoutMs: 5000},
		Policy: egress.URLPolicy{AllowInsecure: true}, Fallback: &tts.Flite{}}
	e, err := NewEngine(b.Context(), EngineConfig{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = e.Close() }()
	cfg := quickConversation()
	cfg.TurnTaking.ReminderAfter = 0 // the callee is silent: no reminder within the call
	for range b.N {
		runSpeakingBatch(b, e, s, voice, cfg, calls, rate, talk)
	}
	b.ReportMetric(float64(len(server.Requests())), "tts_requests")
}

func runSpeakingBatch(b *testing.B, e *Engine, s *benchSipp, voice tts.Speaker, cfg conversation.Config, calls, rate int, talk time.Duration) {
	dir := os.Getenv("SWITCHBOARD_BENCH_SIP_KEEP")
	if dir == "" {
		dir = b.TempDir()
	}
	names := []string{"Ada", "Bob", "Cyd", "Dee", "Eve"}
	cpu := startCPU(b, s)
	stalls := watchStalls()
	runs := make([]callRun, calls)
	var wg sync.WaitGroup
	pace := time.NewTicker(time.Second / time.Duration(rate))
	for i := range runs {
		if i > 0 {
			<-pace.C
		}
		runs[i].rec = filepath.Join(dir, fmt.Sprintf("speak-%d.wav", i))
		name := names[i%len(names)]
		script := &answerScript{begin: fmt.Sprintf("Hello %s, this is call %d. Your table for %d is booked for seven tonight. "+
			"We look forward to seeing you, %s.", name, i, 2+i%6, name)}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(b.Context(), talk+time.Minute)
			defer cancel()
			runs[i].res, runs[i].err = e.Place(ctx, Trunk{Address: "sip:" + s.addr}, CallSpec{
				CallID: fmt.Sprintf("speak-%d", i), From: "+14155550100", To: "+14155550123",
				MaxDuration: talk + 30*time.Second, RecordPath: runs[i].rec,
				Conversation: &Conversation{Open: script.open, Config: cfg, Voice: voice,
					Call: conversation.CallDetails{CallID: fmt.Sprintf("speak-%d", i)}},
			})
		})
	}
	pace.Stop()
	wg.Wait()
	b.StopTimer()
	cpu.report(b, s, calls, "call")
	stalls.end(b)
	reportCalls(b, runs)
	piece := envDuration(b, "SWITCHBOARD_BENCH_SPEAK_PIECE", 2*time.Second)
	var firsts []time.Duration
	gaps, gapCalls, joins, short, fallbacks := 0, 0, 0, 0, 0
	var spoken time.Duration
	for i, r := range runs {
		if !r.res.Answered {
			continue
		}
		for _, ev := range r.res.Events {
			if ev.Speaker == SpeakerAgent && !ev.Note {
				firsts = append(firsts, ev.At.Sub(r.res.AnsweredAt))
				break
			}
		}
		for _, ev := range r.res.Events {
			if ev.Note && strings.HasPrefix(ev.Text, "(said in the embedded voice") {
				fallbacks++
			}
		}
		left, _ := readRecording(b, r.rec)
		found, n := lineGaps(left)
		found, joined := pieceJoins(found, piece)
		joins += joined
		if len(found) > 0 && gapCalls < 3 {
			b.Logf("call %d: gaps (start, length) %v", i, found)
		}
		spoken += samplesDuration(n)
		if samplesDuration(n) < 3*piece-100*time.Millisecond {
			short++
			if short <= 3 {
				b.Logf("call %d said %s of its line: %s", i, samplesDuration(n), describe(r.res.Events))
			}
		}
		if len(found) > 0 {
			gaps += len(found)
			gapCalls++
		}
	}
	slices.Sort(firsts)
	b.ReportMetric(float64(gaps), "gaps")
	b.ReportMetric(float64(gapCalls), "gapcalls")
	b.ReportMetric(float64(joins), "piece_joins")
	b.ReportMetric(float64(short), "short_calls")
	b.ReportMetric(float64(fallbacks), "fallbacks")
	b.ReportMetric(spoken.Seconds(), "spoken_s")
	b.ReportMetric(float64(percentile(firsts, 50).Microseconds())/1000, "first_audio_p50_ms")
	b.ReportMetric(float64(percentile(firsts, 95).Microseconds())/1000, "first_audio_p95_ms")
	b.StartTimer()
}

// pieceJoins sets apart, of a line's gaps, the silence of at most a frame
// where one piece ends and the next begins (the writer takes the next
// piece at the frame after the last one ended): it returns the others and
// the number of joins.
func pieceJoins(gaps [][2]time.Duration, piece time.Duration) (others [][2]time.Duration, joins int) {
	var shift time.Duration // the silence before, which moves the boundaries
	for _, g := range gaps {
		at := g[0] - shift
		k := (at + piece/2) / piece
		if d := at - k*piece; k >= 1 && d > -5*time.Millisecond && d < 5*time.Millisecond && g[1] <= 25*time.Millisecond {
			joins++
		} else {
			others = append(others, g)
		}
		shift += g[1]
	}
	return others, joins
}

// lineGaps finds the gaps of the agent's line in a recording's agent
// channel, between its first and last sound (each as its start from the
// first sound and its length), and the samples between them.
func lineGaps(left []int) (gaps [][2]time.Duration, n int) {
	first, last := -1, -1
	for i, v := range left {
		if abs(v) >= gapLevel {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return nil, 0
	}
	run := 0
	for i, v := range left[first : last+1] {
		if abs(v) < gapLevel {
			run++
			continue
		}
		if run >= gapSamples {
			gaps = append(gaps, [2]time.Duration{samplesDuration(i - run), samplesDuration(run)})
		}
		run = 0
	}
	return gaps, last + 1 - first
}
