package stream

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"
)

func frames(n int) []byte { return ulaw(tone(n*frameSamples, 1000)) }

// t0 is the scripted tests' clock origin.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// audible reports whether the next tick (at now) played audio.
func audible(p *player, now time.Time) bool {
	pcm := make([]int16, frameSamples)
	p.next(pcm, now)
	for _, v := range pcm {
		if v != 0 {
			return true
		}
	}
	return false
}

// arrival is the bot's audio arriving at a moment of a script.
type arrival struct {
	at     time.Duration
	frames int
}

// script runs arrivals against a writer ticking every 20 ms from from to
// end (an arrival at a tick's instant comes first) and returns, per
// tick, whether it played audio.
func script(p *player, arrivals []arrival, from, end time.Duration) []bool {
	var heard []bool
	i := 0
	for at := from; at < end; at += frameTime {
		for ; i < len(arrivals) && arrivals[i].at <= at; i++ {
			p.enqueue(frames(arrivals[i].frames), t0.Add(arrivals[i].at))
		}
		heard = append(heard, audible(p, t0.Add(at)))
	}
	return heard
}

// speech is n frames of the bot's real-time speech from start, frame i
// sent late by late(i) and arriving in order (a WebSocket is a stream).
func speech(start time.Duration, n int, late func(i int) time.Duration) []arrival {
	a := make([]arrival, n)
	for i := range a {
		a[i] = arrival{at: start + time.Duration(i)*frameTime + late(i), frames: 1}
		if i > 0 {
			a[i].at = max(a[i].at, a[i-1].at)
		}
	}
	return a
}

// gaps counts the silent ticks between the first and the last audible
// one of heard[from:to] (one utterance).
func gaps(heard []bool, from, to time.Duration) int {
	h := heard[from/frameTime : to/frameTime]
	first, last := -1, -1
	for i, on := range h {
		if on {
			last = i
			if first < 0 {
				first = i
			}
		}
	}
	n := 0
	for i := first; first >= 0 && i <= last; i++ {
		if !h[i] {
			n++
		}
	}
	return n
}

// The bot's real-time speech with pseudo-random jitter up to 25 ms, then
// in bursts of three frames, plays without a gap at the least delay.
func TestJitterWithinTheDelayPlaysWithoutGaps(t *testing.T) {
	p := newPlayer(30*time.Second, 30*time.Millisecond)
	rng := rand.New(rand.NewPCG(1, 2))
	jittered := speech(0, 100, func(int) time.Duration { return time.Duration(rng.IntN(26)) * time.Millisecond })
	bursty := speech(3*time.Second, 99, func(i int) time.Duration { return time.Duration(2-i%3) * frameTime })
	heard := script(p, append(jittered, bursty...), 0, 6*time.Second)
	if n := gaps(heard, 0, 3*time.Second) + gaps(heard, 3*time.Second, 6*time.Second); n != 0 || p.underruns != 0 {
		t.Errorf("%d silent ticks mid-speech, %d underruns; want none", n, p.underruns)
	}
	if p.target > samplesOf(50*time.Millisecond) {
		t.Errorf("playout delay %v after jitter of at most 25 ms; want at most 50 ms", durationOf(p.target))
	}
	// An utterance waits the delay from its first audio, no more: the
	// first tick 30 ms or more after it.
	if first, want := firstAudible(heard, 3*time.Second), 3*time.Second+40*time.Millisecond+durationOf(p.target); first < want || first >= want+frameTime {
		t.Errorf("a burst at 3.04 s first played at %v; want the first tick from %v", first, want)
	}
}

func firstAudible(heard []bool, from time.Duration) time.Duration {
	for i := int(from / frameTime); i < len(heard); i++ {
		if heard[i] {
			return time.Duration(i) * frameTime
		}
	}
	return -1
}

// A burst held back 80 ms mid-speech is an underrun, counted; the late
// audio plays at once (no delay added mid-speech), and the next
// utterance waits long enough for the same to pass without a gap.
func TestLateBurstIsCountedAndLearned(t *testing.T) {
	p := newPlayer(30*time.Second, 30*time.Millisecond)
	lateBurst := func(i int) time.Duration { // frames 50-53 come with frame 54
		if i >= 50 && i < 54 {
			return time.Duration(54-i) * frameTime
		}
		return 0
	}
	heard := script(p, append(speech(0, 100, lateBurst), speech(3*time.Second, 100, lateBurst)...), 0, 6*time.Second)
	if n := gaps(heard, 0, 3*time.Second); p.underruns != 1 || n == 0 || n > 3 {
		t.Errorf("first utterance: %d underruns, %d silent ticks; want 1 underrun of at most 3 ticks (80 ms late, 30 ms buffered)", p.underruns, n)
	}
	if p.target < samplesOf(80*time.Millisecond) {
		t.Errorf("playout delay %v after audio 80 ms late; want at least 80 ms", durationOf(p.target))
	}
	if n := gaps(heard, 3*time.Second, 6*time.Second); n != 0 || p.underruns != 1 {
		t.Errorf("second utterance: %d silent ticks, %d underruns in all; want no gap", n, p.underruns)
	}
	// The delay held through the second utterance's late burst, and comes
	// back down after a long steady play.
	p.enqueue(frames(int(2*peakHold/frameTime)), t0.Add(6*time.Second))
	script(p, nil, 6*time.Second, 6*time.Second+2*peakHold+time.Second)
	if p.target >= samplesOf(80*time.Millisecond) {
		t.Errorf("playout delay %v after %v of steady play; want it lower", durationOf(p.target), 2*peakHold)
	}
}

// Audio later than the bound on the delay is an underrun every time.
func TestLatenessBeyondTheBoundUnderruns(t *testing.T) {
	p := newPlayer(30*time.Second, 30*time.Millisecond)
	var a []arrival
	for u := range 3 {
		a = append(a, speech(time.Duration(u)*3*time.Second, 100, func(i int) time.Duration {
			if i >= 50 && i < 58 { // frames 50-57 come with frame 58: 160 ms late
				return time.Duration(58-i) * frameTime
			}
			return 0
		})...)
	}
	script(p, a, 0, 9*time.Second)
	if p.underruns != 3 {
		t.Errorf("%d underruns; want one per utterance", p.underruns)
	}
	if p.target != samplesOf(maxTarget) {
		t.Errorf("playout delay %v; want the bound, %v", durationOf(p.target), maxTarget)
	}
}

// A bot sending ahead of real time is never late; a pause longer than
// maxLate starts a new utterance, not an underrun.
func TestAheadAndPausesAreNotLate(t *testing.T) {
	p := newPlayer(30*time.Second, 30*time.Millisecond)
	heard := script(p, []arrival{{0, 50}, {1500 * time.Millisecond, 50}, {3 * time.Second, 1}}, 0, 4*time.Second)
	if p.underruns != 0 || p.target != p.base {
		t.Errorf("%d underruns, delay %v; want none, the least", p.underruns, durationOf(p.target))
	}
	if n := gaps(heard, 0, 1500*time.Millisecond); n != 0 {
		t.Errorf("%d silent ticks in audio sent ahead", n)
	}
}

// The ring starts small and grows with the audio waiting, keeping it in
// order (TestTooFastAudioIsBounded holds it to its bound).
func TestRingGrowsOnDemand(t *testing.T) {
	p := newPlayer(3*time.Second, 30*time.Millisecond)
	if len(p.ring) != bytesOf(initialRing) {
		t.Fatalf("ring of %d bytes at the start, want %d", len(p.ring), bytesOf(initialRing))
	}
	audio := ulaw(tone(2*sampleRate, 300))
	p.enqueue(audio[:sampleRate/2], t0) // the ring's head moves before it grows
	pcm := make([]int16, frameSamples)
	var played []byte
	for i := range 10 {
		p.next(pcm, t0.Add(time.Duration(i)*frameTime))
		played = append(played, ulaw(pcm)...)
	}
	p.enqueue(audio[sampleRate/2:], t0.Add(200*time.Millisecond))
	if len(p.ring) != 2*bytesOf(initialRing) || p.queued != len(audio)-int(p.played) {
		t.Errorf("ring %d bytes, %d queued; want it doubled once, holding all of the rest", len(p.ring), p.queued)
	}
	for i := range 100 {
		p.next(pcm, t0.Add(200*time.Millisecond+time.Duration(i)*frameTime))
		played = append(played, ulaw(pcm)...)
	}
	if i := bytes.Index(played, audio[:frameSamples]); i < 0 || !bytes.Equal(played[i:i+len(audio)], audio) {
		t.Error("the audio did not play in order across the ring's growth")
	}
}

func TestMarksAndClear(t *testing.T) {
	p := newPlayer(time.Second, 20*time.Millisecond)
	p.mark("first") // nothing before it: due at the next tick
	p.enqueue(frames(3), t0)
	p.mark("after-audio")
	if due := p.next(make([]int16, frameSamples), t0); len(due) != 1 || due[0] != "first" {
		t.Errorf("due %v, want first", due)
	}
	for i := range 2 {
		if due := p.next(make([]int16, frameSamples), t0.Add(time.Duration(i+1)*frameTime)); len(due) != 0 {
			t.Errorf("due %v with audio left, want none", due)
		}
	}
	p.enqueue(frames(10), t0.Add(80*time.Millisecond))
	p.mark("cleared")
	if due := p.clear(); len(due) != 2 || due[0] != "after-audio" || due[1] != "cleared" {
		t.Errorf("clear returned %v, want the pending marks", due)
	}
	if audible(p, t0.Add(100*time.Millisecond)) {
		t.Error("audio played after clear")
	}
}

func TestNextFrameAllocatesNothing(t *testing.T) {
	p := newPlayer(time.Second, 20*time.Millisecond)
	pcm := make([]int16, frameSamples)
	audio := frames(1)
	now := t0
	if n := testing.AllocsPerRun(200, func() {
		now = now.Add(frameTime)
		p.enqueue(audio, now)
		p.next(pcm, now)
	}); n != 0 {
		t.Errorf("enqueue and next allocate %.1f times per frame; want 0", n)
	}
}
