package engine

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/go-audio/wav"

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
	var f tts.Flite
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
	return resampleTo8k(buf.Data, buf.Format.SampleRate)
}

// resampleTo8k converts pcm at rate to 8 kHz through a windowed-sinc
// low-pass at 3.6 kHz (below the new Nyquist frequency, as a telephone
// band would be), evaluated at each output sample's place in the input.
func resampleTo8k(pcm []int, rate int) []int16 {
	const halfWidth = 32 // input samples on either side
	cutoff := 3600 / float64(rate)
	out := make([]int16, len(pcm)*sampleRate/rate)
	for i := range out {
		x := float64(i) * float64(rate) / sampleRate
		centre := int(x)
		var acc float64
		for k := centre - halfWidth; k <= centre+halfWidth; k++ {
			if k < 0 || k >= len(pcm) {
				continue
			}
			d := x - float64(k)
			h := 2 * cutoff
			if d != 0 {
				h = math.Sin(2*math.Pi*cutoff*d) / (math.Pi * d)
			}
			// Blackman window over ±halfWidth.
			w := 0.42 + 0.5*math.Cos(math.Pi*d/halfWidth) + 0.08*math.Cos(2*math.Pi*d/halfWidth)
			acc += float64(pcm[k]) * h * w
		}
		out[i] = int16(max(math.MinInt16, min(math.MaxInt16, math.Round(acc))))
	}
	return out
}
