//go:build pocketsphinx

package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/zaf/g711"

	"github.com/switchboard-dev/switchboard/internal/telephony/speech"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// BenchmarkConcurrentListeningCalls places SWITCHBOARD_BENCH_LISTEN_CALLS
// (default 50) calls at once to sipp (testdata/bench_stream.xml), whose
// callee speaks half the time for SWITCHBOARD_BENCH_SIP_TALK (default
// 30s): answers in flite's and espeak-ng's voices ("yeah sure", "no
// thanks", "that's right", "cancel it"), each followed by as much
// silence (a second at least), looped; the calls start spread over the
// loop's length, so that their callees do not all speak at once. Each call
// runs a gather by choices that asks again whatever the answer, heard by
// one embedded recognizer shared by all calls
// (SWITCHBOARD_BENCH_DECODERS decoders, default one per CPU), and is
// recorded. Run it with -benchtime=1x.
//
// It reports the recognitions' latency (recognize_ms: the wait for a free
// decoder and the decoding, p50 and p95, of gathers' and of the open
// transcription of what is said outside them), the reply latency from the
// end of each answer to the agent's next audio in the recordings
// (reply_ms; the goal is a p95 under 700 ms), and the CPU: this process's
// (cpu_%, 100 is one core; per listening call), sipp's apart, and the
// whole machine's (machine_busy_%, of both cores). The number of calls at
// which the reply p95 stays under the goal is the figure hack/benchmarks.md
// reports.
func BenchmarkConcurrentListeningCalls(b *testing.B) {
	calls := testsupport.EnvPositive(b, "SWITCHBOARD_BENCH_LISTEN_CALLS", 50)
	talk := envDuration(b, "SWITCHBOARD_BENCH_SIP_TALK", 30*time.Second)
	decoders := testsupport.EnvPositive(b, "SWITCHBOARD_BENCH_DECODERS", 0)
	testsupport.Needs(b, "sipp, flite, espeak-ng")
	embedded, err := speech.NewEmbedded(speech.EmbeddedOptions{Decoders: decoders})
	if err != nil {
		b.Fatalf("the embedded recognizer (apt-get install libpocketsphinx-dev pocketsphinx-en-us): %v", err)
	}
	loop, loopLen := writeSpeechLoop(b)
	s := startBenchSipp(b, benchMediaPort(), benchScenario(b, "bench_stream.xml",
		"tone", loop, "talk_ms", strconv.Itoa(int(talk.Milliseconds())))...)
	e, err := NewEngine(b.Context(), EngineConfig{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = e.Close() }()
	ms := time.Millisecond
	script := []Step{{ID: "ask", Text: "Shall we?", Audio: tone(300 * ms), Gather: &Gather{Field: "confirmed", Speech: true,
		Timeout: 5 * time.Second, NoInput: &Retry{Next: "ask"}, NoMatch: &Retry{Next: "ask"}, Choices: []Choice{
			{Value: "yes", Phrases: []string{"yeah", "sure", "that's right"}, Next: "ask"},
			{Value: "no", Phrases: []string{"no thanks", "cancel it"}, Next: "ask"},
		}}}}
	for range b.N {
		r := &timedRecognizer{Recognizer: embedded, all: true}
		stalls := watchStalls()
		cpu := startCPU(b, s)
		runs := make([]callRun, calls)
		var wg sync.WaitGroup
		for i := range runs {
			runs[i].rec = filepath.Join(b.TempDir(), fmt.Sprintf("call-%d.wav", i))
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(b.Context(), talk+time.Minute)
				defer cancel()
				runs[i].res, runs[i].err = e.Place(ctx, Trunk{Address: "sip:" + s.addr}, CallSpec{
					CallID: fmt.Sprintf("listen-%d", i), From: "+14155550100", To: "+14155550123",
					MaxDuration: talk + 30*time.Second, RecordPath: runs[i].rec, Script: script, Recognizer: r,
				})
			})
			// Spread over the loop, so that the callees do not all stop
			// speaking at the same moment.
			time.Sleep(loopLen / time.Duration(calls))
		}
		wg.Wait()
		b.StopTimer()
		cpu.report(b, s, calls, "call")
		stalls.end(b)
		reportCalls(b, runs)
		var lat []time.Duration
		for _, run := range runs {
			if run.res.Answered {
				left, _ := readRecording(b, run.rec)
				lat = append(lat, replies(voicedFrames(left), run.res)...)
			}
		}
		if len(lat) == 0 {
			b.Fatal("no reply found in the recordings")
		}
		reportReplies(b, lat, 0)
		took := r.durations()
		b.ReportMetric(float64(took[len(took)/2].Milliseconds()), "p50_recognize_ms")
		b.ReportMetric(float64(percentile(took, 95).Milliseconds()), "p95_recognize_ms")
		b.ReportMetric(float64(len(took)), "recognitions")
		b.StartTimer()
	}
}

// writeSpeechLoop writes the callee's loop of answers as raw PCMU, which
// sipp streams as is: each answer followed by as much silence (a second at
// least). It returns the file and how long the loop plays.
func writeSpeechLoop(b *testing.B) (string, time.Duration) {
	var pcm []int16
	for i, text := range []string{"yeah sure", "no thanks", "that's right", "cancel it"} {
		voice := voiceFlite
		if i%2 == 1 {
			voice = voiceESpeak
		}
		s := say(b, voice, text)
		pcm = append(pcm, s...)
		pcm = append(pcm, make([]int16, max(len(s), sampleRate))...)
	}
	ulaw := make([]byte, len(pcm))
	for i, v := range pcm {
		ulaw[i] = g711.EncodeUlawFrame(v)
	}
	path := filepath.Join(b.TempDir(), "speech.ulaw")
	if err := os.WriteFile(path, ulaw, 0o600); err != nil {
		b.Fatal(err)
	}
	return path, samplesDuration(len(pcm))
}
