package engine

import (
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
	r, err := newRecorder(path)
	if err != nil {
		t.Fatal(err)
	}
	r.start = start
	frame := func(v int16) []int16 { return slices.Repeat([]int16{v}, frameSamples) }
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	for ms := 0; ms < 6000; ms += 20 {
		r.add(agentChannel, frame(1000), at(ms))
		// The callee speaks from 2 s to 3 s, with packets arriving up to
		// 15 ms late, then once more at 5 s.
		if ms >= 2000 && ms < 3000 {
			r.add(calleeChannel, frame(-2000), at(ms+ms%16))
		}
	}
	r.add(calleeChannel, frame(3000), at(5000))
	if err := r.close(); err != nil {
		t.Fatal(err)
	}

	left, right := readRecording(t, path)
	if len(left) != 6*sampleRate {
		t.Fatalf("recording has %d samples per channel, want %d", len(left), 6*sampleRate)
	}
	for i, s := range left {
		if s != 1000 {
			t.Fatalf("left[%d] = %d, want 1000", i, s)
		}
	}
	check := func(from, to, want int) {
		t.Helper()
		for i := from; i < to; i++ {
			if right[i] != want {
				t.Fatalf("right[%d] = %d, want %d", i, right[i], want)
			}
		}
	}
	check(0, 2*sampleRate, 0)
	check(2*sampleRate, 3*sampleRate, -2000)
	check(3*sampleRate, 5*sampleRate, 0)
	check(5*sampleRate, 5*sampleRate+frameSamples, 3000)
	check(5*sampleRate+frameSamples, 6*sampleRate, 0)
}

func TestRecorderWithoutPath(t *testing.T) {
	r, err := newRecorder("")
	if err != nil {
		t.Fatal(err)
	}
	r.start = time.Now()
	for i := range 500 {
		r.add(agentChannel, make([]int16, frameSamples), time.Now().Add(time.Duration(i)*20*time.Millisecond))
	}
	if err := r.close(); err != nil {
		t.Fatal(err)
	}
}

func TestRTPClockPlacesLatePacketsByTimestamp(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	var c rtpClock
	steps := []struct {
		name      string
		ssrc, ts  uint32
		byArrival time.Time
		want      time.Time
	}{
		{"first packet anchors", 1, 1000, ms(0), ms(0)},
		{"on time", 1, 1160, ms(20), ms(20)},
		{"60 ms late: keeps its place", 1, 1320, ms(100), ms(40)},
		{"burst after the stall", 1, 1480, ms(101), ms(60)},
		{"earlier than its place: anchor again", 1, 1640, ms(70), ms(70)},
		{"placed from the new anchor", 1, 1800, ms(95), ms(90)},
		{"timestamp jump: anchor again", 1, 1800 + 8000*10, ms(110), ms(110)},
		{"new source: anchor again", 2, 5, ms(130), ms(130)},
		{"on time on the new source", 2, 5 + 160, ms(150), ms(150)},
	}
	for _, s := range steps {
		if got := c.place(s.ssrc, s.ts, s.byArrival); !got.Equal(s.want) {
			t.Errorf("%s: placed at %v, want %v", s.name, got.Sub(t0), s.want.Sub(t0))
		}
	}
	var w rtpClock
	w.place(3, 0xFFFFFF60, ms(0))
	if got := w.place(3, 0x00000000, ms(25)); !got.Equal(ms(20)) {
		t.Errorf("across the 32-bit wrap: placed at %v, want 20ms", got.Sub(t0))
	}
}
