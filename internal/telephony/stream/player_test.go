package stream

import (
	"testing"
	"time"
)

func frames(n int) []byte { return ulaw(tone(n*frameSamples, 1000)) }

// audible reports whether next played audio.
func audible(p *player) bool {
	pcm := make([]int16, frameSamples)
	p.next(pcm)
	for _, v := range pcm {
		if v != 0 {
			return true
		}
	}
	return false
}

func TestJitterBufferWaitsForItsTarget(t *testing.T) {
	p := newPlayer(time.Second, 40*time.Millisecond)
	p.enqueue(frames(1))
	if audible(p) {
		t.Error("20 ms played at once; want the 40 ms prebuffer to fill first")
	}
	if !audible(p) {
		t.Error("a lone 20 ms frame did not play once it had waited 40 ms")
	}
	p.enqueue(frames(3))
	for i := range 3 {
		if !audible(p) && i > 0 {
			t.Errorf("frame %d of a 60 ms burst did not play", i)
		}
	}
}

// drain plays until the queue ran dry.
func drain(p *player) {
	pcm := make([]int16, frameSamples)
	for p.queued > 0 {
		p.next(pcm)
	}
}

// Audio that comes back right after the queue ran dry was late: the
// target grows; a pause longer than maxJitter is a new utterance.
func TestJitterBufferAdapts(t *testing.T) {
	p := newPlayer(30*time.Second, 40*time.Millisecond)
	p.enqueue(frames(2))
	drain(p)
	audible(p)
	p.enqueue(frames(1)) // late by one tick
	if p.target != bytesOf(60*time.Millisecond) || p.underruns != 1 {
		t.Errorf("after a late frame: target %d bytes, underruns %d; want 60 ms, 1", p.target, p.underruns)
	}
	drain(p)
	for range int(maxJitter/frameTime) + 1 {
		audible(p)
	}
	p.enqueue(frames(1)) // after a pause: a new utterance
	if p.underruns != 1 {
		t.Errorf("a pause counted as an underrun")
	}
	for range int(maxTarget/frameTime) + 5 { // grows to the bound, no further
		drain(p)
		p.enqueue(frames(1))
	}
	if p.target != bytesOf(maxTarget) {
		t.Errorf("target %d bytes, want the bound %d", p.target, bytesOf(maxTarget))
	}
	// Steady playing shrinks it back.
	p.enqueue(frames(int(2 * shrinkAfter / frameTime)))
	drain(p)
	if p.target >= bytesOf(maxTarget) {
		t.Errorf("target %d bytes after 10 s of steady play; want it shrunk", p.target)
	}
}

func TestMarksAndClear(t *testing.T) {
	p := newPlayer(time.Second, 20*time.Millisecond)
	p.mark("first") // nothing before it: due at the next tick
	p.enqueue(frames(3))
	p.mark("after-audio")
	if due := p.next(make([]int16, frameSamples)); len(due) != 1 || due[0] != "first" {
		t.Errorf("due %v, want first", due)
	}
	if due := p.next(make([]int16, frameSamples)); len(due) != 0 {
		t.Errorf("due %v with audio left, want none", due)
	}
	p.enqueue(frames(10))
	p.mark("cleared")
	if due := p.clear(); len(due) != 2 || due[0] != "after-audio" || due[1] != "cleared" {
		t.Errorf("clear returned %v, want the pending marks", due)
	}
	if audible(p) {
		t.Error("audio played after clear")
	}
}

func TestNextFrameAllocatesNothing(t *testing.T) {
	p := newPlayer(time.Second, 20*time.Millisecond)
	pcm := make([]int16, frameSamples)
	audio := frames(1)
	if n := testing.AllocsPerRun(200, func() {
		p.enqueue(audio)
		p.next(pcm)
	}); n != 0 {
		t.Errorf("enqueue and next allocate %.1f times per frame; want 0", n)
	}
}
