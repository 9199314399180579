package engine

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/go-audio/wav"

	"github.com/switchboard-dev/switchboard/internal/telephony/audio"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// A callee's voice in the listening tests: flite's (8 kHz, the agents'
// own engine) or espeak-ng's, a different synthesizer with a different
// voice, so that a test passing in one voice is not tuned to it.
const (
	voiceFlite  = "flite"
	voiceESpeak = "espeak-ng"
)

// say speaks text in voice as 8 kHz 16-bit mono PCM.
func say(tb testing.TB, voice, text string) []int16 {
	tb.Helper()
	if voice == voiceESpeak {
		return espeakSay(tb, text)
	}
	testsupport.Needs(tb, "flite")
	// The callee speaks in flite's kal whatever the agents' default voice:
	// the listening tests and benchmarks keep the audio they were measured
	// with.
	f := tts.Flite{Voice: "kal"}
	pcm, err := f.Speak(context.Background(), text)
	if err != nil {
		tb.Fatalf("flite: %v", err)
	}
	return pcm
}

// espeakSay speaks text with espeak-ng's en-us voice (Debian package
// espeak-ng), which writes 22050 Hz only, resampled to a call's 8 kHz.
func espeakSay(tb testing.TB, text string) []int16 {
	tb.Helper()
	testsupport.Needs(tb, "espeak-ng")
	path := filepath.Join(tb.TempDir(), "espeak.wav")
	if out, err := exec.CommandContext(context.Background(), "espeak-ng", "-v", "en-us", "-w", path, text).CombinedOutput(); err != nil {
		tb.Fatalf("espeak-ng: %v %s (install it with `apt-get install -y espeak-ng`)", err, out)
	}
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	buf, err := wav.NewDecoder(f).FullPCMBuffer()
	if err != nil {
		tb.Fatalf("espeak-ng's WAV: %v", err)
	}
	pcm := make([]int16, len(buf.Data))
	for i, v := range buf.Data {
		pcm[i] = int16(max(math.MinInt16, min(math.MaxInt16, v)))
	}
	return audio.Resample(pcm, buf.Format.SampleRate)
}
