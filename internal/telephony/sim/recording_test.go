package sim

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"math"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/telephony"
)

func TestRecordingWAV(t *testing.T) {
	tests := []struct {
		name     string
		p        telephony.Progress
		wantSecs int
	}{
		{"answered", endedProgress(t, "+15551230000"), 4},
		// The machine's greeting comes before the agent's message.
		{"voicemail", endedProgress(t, "+15551230003"), 2},
		{"capped", telephony.Progress{Phase: telephony.Ended, Disposition: telephony.Answered, Duration: time.Hour}, 600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wav := record(t, tt.p)
			if want := 44 + 2*8000*tt.wantSecs; len(wav) != want {
				t.Fatalf("len = %d, want %d", len(wav), want)
			}
			checkHeader(t, wav)
			checkAudible(t, wav[44:], tt.p)
		})
	}
}

// A bounded carrier's recordings stop at the bound, header included, and
// still play.
func TestRecordingBounded(t *testing.T) {
	c := New(DefaultTimings())
	c.LimitRecordings(44 + 2*8000 + 1) // a second and a byte
	p := endedProgress(t, "+15551230000")
	rc, err := c.Recording(context.Background(), req("+15551230000"), p)
	if err != nil {
		t.Fatal(err)
	}
	wav, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	if want := 44 + 2*8000; len(wav) != want {
		t.Fatalf("len = %d, want %d (one second)", len(wav), want)
	}
	checkHeader(t, wav)
}

func record(t *testing.T, p telephony.Progress) []byte {
	t.Helper()
	rc, err := New(DefaultTimings()).Recording(context.Background(), req("+15551230000"), p)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func checkHeader(t *testing.T, wav []byte) {
	t.Helper()
	le := binary.LittleEndian
	u32 := func(at int) int { return int(le.Uint32(wav[at:])) }
	u16 := func(at int) int { return int(le.Uint16(wav[at:])) }
	tags := map[int]string{0: "RIFF", 8: "WAVE", 12: "fmt ", 36: "data"}
	for at, tag := range tags {
		if got := string(wav[at : at+4]); got != tag {
			t.Errorf("tag at %d = %q, want %q", at, got, tag)
		}
	}
	fields := []struct {
		name      string
		got, want int
	}{
		{"RIFF size", u32(4), len(wav) - 8},
		{"fmt size", u32(16), 16},
		{"format", u16(20), 1},
		{"channels", u16(22), 1},
		{"sample rate", u32(24), 8000},
		{"byte rate", u32(28), 16000},
		{"block align", u16(32), 2},
		{"bits", u16(34), 16},
		{"data size", u32(40), len(wav) - 44},
	}
	for _, f := range fields {
		if f.got != f.want {
			t.Errorf("%s = %d, want %d", f.name, f.got, f.want)
		}
	}
}

// checkAudible requires each turn of the transcript to be a loud tone of
// its speaker's pitch at its offsets, and silence between turns.
func checkAudible(t *testing.T, data []byte, p telephony.Progress) {
	t.Helper()
	pcm := make([]int16, len(data)/2)
	for i := range pcm {
		pcm[i] = int16(binary.LittleEndian.Uint16(data[2*i:]))
	}
	turns, err := New(DefaultTimings()).Transcript(context.Background(), req("+15551230000"), p)
	if err != nil {
		t.Fatal(err)
	}
	silentFrom := 0
	for i, turn := range turns {
		from, to := samples(turn.Start), samples(turn.End)
		if gap := peak(pcm[silentFrom:from]); gap != 0 {
			t.Fatalf("before turn %d: peak %d, want silence", i, gap)
		}
		speech := pcm[from:to]
		if p := peak(speech); p < 5000 {
			t.Fatalf("turn %d: peak %d, want audible", i, p)
		}
		pitch := agentHz
		if turn.Speaker == "callee" {
			pitch = calleeHz
		}
		// A sine of f Hz crosses zero 2f times a second.
		want := pitch * 2 * (turn.End - turn.Start).Seconds()
		if got := crossings(speech); math.Abs(float64(got)-want) > 4 {
			t.Errorf("turn %d (%s): %d zero crossings, want about %.0f", i, turn.Speaker, got, want)
		}
		silentFrom = to
	}
	if gap := peak(pcm[silentFrom:]); gap != 0 {
		t.Fatalf("after the last turn: peak %d, want silence", gap)
	}
}

func peak(pcm []int16) int16 {
	var p int16
	for _, v := range pcm {
		p = max(p, v, -v)
	}
	return p
}

func crossings(pcm []int16) int {
	n := 0
	for i := 1; i < len(pcm); i++ {
		if (pcm[i-1] < 0) != (pcm[i] < 0) {
			n++
		}
	}
	return n
}

func TestRecordingDeterministic(t *testing.T) {
	p := endedProgress(t, "+15551230000")
	if !bytes.Equal(record(t, p), record(t, p)) {
		t.Error("two recordings of the same call differ")
	}
}
