package engine

import (
	"slices"
	"testing"
)

// ramp is n samples counting up from first.
func ramp(first, n int) []int16 {
	pcm := make([]int16, n)
	for i := range pcm {
		pcm[i] = int16(first + i)
	}
	return pcm
}

// A side is heard once the prebuffer is held, in order; when it runs dry
// the other side hears silence until the prebuffer is held again; past
// the bound the oldest audio goes, so the delay cannot grow.
func TestPCMRing(t *testing.T) {
	r := newPCMRing()
	frame := make([]int16, frameSamples)
	r.write(ramp(1, frameSamples))
	if r.read(frame); slices.ContainsFunc(frame, func(s int16) bool { return s != 0 }) {
		t.Fatal("a frame was heard before the prebuffer was held")
	}
	r.write(ramp(1+frameSamples, frameSamples))
	if r.read(frame); !slices.Equal(frame, ramp(1, frameSamples)) {
		t.Fatal("the first frame is not the first audio written")
	}
	if r.read(frame); !slices.Equal(frame, ramp(1+frameSamples, frameSamples)) {
		t.Fatal("the second frame is not the next audio")
	}
	if r.read(frame); frame[0] != 0 {
		t.Fatal("a dry ring was heard")
	}
	r.write(ramp(1, frameSamples))
	if r.read(frame); frame[0] != 0 {
		t.Fatal("after running dry, a frame was heard before the prebuffer was held again")
	}
	r.reset()
	r.write(ramp(0, bridgeBuffer+frameSamples))
	if r.read(frame); frame[0] != frameSamples {
		t.Fatalf("past the bound, the first frame starts at %d, want the oldest dropped (%d)", frame[0], frameSamples)
	}
}
