package engine

import "sync"

const (
	// bridgeBuffer bounds the audio one side of a bridge holds for the
	// other (400 ms): past it the oldest is dropped, so that a side whose
	// clock runs fast cannot grow the delay.
	bridgeBuffer = 20 * frameSamples
	// bridgePrebuffer is what must be held before a side starts to be
	// heard (and again after it ran dry): one frame of jitter absorbed.
	bridgePrebuffer = 2 * frameSamples
)

// pcmRing carries one direction of a bridge: the reader of one leg
// writes what it decoded, the writer of the other leg takes a frame each
// 20 ms. It is bounded, never allocates once made, and counts the gaps:
// frames that went out as silence while audio was due (the source ran
// dry and then went on; a source that stopped for good is no gap).
type pcmRing struct {
	mu         sync.Mutex
	buf        []int16
	head, size int
	primed     bool
	// starved counts the frames played dry since the source ran dry;
	// they become gaps once it sends again.
	starved int
	gaps    int64
}

func newPCMRing() *pcmRing { return &pcmRing{buf: make([]int16, bridgeBuffer)} }

// write appends pcm, dropping the oldest audio past the bound.
func (r *pcmRing) write(pcm []int16) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.starved > 0 {
		r.gaps += int64(r.starved)
		r.starved = 0
	}
	for _, s := range pcm {
		if r.size == len(r.buf) {
			r.head = (r.head + 1) % len(r.buf)
			r.size--
		}
		r.buf[(r.head+r.size)%len(r.buf)] = s
		r.size++
	}
}

// read fills frame with the next audio, silence when there is not a full
// frame (or not yet the prebuffer); it reports whether frame holds audio.
func (r *pcmRing) read(frame []int16) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.primed && r.size >= bridgePrebuffer {
		r.primed = true
	}
	if !r.primed || r.size < len(frame) {
		if r.primed {
			r.primed = false
			r.starved++
		} else if r.starved > 0 {
			r.starved++
		}
		clear(frame)
		return false
	}
	for i := range frame {
		frame[i] = r.buf[r.head]
		r.head = (r.head + 1) % len(r.buf)
	}
	r.size -= len(frame)
	return true
}

// reset forgets what is held (the start of a bridge: what came before is
// not for the other side).
func (r *pcmRing) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.head, r.size, r.primed, r.starved = 0, 0, false, 0
}

// gapFrames is how many gaps there were.
func (r *pcmRing) gapFrames() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gaps
}
