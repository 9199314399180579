package engine

import (
	"testing"
	"time"
)

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
