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
