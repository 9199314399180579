package audio

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"time"
)

// Recorder writes both directions of a call, on one timeline starting at
// the answer, to a stereo WAV file as the call goes: it keeps only the
// last seconds in memory, so that late packets still land in place. A
// recording cut off by a crash has the header of an empty file; Repair
// completes it. A recording bounded by Limit stops at its bound: the
// call goes on, unrecorded from there.
type Recorder struct {
	mu    sync.Mutex
	start time.Time
	f     *os.File // nil: record nothing
	w     *bufio.Writer
	// base is the number of samples per channel already written; left and
	// right hold the samples from base on.
	base        int
	left, right []int16
	err         error // the first write error
	// maxSamples bounds the samples per channel written (0: no bound);
	// full says the bound was reached.
	maxSamples int
	full       bool
}

// Recording channels: the agent on the left, the callee on the right.
const (
	AgentChannel = iota
	CalleeChannel

	recordingChannels
)

// frameSamples is one 20 ms RTP packet of audio.
const frameSamples = SampleRate / 50

// flushAfter is how much audio a channel buffers before the recorder writes
// all but the last second of it.
const flushAfter = 3 * SampleRate

// NewRecorder creates the WAV file at path; an empty path records nothing.
// Call Begin before the first Add.
func NewRecorder(path string) (*Recorder, error) {
	r := &Recorder{}
	if path == "" {
		return r, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("recording: %w", err)
	}
	r.f, r.w = f, bufio.NewWriterSize(f, 32<<10)
	if _, err := r.w.Write(Header(recordingChannels, 0)); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("recording: %w", err)
	}
	return r, nil
}

// Limit bounds the recording's file, its header included, to maxBytes
// (0: no bound): once the audio reaches it, the recorder writes no more
// and Full says so. Call it before the first Add.
func (r *Recorder) Limit(maxBytes int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if maxBytes <= 0 {
		r.maxSamples = 0
		return
	}
	frame := int64(recordingChannels * bytesPerSample)
	r.maxSamples = int(max(maxBytes-HeaderSize, 0) / frame)
	r.full = r.maxSamples == 0
}

// Full says the recording reached its Limit: what came after is not in it.
func (r *Recorder) Full() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.full
}

// Begin sets when the recording starts: the call's answer.
func (r *Recorder) Begin(at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.start = at
}

// Add puts pcm, which started playing at t, on a channel. A frame later
// than the channel's end by more than two frames is preceded by silence;
// frames never overlap.
func (r *Recorder) Add(channel int, pcm []int16, t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.full {
		return // at its bound: nothing more is kept, in memory or on disk
	}
	buf := &r.left
	if channel == CalleeChannel {
		buf = &r.right
	}
	pos := int(t.Sub(r.start)*SampleRate/time.Second) - r.base
	if gap := pos - len(*buf); gap > 2*frameSamples {
		*buf = append(*buf, make([]int16, gap)...)
	}
	*buf = append(*buf, pcm...)
	if len(*buf) > flushAfter {
		r.flushLocked(len(*buf) - SampleRate)
	}
}

// flushLocked writes the first n samples of both channels, padding the
// shorter one with silence, up to the Limit.
func (r *Recorder) flushLocked(n int) {
	if r.maxSamples > 0 && r.base+n >= r.maxSamples {
		n = r.maxSamples - r.base
		r.full = true
	}
	for _, buf := range []*[]int16{&r.left, &r.right} {
		if len(*buf) < n {
			*buf = append(*buf, make([]int16, n-len(*buf))...)
		}
	}
	if r.w != nil && r.err == nil {
		var frame [4]byte
		for i := range n {
			binary.LittleEndian.PutUint16(frame[0:], uint16(r.left[i]))  //nolint:gosec // intended reinterpretation
			binary.LittleEndian.PutUint16(frame[2:], uint16(r.right[i])) //nolint:gosec // intended reinterpretation
			if _, err := r.w.Write(frame[:]); err != nil {
				r.err = err
				break
			}
		}
	}
	r.left = append(r.left[:0], r.left[n:]...)
	r.right = append(r.right[:0], r.right[n:]...)
	r.base += n
	if r.full {
		r.left, r.right = nil, nil
	}
}

// Close writes what is left and completes the WAV header.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.flushLocked(max(len(r.left), len(r.right)))
	if r.f == nil {
		return nil
	}
	err := r.err
	if err == nil {
		err = r.w.Flush()
	}
	if err == nil {
		_, err = r.f.WriteAt(Header(recordingChannels, r.base), 0)
	}
	err = errors.Join(err, r.f.Close())
	if err != nil {
		return fmt.Errorf("recording: %w", err)
	}
	return nil
}

// Discard closes and removes the file of a recording that never started.
func (r *Recorder) Discard() {
	if r.f != nil {
		_ = r.f.Close()
		_ = os.Remove(r.f.Name())
	}
}

// Repair fixes the sizes in the header of a recording whose Recorder was
// cut off (a crash, a restart) before Close rewrote them, so the audio
// written until then plays. A trailing partial frame is dropped.
func Repair(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	if size < HeaderSize {
		return errors.New("recording shorter than its header")
	}
	data := size - HeaderSize
	data -= data % (recordingChannels * bytesPerSample) // whole frames
	if data > math.MaxUint32-36 {
		return errors.New("recording too large for a WAV file")
	}
	if err := f.Truncate(HeaderSize + data); err != nil {
		return err
	}
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(36+data)) //nolint:gosec // bounded above
	if _, err := f.WriteAt(b[:], 4); err != nil {
		return err
	}
	binary.LittleEndian.PutUint32(b[:], uint32(data)) //nolint:gosec // bounded above
	_, err = f.WriteAt(b[:], 40)
	return err
}
