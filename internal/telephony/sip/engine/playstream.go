package engine

import (
	"context"
	"errors"
	"sync"
)

// streamBuffer bounds the speech a streamed playback holds ahead of the
// writer: one second. A voice that synthesizes faster than real time is
// held back (its write blocks) rather than queued without bound.
const streamBuffer = sampleRate

// errStreamStopped is what a streamed playback's producer gets once the
// playback was cut, or the line dropped it.
var errStreamStopped = errors.New("the playback was stopped")

// pcmStream is the audio of a playback that arrives while it plays: a
// ring of streamBuffer samples a producer (the voice) fills and the
// writer goroutine empties 20 ms at a time. The producer blocks while the
// ring is full (back-pressure); the writer never blocks: when less than a
// frame is there and the stream has not ended, it plays silence (an
// underrun) and takes the audio at the next frame. stop ends it from
// either side and unblocks the producer.
type pcmStream struct {
	mu     sync.Mutex
	buf    []int16
	r, n   int  // the first sample held, and how many are
	ended  bool // the producer is done: what is held is the rest
	began  bool // a frame (or the end) arrived: first is closed
	halted bool // stopped: stop is closed

	// space is signalled (without blocking) when the writer took samples.
	space chan struct{}
	// first is closed when a frame's samples, or the end, arrived.
	first chan struct{}
	// stop is closed when the playback is cut or dropped.
	stop   chan struct{}
	onStop func() // called once by halt (nil: nothing)
}

func newPCMStream(capacity int) *pcmStream {
	return &pcmStream{buf: make([]int16, capacity), space: make(chan struct{}, 1), first: make(chan struct{}),
		stop: make(chan struct{})}
}

// write appends pcm, waiting for room while the ring is full; it returns
// errStreamStopped once the stream was stopped, ctx's error when ctx ends.
// pcm is copied: the caller may reuse it.
func (s *pcmStream) write(ctx context.Context, pcm []int16) error {
	for {
		s.mu.Lock()
		if s.halted {
			s.mu.Unlock()
			return errStreamStopped
		}
		k := min(len(pcm), len(s.buf)-s.n)
		if k > 0 {
			at := (s.r + s.n) % len(s.buf)
			c := copy(s.buf[at:], pcm[:k])
			copy(s.buf, pcm[c:k])
			s.n += k
			if s.n >= frameSamples {
				s.arrived()
			}
		}
		s.mu.Unlock()
		pcm = pcm[k:]
		if len(pcm) == 0 {
			return nil
		}
		select {
		case <-s.space:
		case <-s.stop:
			return errStreamStopped
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// arrived closes first once; s.mu is held.
func (s *pcmStream) arrived() {
	if !s.began {
		s.began = true
		close(s.first)
	}
}

// end says the producer is done: the writer plays what is held, then ends
// the playback.
func (s *pcmStream) end() {
	s.mu.Lock()
	s.ended = true
	s.arrived()
	s.mu.Unlock()
}

// halt stops the stream: the producer's write returns errStreamStopped and
// the writer plays nothing more of it. Safe to call more than once.
func (s *pcmStream) halt() {
	s.mu.Lock()
	if s.halted {
		s.mu.Unlock()
		return
	}
	s.halted, s.ended = true, true
	s.arrived()
	close(s.stop)
	f := s.onStop
	s.mu.Unlock()
	if f != nil {
		f()
	}
}

// read fills frame with the next samples, on the writer's goroutine, with
// no allocation and no wait: a full frame when one is held, the rest of
// the stream when it ended (the remainder of frame left as it is). When
// less than a frame is held and more is to come it takes nothing and says
// underrun. drained is true once the stream ended and nothing is left.
func (s *pcmStream) read(frame []int16) (n int, underrun, drained bool) {
	s.mu.Lock()
	if s.halted {
		s.mu.Unlock()
		return 0, false, true
	}
	if s.n >= len(frame) || s.ended {
		n = min(len(frame), s.n)
		c := copy(frame[:n], s.buf[s.r:min(s.r+n, len(s.buf))])
		copy(frame[c:n], s.buf)
		s.r = (s.r + n) % len(s.buf)
		s.n -= n
	} else {
		underrun = true
	}
	drained = s.ended && s.n == 0
	s.mu.Unlock()
	if n > 0 {
		select {
		case s.space <- struct{}{}:
		default:
		}
	}
	return n, underrun, drained
}

// drainedEmpty reports whether the stream ended (or was stopped) with
// nothing left to play.
func (s *pcmStream) drainedEmpty() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.halted || (s.ended && s.n == 0)
}
