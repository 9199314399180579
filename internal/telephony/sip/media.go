package sip

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emiago/diago"
	"github.com/emiago/diago/media"
	"github.com/go-audio/wav"
	"github.com/zaf/g711"
)

const (
	sampleRate   = 8000
	frameSamples = sampleRate / 50 // 20 ms
	// silenceThreshold is the mean absolute amplitude under which a 20 ms
	// frame is silence (the answering-machine detector's value).
	silenceThreshold = 256
)

// converse runs the media of an answered call until someone hangs up:
// it plays the prompt, records both directions into rec (which it closes)
// and hangs up after the prompt and SilenceHangup of silence, at
// maxDuration, or when ctx ends.
func (e *Engine) converse(ctx context.Context, d *diago.DialogClientSession, prompt []int16, rec *recorder, maxDuration time.Duration, res *Result) error {
	var wprops diago.MediaProps
	w, err := d.AudioWriter(diago.WithAudioWriterMediaProps(&wprops))
	if err != nil {
		return errors.Join(fmt.Errorf("audio writer: %w", err), e.hangup(d, res, HangupByAgent), rec.close())
	}
	r, err := d.AudioReader()
	if err != nil {
		return errors.Join(fmt.Errorf("audio reader: %w", err), e.hangup(d, res, HangupByAgent), rec.close())
	}
	enc, err := encoder(wprops.Codec)
	if err != nil {
		return errors.Join(err, e.hangup(d, res, HangupByAgent), rec.close())
	}

	m := &callMedia{rec: rec, stop: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Go(func() { m.play(w, enc, prompt) })
	wg.Go(func() { m.listen(r, d.RTPPacketReader) })

	hangupBy, ctxErr := e.waitHangup(ctx, d, maxDuration, m, res.AnsweredAt)
	close(m.stop)
	var byeErr error
	if hangupBy == HangupByCallee {
		res.EndedAt, res.HangupBy = time.Now(), HangupByCallee
	} else if byeErr = e.hangup(d, res, hangupBy); byeErr != nil {
		byeErr = fmt.Errorf("bye: %w", byeErr)
	}
	// Closing the media unblocks the reader and the writer.
	closeErr := d.DialogMedia.Close()
	if closeErr != nil {
		closeErr = fmt.Errorf("close media: %w", closeErr)
	}
	wg.Wait()
	recErr := m.rec.close()
	return errors.Join(ctxErr, byeErr, recErr, closeErr)
}

// callMedia is the audio of one answered call.
type callMedia struct {
	rec  *recorder
	stop chan struct{}
	// promptDoneAt and lastVoiceAt are UnixNano times, 0 until then.
	promptDoneAt, lastVoiceAt atomic.Int64
}

// play sends the prompt, then silence, paced by the RTP writer's clock,
// until stop or until the media closes.
func (m *callMedia) play(w io.Writer, enc func([]int16) []byte, prompt []int16) {
	frame := make([]int16, frameSamples)
	for i := 0; ; i++ {
		select {
		case <-m.stop:
			return
		default:
		}
		start := i * frameSamples
		clear(frame)
		if start < len(prompt) {
			copy(frame, prompt[start:])
		} else if m.promptDoneAt.Load() == 0 {
			m.promptDoneAt.Store(time.Now().UnixNano())
		}
		now := time.Now()
		if _, err := w.Write(enc(frame)); err != nil {
			// The media closed (the call is over) or broke: either way
			// nothing more is played, and the silence rule may end the call.
			m.promptDoneAt.CompareAndSwap(0, time.Now().UnixNano())
			return
		}
		m.rec.add(agentChannel, frame, now)
	}
}

// listen records the callee's audio and notes when they last spoke, until
// the media closes.
func (m *callMedia) listen(r io.Reader, packets *media.RTPPacketReader) {
	buf := make([]byte, media.RTPBufSize)
	pcm := make([]int16, 0, frameSamples)
	for {
		n, err := r.Read(buf)
		if err != nil {
			return
		}
		if n == 0 {
			continue
		}
		pcm = decode(pcm[:0], packets.PacketHeader.PayloadType, buf[:n])
		if len(pcm) == 0 {
			continue // telephone-event, comfort noise...
		}
		now := time.Now()
		m.rec.add(calleeChannel, pcm, now.Add(-time.Duration(len(pcm))*time.Second/sampleRate))
		if loud(pcm) {
			m.lastVoiceAt.Store(now.UnixNano())
		}
	}
}

// waitHangup waits until the call must end and says who ends it; ctxErr is
// set when ctx ended it.
func (e *Engine) waitHangup(ctx context.Context, d *diago.DialogClientSession, maxDuration time.Duration, m *callMedia, answeredAt time.Time) (hangupBy string, ctxErr error) {
	var maxC <-chan time.Time
	if maxDuration > 0 {
		tm := time.NewTimer(maxDuration - time.Since(answeredAt))
		defer tm.Stop()
		maxC = tm.C
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-d.Context().Done():
			return HangupByCallee, nil
		case <-maxC:
			return HangupByMaxDuration, nil
		case <-ctx.Done():
			return HangupByAgent, ctx.Err()
		case <-tick.C:
			done := m.promptDoneAt.Load()
			if done == 0 {
				continue
			}
			quietSince := max(done, m.lastVoiceAt.Load())
			if time.Since(time.Unix(0, quietSince)) >= e.cfg.SilenceHangup {
				return HangupByAgent, nil
			}
		}
	}
}

// hangup sends BYE and records who hung up.
func (e *Engine) hangup(d *diago.DialogClientSession, res *Result, by string) error {
	res.EndedAt, res.HangupBy = time.Now(), by
	return e.bye(d)
}

// encoder returns the G.711 encoder of codec.
func encoder(codec media.Codec) (func([]int16) []byte, error) {
	var f func(int16) uint8
	switch codec.PayloadType {
	case media.CodecAudioUlaw.PayloadType:
		f = g711.EncodeUlawFrame
	case media.CodecAudioAlaw.PayloadType:
		f = g711.EncodeAlawFrame
	default:
		return nil, fmt.Errorf("negotiated codec %s: want PCMU or PCMA", codec.Name)
	}
	out := make([]byte, frameSamples)
	return func(pcm []int16) []byte {
		for i, s := range pcm {
			out[i] = f(s)
		}
		return out[:len(pcm)]
	}, nil
}

// decode appends the PCM of a G.711 payload of payload type pt to pcm; other
// payload types decode to nothing.
func decode(pcm []int16, pt uint8, payload []byte) []int16 {
	var f func(uint8) int16
	switch pt {
	case media.CodecAudioUlaw.PayloadType:
		f = g711.DecodeUlawFrame
	case media.CodecAudioAlaw.PayloadType:
		f = g711.DecodeAlawFrame
	default:
		return pcm
	}
	for _, b := range payload {
		pcm = append(pcm, f(b))
	}
	return pcm
}

// loud reports whether a frame is voice rather than silence.
func loud(pcm []int16) bool {
	var sum int
	for _, s := range pcm {
		sum += abs(int(s))
	}
	return sum >= silenceThreshold*len(pcm)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// recorder writes both directions of a call, on one timeline starting at
// the answer, to a stereo WAV file as the call goes: it keeps only the
// last seconds in memory, so that late packets still land in place.
type recorder struct {
	mu    sync.Mutex
	start time.Time
	f     *os.File // nil: record nothing
	w     *bufio.Writer
	// base is the number of samples per channel already written; left and
	// right hold the samples from base on.
	base        int
	left, right []int16
	err         error // the first write error
}

// Recording channels.
const (
	agentChannel = iota
	calleeChannel
)

// flushAfter is how much audio a channel buffers before the recorder writes
// all but the last second of it.
const flushAfter = 3 * sampleRate

// newRecorder creates the WAV file at path; an empty path records nothing.
// Set start before the first add.
func newRecorder(path string) (*recorder, error) {
	r := &recorder{}
	if path == "" {
		return r, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("recording: %w", err)
	}
	r.f, r.w = f, bufio.NewWriterSize(f, 32<<10)
	if _, err := r.w.Write(wavHeader(0)); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("recording: %w", err)
	}
	return r, nil
}

// add puts pcm, which started playing at t, on a channel. A frame later
// than the channel's end by more than two frames is preceded by silence;
// frames never overlap.
func (r *recorder) add(channel int, pcm []int16, t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	buf := &r.left
	if channel == calleeChannel {
		buf = &r.right
	}
	pos := int(t.Sub(r.start)*sampleRate/time.Second) - r.base
	if gap := pos - len(*buf); gap > 2*frameSamples {
		*buf = append(*buf, make([]int16, gap)...)
	}
	*buf = append(*buf, pcm...)
	if len(*buf) > flushAfter {
		r.flushLocked(len(*buf) - sampleRate)
	}
}

// flushLocked writes the first n samples of both channels, padding the
// shorter one with silence.
func (r *recorder) flushLocked(n int) {
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
}

// close writes what is left and completes the WAV header.
func (r *recorder) close() error {
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
		_, err = r.f.WriteAt(wavHeader(r.base), 0)
	}
	err = errors.Join(err, r.f.Close())
	if err != nil {
		return fmt.Errorf("recording: %w", err)
	}
	return nil
}

// discard closes and removes the file of a recording that never started.
func (r *recorder) discard() {
	if r.f != nil {
		_ = r.f.Close()
		_ = os.Remove(r.f.Name())
	}
}

// wavHeader is the canonical 44-byte header of a stereo 8 kHz 16-bit PCM
// WAV file of n samples per channel.
func wavHeader(n int) []byte {
	const channels, bytesPerSample = 2, 2
	dataSize := uint32(n * channels * bytesPerSample) //nolint:gosec // 4 GiB is 37 h of audio
	h := make([]byte, 0, 44)
	h = append(h, "RIFF"...)
	h = binary.LittleEndian.AppendUint32(h, 36+dataSize)
	h = append(h, "WAVEfmt "...)
	h = binary.LittleEndian.AppendUint32(h, 16) // fmt chunk size
	h = binary.LittleEndian.AppendUint16(h, 1)  // PCM
	h = binary.LittleEndian.AppendUint16(h, channels)
	h = binary.LittleEndian.AppendUint32(h, sampleRate)
	h = binary.LittleEndian.AppendUint32(h, sampleRate*channels*bytesPerSample) // byte rate
	h = binary.LittleEndian.AppendUint16(h, channels*bytesPerSample)            // block align
	h = binary.LittleEndian.AppendUint16(h, 8*bytesPerSample)                   // bits per sample
	h = append(h, "data"...)
	return binary.LittleEndian.AppendUint32(h, dataSize)
}

// loadPrompt reads an 8 kHz mono 16-bit PCM WAV.
func loadPrompt(path string) ([]int16, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("prompt: %w", err)
	}
	defer func() { _ = f.Close() }()
	dec := wav.NewDecoder(f)
	if !dec.IsValidFile() {
		return nil, fmt.Errorf("prompt %s: not a PCM WAV file", path)
	}
	if dec.SampleRate != sampleRate || dec.NumChans != 1 || dec.BitDepth != 16 {
		return nil, fmt.Errorf("prompt %s: %d Hz, %d channels, %d bits: want 8000 Hz mono 16-bit",
			path, dec.SampleRate, dec.NumChans, dec.BitDepth)
	}
	buf, err := dec.FullPCMBuffer()
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("prompt %s: %w", path, err)
	}
	pcm := make([]int16, len(buf.Data))
	for i, s := range buf.Data {
		pcm[i] = int16(min(max(s, math.MinInt16), math.MaxInt16))
	}
	return pcm, nil
}
