package tts

import (
	"context"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// These tests run the real flite (Debian package flite).

func newFlite(t *testing.T, f *Flite) (*Flite, *atomic.Int64) {
	t.Helper()
	if _, err := exec.LookPath("flite"); err != nil {
		t.Fatalf("flite is not on PATH: these tests need it; install it with `apt-get install -y flite` (%v)", err)
	}
	runs := &atomic.Int64{}
	f.onRun = func() { runs.Add(1) }
	return f, runs
}

func speak(t *testing.T, f *Flite, text string) []int16 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	samples, err := f.Speak(ctx, text)
	if err != nil {
		t.Fatalf("Speak(%q): %v", text, err)
	}
	return samples
}

func loudness(samples []int16) float64 {
	var sum float64
	for _, s := range samples {
		sum += float64(max(s, -s))
	}
	return sum / float64(max(len(samples), 1))
}

func TestSpeakIsAudibleAndScalesWithText(t *testing.T) {
	f, _ := newFlite(t, &Flite{})
	short := speak(t, f, "Hello.")
	long := speak(t, f, "Hello, this is the clinic calling to confirm your appointment tomorrow at ten in the morning.")
	for name, s := range map[string][]int16{"short": short, "long": long} {
		if d := time.Duration(len(s)) * time.Second / SampleRate; d < 200*time.Millisecond || d > 20*time.Second {
			t.Errorf("%s speech lasts %s", name, d)
		}
		// Speech, not silence: well above the 256 the engine calls voice.
		if l := loudness(s); l < 256 {
			t.Errorf("%s speech has mean amplitude %.0f: silent", name, l)
		}
	}
	if len(long) < 3*len(short) {
		t.Errorf("a sentence of 16 words (%d samples) is not much longer than one word (%d)", len(long), len(short))
	}
}

func TestSpeakCachesByVoiceAndText(t *testing.T) {
	f, runs := newFlite(t, &Flite{})
	first := speak(t, f, "Your table is ready.")
	again := speak(t, f, "Your table is ready.")
	if runs.Load() != 1 || &first[0] != &again[0] {
		t.Errorf("second Speak ran flite again (%d runs) or returned other samples", runs.Load())
	}
	// The voice is part of the key: the same text in a named voice runs
	// flite again.
	f.Voice = "kal"
	if s := speak(t, f, "Your table is ready."); runs.Load() != 2 || len(s) == 0 {
		t.Errorf("voice kal: %d runs in all, %d samples; want a second run", runs.Load(), len(s))
	}
}

func TestSpeakCacheIsBounded(t *testing.T) {
	f, runs := newFlite(t, &Flite{CacheEntries: 2})
	for _, text := range []string{"one", "two", "three", "one"} {
		speak(t, f, text)
	}
	// "one" was evicted by "three", so it ran twice.
	if runs.Load() != 4 {
		t.Errorf("%d flite runs, want 4 (the oldest entry evicted)", runs.Load())
	}
	speak(t, f, "three")
	if runs.Load() != 4 {
		t.Errorf("a recent entry was not cached")
	}
}

func TestConcurrentSpeakRunsFliteOnce(t *testing.T) {
	f, runs := newFlite(t, &Flite{})
	var wg sync.WaitGroup
	results := make([][]int16, 8)
	for i := range results {
		wg.Go(func() { results[i] = speak(t, f, "Please hold while we connect you.") })
	}
	wg.Wait()
	if runs.Load() != 1 {
		t.Errorf("%d flite runs for one text, want 1", runs.Load())
	}
	for i, r := range results {
		if len(r) == 0 || &r[0] != &results[0][0] {
			t.Errorf("caller %d got other samples", i)
		}
	}
}

func TestSpeakRefusesOtherFormats(t *testing.T) {
	f, _ := newFlite(t, &Flite{Voice: "slt"}) // a 16 kHz voice
	_, err := f.Speak(t.Context(), "Hello.")
	if err == nil || !strings.Contains(err.Error(), "16000 Hz") {
		t.Errorf("Speak with a 16 kHz voice: %v, want an error naming the rate", err)
	}
}

func TestSpeakReportsMissingBinary(t *testing.T) {
	f := &Flite{Binary: "flite-that-does-not-exist"}
	if _, err := f.Speak(t.Context(), "Hello."); err == nil || !strings.Contains(err.Error(), "flite") {
		t.Errorf("Speak: %v, want an error about flite", err)
	}
}

func TestSpeakWhitespaceIsSilence(t *testing.T) {
	f, runs := newFlite(t, &Flite{})
	if s := speak(t, f, "  \n"); len(s) != 0 || runs.Load() != 0 {
		t.Errorf("whitespace: %d samples, %d runs", len(s), runs.Load())
	}
}
