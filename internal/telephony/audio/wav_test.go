package audio

import (
	"bytes"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	goaudio "github.com/go-audio/audio"
	"github.com/go-audio/wav"
)

// tone is n samples of a 440 Hz tone.
func tone(n int) []int16 {
	pcm := make([]int16, n)
	for i := range pcm {
		pcm[i] = int16(8000 * math.Sin(2*math.Pi*440*float64(i)/SampleRate))
	}
	return pcm
}

// writeWAV writes pcm as an 8 kHz 16-bit WAV of channels interleaved
// channels.
func writeWAV(t *testing.T, pcm []int16, channels int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audio.wav")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]int, len(pcm))
	for i, s := range pcm {
		data[i] = int(s)
	}
	enc := wav.NewEncoder(f, SampleRate, 16, channels, 1)
	if err := enc.Write(&goaudio.IntBuffer{Format: &goaudio.Format{NumChannels: channels, SampleRate: SampleRate}, Data: data, SourceBitDepth: 16}); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDecodeMono(t *testing.T) {
	want := tone(800)
	f, err := os.Open(writeWAV(t, want, 1))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	got, err := DecodeMono(f)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("decoded %d samples, not the %d written", len(got), len(want))
	}
	// Not a seeker: read whole.
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecodeMono(io.MultiReader(bytes.NewReader(b))); err != nil || !slices.Equal(got, want) {
		t.Errorf("from a plain reader: %d samples, %v", len(got), err)
	}
}

func TestDecodeMonoRejects(t *testing.T) {
	stereo, err := os.ReadFile(writeWAV(t, make([]int16, 320), 2))
	if err != nil {
		t.Fatal(err)
	}
	for name, in := range map[string][]byte{
		"empty":      nil,
		"not a WAV":  []byte("package audio\n"),
		"stereo WAV": stereo,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := DecodeMono(bytes.NewReader(in)); err == nil {
				t.Error("DecodeMono succeeded, want an error")
			} else {
				t.Log(err)
			}
		})
	}
}

// What Mono writes reads back sample for sample.
func TestMonoRoundTrip(t *testing.T) {
	want := tone(800)
	got, err := DecodeMono(bytes.NewReader(Mono(want)))
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("decoded %d samples (%v), want the %d written", len(got), err, len(want))
	}
}
