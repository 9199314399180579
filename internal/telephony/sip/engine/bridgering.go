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
// 20 ms. It is bounded and never allocates once made.
type pcmRing struct {
	mu         sync.Mutex
	buf        []int16
	head, size int
	// primed: the prebuffer was reached and frames are taken.
	primed bool
}

func newPCMRing() *pcmRing { return &pcmRing{buf: make([]int16, bridgeBuffer)} }

// write appends pcm, dropping the oldest audio past the bound.
func (r *pcmRing) write(pcm []int16) {
	r.mu.Lock()
	defer r.mu.Unlock()
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
// frame (or not yet the prebuffer again, after it ran dry); it reports
// whether frame holds audio.
func (r *pcmRing) read(frame []int16) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.primed && r.size >= bridgePrebuffer {
		r.primed = true
	}
	if !r.primed || r.size < len(frame) {
		r.primed = false
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
	r.head, r.size, r.primed = 0, 0, false
}
