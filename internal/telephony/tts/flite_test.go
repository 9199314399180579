package tts

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// These tests run the real flite (Debian package flite).

func newFlite(t *testing.T, f *Flite) (*Flite, *atomic.Int64) {
	t.Helper()
	testsupport.Needs(t, "flite")
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

// flite's 16 kHz voices (the default among them) are resampled to 8 kHz:
// the same line lasts about as long as in kal, an 8 kHz voice.
func TestSpeakResamplesSixteenKilohertzVoices(t *testing.T) {
	line := "Your appointment is on Tuesday at two thirty."
	kal, _ := newFlite(t, &Flite{Voice: "kal"})
	want := len(speak(t, kal, line))
	for _, voice := range []string{"", "slt", "kal16"} {
		f, _ := newFlite(t, &Flite{Voice: voice})
		if got := len(speak(t, f, line)); got < want*2/3 || got > want*3/2 {
			t.Errorf("voice %q: %d samples, want about kal's %d (8 kHz)", voice, got, want)
		}
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

func TestSpeakRefusesTextOverTheLimit(t *testing.T) {
	f, runs := newFlite(t, &Flite{})
	sentence := "Your appointment with the clinic is tomorrow at ten. "
	longest := strings.Repeat(sentence, MaxTextLength/len(sentence)+1)[:MaxTextLength]
	if s := speak(t, f, longest); len(s) == 0 {
		t.Fatalf("a text of exactly %d characters was not spoken", MaxTextLength)
	}
	_, err := f.Speak(t.Context(), strings.Repeat("é", MaxTextLength+1))
	if err == nil || !strings.Contains(err.Error(), "4097 characters is over the 4096") {
		t.Errorf("Speak of %d characters: %v, want a refusal naming the limit", MaxTextLength+1, err)
	}
	if runs.Load() != 1 {
		t.Errorf("%d flite runs, want 1: the text over the limit must not reach flite", runs.Load())
	}
}

// A synthesizer that hangs is killed at the timeout, with what it started.
// The stand-in is a shell script that sleeps (in a child process, as a
// wrapper script around flite would run it).
func TestSpeakKillsFliteAtItsTimeout(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "flite")
	body := "#!/bin/sh\necho $$ > " + filepath.Join(dir, "pid") + "\nsleep 60 &\necho $! > " +
		filepath.Join(dir, "child") + "\nwait\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil { //nolint:gosec // an executable stand-in
		t.Fatal(err)
	}
	f := &Flite{Binary: script, Timeout: 300 * time.Millisecond}
	start := time.Now()
	_, err := f.Speak(t.Context(), "Hello.")
	if err == nil || !strings.Contains(err.Error(), "flite did not finish within 300ms and was stopped") {
		t.Fatalf("Speak with a hanging flite: %v", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("Speak took %s to give up on a 300ms timeout", took)
	}
	for _, name := range []string{"pid", "child"} {
		if pid := readPID(t, filepath.Join(dir, name)); running(pid) {
			t.Errorf("process %s (%d) still runs after the timeout", name, pid)
		}
	}
	// A failure is not cached: the next call runs flite again.
	if _, err := f.Speak(t.Context(), "Hello."); err == nil {
		t.Error("a second Speak succeeded with the same hanging flite")
	}
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// running reports whether pid is a live process (a zombie waiting for its
// parent to reap it is not).
func running(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
	return !strings.HasPrefix(strings.TrimSpace(rest), "Z")
}

// At most MaxRuns flite processes run at once, however many calls prepare
// their scripts together. The stand-in logs when it starts and ends.
func TestSpeakBoundsConcurrentRuns(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	script := filepath.Join(dir, "flite")
	body := "#!/bin/sh\necho start >> " + log + "\nsleep 0.3\necho end >> " + log + "\nexit 1\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil { //nolint:gosec // an executable stand-in
		t.Fatal(err)
	}
	f := &Flite{Binary: script, MaxRuns: 2}
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() { _, _ = f.Speak(t.Context(), fmt.Sprintf("text %d", i)) })
	}
	wg.Wait()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	running, most := 0, 0
	for _, line := range strings.Fields(string(b)) {
		if line == "start" {
			running++
		} else {
			running--
		}
		most = max(most, running)
	}
	if most != 2 || strings.Count(string(b), "start") != 6 {
		t.Errorf("at most %d flite runs at once (want 2), log:\n%s", most, b)
	}
}
