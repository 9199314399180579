package audio

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// The recorder puts both channels on one timeline, fills gaps with
// silence and streams to disk: a 6 s call (longer than it buffers) comes
// out whole and aligned.
func TestRecorderTimeline(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.wav")
	start := time.Unix(1000, 0)
	r, err := NewRecorder(path)
	if err != nil {
		t.Fatal(err)
	}
	r.Begin(start)
	frame := func(v int16) []int16 { return slices.Repeat([]int16{v}, frameSamples) }
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	for ms := 0; ms < 6000; ms += 20 {
		r.Add(AgentChannel, frame(1000), at(ms))
		// The callee speaks from 2 s to 3 s, with packets arriving up to
		// 15 ms late, then once more at 5 s.
		if ms >= 2000 && ms < 3000 {
			r.Add(CalleeChannel, frame(-2000), at(ms+ms%16))
		}
	}
	r.Add(CalleeChannel, frame(3000), at(5000))
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	left, right, err := DecodeStereo(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 6*SampleRate {
		t.Fatalf("recording has %d samples per channel, want %d", len(left), 6*SampleRate)
	}
	for i, s := range left {
		if s != 1000 {
			t.Fatalf("left[%d] = %d, want 1000", i, s)
		}
	}
	check := func(from, to int, want int16) {
		t.Helper()
		for i := from; i < to; i++ {
			if right[i] != want {
				t.Fatalf("right[%d] = %d, want %d", i, right[i], want)
			}
		}
	}
	check(0, 2*SampleRate, 0)
	check(2*SampleRate, 3*SampleRate, -2000)
	check(3*SampleRate, 5*SampleRate, 0)
	check(5*SampleRate, 5*SampleRate+frameSamples, 3000)
	check(5*SampleRate+frameSamples, 6*SampleRate, 0)
}

// A bounded recording stops at its bound, header included, and says so;
// the audio before the bound is whole and the file plays.
func TestRecorderStopsAtItsLimit(t *testing.T) {
	for _, tc := range []struct {
		name     string
		seconds  int   // of audio added
		maxBytes int64 // the bound
		samples  int   // per channel, in the file
		full     bool
	}{
		{"a long call", 10, HeaderSize + 2*SampleRate*4 + 3, 2 * SampleRate, true},
		{"a call shorter than the bound", 1, HeaderSize + 2*SampleRate*4, SampleRate, false},
		{"no bound", 4, 0, 4 * SampleRate, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "rec.wav")
			start := time.Unix(1000, 0)
			r, err := NewRecorder(path)
			if err != nil {
				t.Fatal(err)
			}
			r.Limit(tc.maxBytes)
			r.Begin(start)
			for ms := 0; ms < tc.seconds*1000; ms += 20 {
				r.Add(AgentChannel, slices.Repeat([]int16{1000}, frameSamples), start.Add(time.Duration(ms)*time.Millisecond))
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if want := int64(HeaderSize + tc.samples*4); fi.Size() != want {
				t.Fatalf("the file has %d bytes, want %d", fi.Size(), want)
			}
			if tc.maxBytes > 0 && fi.Size() > tc.maxBytes {
				t.Fatalf("the file has %d bytes, over its bound of %d", fi.Size(), tc.maxBytes)
			}
			if r.Full() != tc.full {
				t.Fatalf("Full() = %v, want %v", r.Full(), tc.full)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = f.Close() }()
			left, _, err := DecodeStereo(f)
			if err != nil || len(left) != tc.samples || left[len(left)-1] != 1000 {
				t.Fatalf("decoded %d samples (%v), want %d of the agent's audio", len(left), err, tc.samples)
			}
		})
	}
}

func TestRecorderWithoutPath(t *testing.T) {
	r, err := NewRecorder("")
	if err != nil {
		t.Fatal(err)
	}
	r.Begin(time.Now())
	for i := range 500 {
		r.Add(AgentChannel, make([]int16, frameSamples), time.Now().Add(time.Duration(i)*20*time.Millisecond))
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}

// A recording cut off mid-write, its header still saying it is empty,
// plays up to its last whole frame once repaired.
func TestRepair(t *testing.T) {
	const frames = 800
	path := filepath.Join(t.TempDir(), "cut.wav")
	b := Header(2, 0)
	for i := range frames {
		b = append(b, byte(i), byte(i>>8), 0, 0)
	}
	b = append(b, 1, 2, 3) // a partial frame
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Repair(path); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	left, _, err := DecodeStereo(f)
	if err != nil || len(left) != frames {
		t.Errorf("repaired file: %d frames (%v), want %d", len(left), err, frames)
	}
}

func TestRepairRejectsAFileShorterThanItsHeader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "short.wav")
	if err := os.WriteFile(path, []byte("RIFF"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Repair(path); err == nil {
		t.Error("Repair succeeded on a 4-byte file")
	}
}
