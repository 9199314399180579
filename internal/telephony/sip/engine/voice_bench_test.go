package engine

import (
	"fmt"
	"math/rand/v2"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/conversation"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts"
)

// BenchmarkFirstAudio measures a conversation line's time from its text to
// its first audio frame handed to the RTP writer (PlayStarted), through
// sipLine and the writer goroutine paced at 20 ms a frame as on a call:
// the embedded voice (flite) on a line it never said (cold) and on a
// cached one (tts.Cache, as the renderer's prompts), and a streaming voice
// (tts.Streamer, a stand-in server) whose first audio comes 50 ms after
// the request. Each line is cut once started. It reports p50 and p95.
// The writer takes a new playback at a frame's boundary: up to 20 ms of
// every figure (10 on average) is that wait.
func BenchmarkFirstAudio(b *testing.B) {
	const text = "Thank you for calling. Your table for four is booked for seven tonight."
	b.Run("flite-cold", func(b *testing.B) {
		needFlite(b)
		n := 0
		benchFirstAudio(b, &tts.Flite{}, func() string { n++; return fmt.Sprintf("%s Your number is %d.", text, n) })
	})
	b.Run("flite-cached", func(b *testing.B) {
		needFlite(b)
		voice := (&tts.Cache{}).Voice("bench", &tts.Flite{})
		if _, err := voice.Speak(b.Context(), text); err != nil {
			b.Fatal(err)
		}
		benchFirstAudio(b, voice, func() string { return text })
	})
	b.Run("stream-50ms", func(b *testing.B) {
		voice := &fakeStreamer{samples: 4 * sampleRate, firstDelay: 50 * time.Millisecond, delay: 20 * time.Millisecond,
			pieces: []int{1200}}
		benchFirstAudio(b, voice, func() string { return text })
	})
}

func needFlite(b *testing.B) {
	if _, err := exec.LookPath("flite"); err != nil {
		b.Skip("needs flite")
	}
}

func benchFirstAudio(b *testing.B, voice tts.Speaker, line func() string) {
	r := newLineRig(b, voice, 20*time.Millisecond)
	defer r.close(b)
	var took []time.Duration
	tag := 0
	for b.Loop() {
		tag++
		// Lines come at any moment of the writer's 20 ms frame.
		time.Sleep(time.Duration(rand.IntN(20_000)) * time.Microsecond)
		start := time.Now()
		r.line.Say(line(), tag)
		ev := r.next(b, 30*time.Second)
		if ev.Kind != conversation.PlayStarted || ev.Tag != tag {
			b.Fatalf("event %+v, want line %d started", ev, tag)
		}
		took = append(took, ev.At.Sub(start))
		r.line.Cut()
		if ev := r.next(b, 5*time.Second); ev.Kind != conversation.PlayEnded {
			b.Fatalf("event %+v, want the end", ev)
		}
	}
	slices.Sort(took)
	p50, p95 := percentile(took, 50), percentile(took, 95)
	b.ReportMetric(float64(p50.Microseconds())/1000, "p50_ms")
	b.ReportMetric(float64(p95.Microseconds())/1000, "p95_ms")
	b.Logf("text to first audio frame: p50 %s, p95 %s over %d lines", p50.Round(100*time.Microsecond),
		p95.Round(100*time.Microsecond), len(took))
}
