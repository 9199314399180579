package stream

import (
	"sync"
	"time"

	"github.com/zaf/g711"
)

// player is the bot's side of the call's audio: a bounded ring of mu-law
// bytes waiting to play, an adaptive jitter buffer in front of it, and
// the marks waiting for their audio. The session's reader fills it; the
// call's writer empties it every 20 ms.
//
// Time is the playout clock, in samples: each tick (next) is 20 ms of it,
// and audio arriving between ticks is stamped with the last tick's clock
// plus the time since, at most the next tick's. A writer that runs late
// therefore delays the clock with it, which is what audio is late against.
//
// Jitter buffer, in the manner of the classic adaptive playout algorithms
// (Ramjee et al., "Adaptive playout mechanisms for packetized audio
// applications", 1994; the jitter estimator of RFC 3550 section 6.4.1):
//   - A talk spurt is the bot's audio from when it starts after a silence
//     until the queue runs dry. Its first audio waits the playout delay
//     (target) before the first tick plays it: the spurt's audio arriving
//     up to target after its place on the spurt's schedule (first arrival
//     plus the audio before it) plays on time.
//   - The delay changes only at the start of a spurt, never in the middle
//     of one: no silence is inserted to grow the buffer mid-speech.
//   - Each arrival's lateness against its spurt's schedule feeds a
//     smoothed jitter estimate (J += (|ΔL| - J)/16, as RFC 3550 does with
//     transit times) and a peak, held for peakHold of playing and then
//     decaying. The next spurt's delay is max(k·J, peak), bounded by
//     [base, maxTarget].
//   - When a tick finds no audio in the middle of a spurt, silence plays
//     (an underrun). Audio coming back within maxLate was late: it is
//     counted, plays at once (the delay it cost is already spent) and
//     teaches the estimate. Audio after a longer silence starts a new
//     spurt.
//
// A bot sending ahead of real time is never late (its lateness is 0), so
// only bots that pace their audio in real time grow the delay.
type player struct {
	mu    sync.Mutex
	space *sync.Cond // signalled when audio played or was cleared, or at the end
	done  bool       // the session ended: waits give up

	ring   []byte // grows on demand, doubling, up to limit
	limit  int    // bytes: the most audio that may wait
	head   int    // index of the oldest queued byte
	queued int    // bytes queued
	played int64  // bytes played or cleared since the start
	// written counts every byte ever queued; a mark is due once played
	// reaches the written count it was sent at.
	written int64
	marks   []pendingMark

	clock  int64     // the playout clock at the last tick, in samples
	tickAt time.Time // when the last tick ran (zero before the first)

	state      playState
	spurtStart int64 // clock of the spurt's first audio
	spurtPos   int64 // samples of the spurt received so far
	dryAt      int64 // clock of the tick that found no audio while playing

	base, target int64 // samples: the least and the next spurt's playout delay
	jitter16     int64 // RFC 3550 jitter estimate, in samples, ×16
	lastLate     int64 // the previous arrival's lateness, in samples
	peak         int64 // the highest recent lateness, in samples
	peakAge      int64 // ticks played since the peak was reached

	underruns int64 // ticks that found no audio in the middle of a spurt
	waits     int64 // times the reader waited for room
}

type playState uint8

const (
	idle      playState = iota // no audio since the last spurt ended
	buffering                  // a spurt's first audio waits its playout delay
	playing                    // a tick plays every 20 ms of the spurt
)

type pendingMark struct {
	name string
	at   int64
}

const (
	// maxMarks bounds the marks waiting for their audio to play.
	maxMarks = 1024
	// initialRing is the ring's first size: a bot speaking in real time
	// keeps a few frames queued, so most calls never grow it.
	initialRing = time.Second
	// maxLate: audio coming back within this of the queue running dry
	// mid-spurt was late; after a longer silence it starts a new spurt.
	maxLate = 200 * time.Millisecond
	// maxTarget bounds the playout delay: beyond it, the delay would cost
	// the conversation more than the gaps.
	maxTarget = 120 * time.Millisecond
	// jitterK is how many mean deviations of lateness the delay covers.
	jitterK = 4
	// peakHold: a peak of lateness is expected again for this long of
	// playing; then it loses 1/peakDecay per tick played (about 5 s to
	// lose two thirds of it).
	peakHold  = 10 * time.Second
	peakDecay = 256
)

func bytesOf(d time.Duration) int { return int(d * sampleRate / time.Second) }

func samplesOf(d time.Duration) int64 { return int64(d) * sampleRate / int64(time.Second) }

func durationOf(samples int64) time.Duration {
	return time.Duration(samples) * time.Second / sampleRate
}

func newPlayer(maxQueued, prebuffer time.Duration) *player {
	limit := max(frameSamples, bytesOf(maxQueued))
	p := &player{ring: make([]byte, min(limit, bytesOf(initialRing))), limit: limit,
		base: samplesOf(prebuffer), target: samplesOf(prebuffer)}
	p.space = sync.NewCond(&p.mu)
	return p
}

// stop makes waits give up: the session ended.
func (p *player) stop() {
	p.mu.Lock()
	p.done = true
	p.space.Broadcast()
	p.mu.Unlock()
}

// enqueue adds the bot's audio, which arrived at now, waiting for room
// while the ring is full (see Session's back-pressure policy).
func (p *player) enqueue(audio []byte, now time.Time) {
	if len(audio) == 0 {
		return // an empty media message is no speech: it starts no spurt
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.arrive(p.stamp(now), int64(len(audio)))
	for len(audio) > 0 {
		if p.queued == len(p.ring) && len(p.ring) < p.limit {
			p.grow()
		}
		for p.queued == len(p.ring) && !p.done {
			p.waits++
			p.space.Wait()
		}
		if p.done {
			return
		}
		tail := (p.head + p.queued) % len(p.ring)
		n := copy(p.ring[tail:min(len(p.ring), tail+len(p.ring)-p.queued)], audio)
		p.queued += n
		p.written += int64(n)
		audio = audio[n:]
	}
}

// grow doubles the full ring, up to limit; p.mu is held.
func (p *player) grow() {
	ring := make([]byte, min(2*len(p.ring), p.limit))
	n := copy(ring, p.ring[p.head:])
	copy(ring[n:], p.ring[:p.head])
	p.ring, p.head = ring, 0
}

// stamp is now on the playout clock; p.mu is held.
func (p *player) stamp(now time.Time) int64 {
	if p.tickAt.IsZero() {
		return p.clock
	}
	return p.clock + min(frameSamples, max(0, samplesOf(now.Sub(p.tickAt))))
}

// arrive places n samples arriving at clock at in their spurt; p.mu is
// held.
func (p *player) arrive(at, n int64) {
	switch {
	case p.state == idle, p.state == playing && p.dryAt >= 0 && at-p.dryAt > samplesOf(maxLate):
		p.state, p.spurtStart, p.spurtPos, p.lastLate, p.dryAt = buffering, at, 0, 0, -1
	case p.state == playing && p.dryAt >= 0:
		p.underruns++ // late: it plays at the next tick
		p.dryAt = -1
		p.learn(at)
	default:
		p.learn(at)
	}
	p.spurtPos += n
}

// learn updates the jitter estimate with the lateness of audio arriving
// at clock at, and sets the next spurt's playout delay; p.mu is held.
func (p *player) learn(at int64) {
	late := max(0, at-(p.spurtStart+p.spurtPos))
	d := late - p.lastLate
	if d < 0 {
		d = -d
	}
	p.jitter16 += d - p.jitter16/16 // RFC 3550: J += (|D| - J)/16, kept ×16
	p.lastLate = late
	if late >= p.peak {
		p.peak, p.peakAge = late, 0
	}
	p.setTarget()
}

func (p *player) setTarget() {
	p.target = min(max(p.base, jitterK*p.jitter16/16, p.peak), samplesOf(maxTarget))
}

// mark queues a mark after the audio queued so far.
func (p *player) mark(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.marks) >= maxMarks && !p.done {
		p.waits++
		p.space.Wait()
	}
	p.marks = append(p.marks, pendingMark{name: name, at: p.written})
}

// clear drops the queued audio and returns the marks now due (all). The
// bot's next audio starts a new spurt.
func (p *player) clear() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.played += int64(p.queued)
	p.head, p.queued = 0, 0
	p.state = idle
	p.space.Broadcast()
	return p.takeDueMarks()
}

// next fills pcm with the next 20 ms to play at now (silence while there
// is none or the spurt's first audio waits its playout delay) and returns
// the marks whose audio has now played.
func (p *player) next(pcm []int16, now time.Time) []string {
	clear(pcm)
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.tickAt.IsZero() {
		p.clock += frameSamples
	}
	p.tickAt = now
	if p.state == buffering && p.clock >= p.spurtStart+p.target {
		p.state, p.dryAt = playing, -1
	}
	if p.state == playing {
		p.play(pcm)
	}
	return p.takeDueMarks()
}

// play takes up to a frame from the ring; p.mu is held.
func (p *player) play(pcm []int16) {
	n := min(len(pcm), p.queued)
	for i := range n {
		pcm[i] = g711.DecodeUlawFrame(p.ring[(p.head+i)%len(p.ring)])
	}
	p.head = (p.head + n) % len(p.ring)
	p.queued -= n
	p.played += int64(n)
	if n > 0 {
		p.space.Broadcast()
		p.decayPeak()
	}
	switch {
	case n < len(pcm) && p.dryAt < 0:
		p.dryAt = p.clock // ran dry: late audio, or the spurt's end
	case n < len(pcm) && p.clock-p.dryAt > samplesOf(maxLate):
		p.state = idle // the spurt ended: its next audio starts a new one
	}
}

// decayPeak ages the peak by a tick of playing; p.mu is held.
func (p *player) decayPeak() {
	if p.peakAge++; p.peakAge*frameSamples > samplesOf(peakHold) {
		p.peak -= (p.peak + peakDecay - 1) / peakDecay
		p.setTarget()
	}
}

// takeDueMarks removes and returns the marks whose audio has played
// (nil, without allocating, when none is due); p.mu is held.
func (p *player) takeDueMarks() []string {
	if len(p.marks) == 0 || p.marks[0].at > p.played {
		return nil
	}
	var due []string
	i := 0
	for ; i < len(p.marks) && p.marks[i].at <= p.played; i++ {
		due = append(due, p.marks[i].name)
	}
	p.marks = append(p.marks[:0], p.marks[i:]...)
	p.space.Broadcast()
	return due
}

// queuedTime is the audio waiting to play.
func (p *player) queuedTime() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return durationOf(int64(p.queued))
}
