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
// Jitter buffer: after running dry, playback starts again once target
// bytes are queued, or once the first queued audio waited as long as
// target is. target starts at the configured prebuffer (40 ms). When
// audio comes back within maxJitter of running dry, the bot was still
// talking and its audio came late: target grows by a frame (up to
// maxTarget), and shrinks by a frame after every shrinkAfter of playing
// without such an underrun. The end of an utterance (audio stops for
// longer) changes nothing.
type player struct {
	mu    sync.Mutex
	space *sync.Cond // signalled when audio played or was cleared, or at the end
	done  bool       // the session ended: waits give up

	ring   []byte
	head   int   // index of the oldest queued byte
	queued int   // bytes queued
	played int64 // bytes played or cleared since the start
	// written counts every byte ever queued; a mark is due once played
	// reaches the written count it was sent at.
	written int64
	marks   []pendingMark

	filling   bool // waiting for the jitter buffer to fill
	fillTicks int
	base      int // bytes: the configured prebuffer
	target    int // bytes: the current prebuffer
	tick      int64
	dryAt     int64 // tick the queue last ran dry while playing; -1: not since
	steady    int   // ticks played since the last late underrun
	underruns int64 // late underruns (audio that came after its time)
	waits     int64 // times the reader waited for room
}

type pendingMark struct {
	name string
	at   int64
}

const (
	// maxMarks bounds the marks waiting for their audio to play.
	maxMarks = 1024
	// maxJitter: audio arriving within this of the queue running dry was
	// late, not a new utterance.
	maxJitter = 100 * time.Millisecond
	// maxTarget bounds the jitter buffer's growth.
	maxTarget = 200 * time.Millisecond
	// shrinkAfter of steady playing takes a frame off the target.
	shrinkAfter = 5 * time.Second
)

func bytesOf(d time.Duration) int { return int(d * sampleRate / time.Second) }

func newPlayer(maxQueued, prebuffer time.Duration) *player {
	p := &player{ring: make([]byte, max(frameSamples, bytesOf(maxQueued))), base: bytesOf(prebuffer),
		target: bytesOf(prebuffer), filling: true, dryAt: -1}
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

// enqueue adds the bot's audio, waiting for room while the ring is full
// (see Session's back-pressure policy).
func (p *player) enqueue(audio []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.filling && p.queued == 0 && p.dryAt >= 0 && time.Duration(p.tick-p.dryAt)*frameTime <= maxJitter {
		p.target = min(p.target+frameSamples, bytesOf(maxTarget))
		p.underruns++
		p.steady = 0
	}
	p.dryAt = -1
	for len(audio) > 0 {
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

// clear drops the queued audio and returns the marks now due (all).
func (p *player) clear() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.played += int64(p.queued)
	p.head, p.queued = 0, 0
	p.filling, p.fillTicks, p.dryAt = true, 0, -1
	p.space.Broadcast()
	return p.takeDueMarks()
}

// next fills pcm with the next 20 ms to play (silence while there is
// none or the jitter buffer fills) and returns the marks whose audio has
// now played.
func (p *player) next(pcm []int16) []string {
	clear(pcm)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tick++
	if p.filling && p.queued > 0 {
		p.fillTicks++
		if p.queued >= p.target || p.fillTicks*frameSamples >= p.target {
			p.filling = false
		}
	}
	if !p.filling {
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
	}
	if p.steady++; time.Duration(p.steady)*frameTime >= shrinkAfter {
		p.target, p.steady = max(p.base, p.target-frameSamples), 0
	}
	if p.queued == 0 {
		p.filling, p.fillTicks, p.dryAt = true, 0, p.tick
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
	return time.Duration(p.queued) * time.Second / sampleRate
}
