package sip

import (
	"context"
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
	"github.com/go-audio/audio"
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
// it plays the prompt, records both directions and hangs up after the
// prompt and SilenceHangup of silence, at MaxDuration, or when ctx ends.
func (e *Engine) converse(ctx context.Context, d *diago.DialogClientSession, c CallSpec, prompt []int16, res *Result) error {
	var wprops diago.MediaProps
	w, err := d.AudioWriter(diago.WithAudioWriterMediaProps(&wprops))
	if err != nil {
		return errors.Join(fmt.Errorf("audio writer: %w", err), e.hangup(d, res, HangupByAgent))
	}
	r, err := d.AudioReader()
	if err != nil {
		return errors.Join(fmt.Errorf("audio reader: %w", err), e.hangup(d, res, HangupByAgent))
	}
	enc, err := encoder(wprops.Codec)
	if err != nil {
		return errors.Join(err, e.hangup(d, res, HangupByAgent))
	}

	m := &callMedia{rec: newRecorder(res.AnsweredAt), stop: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Go(func() { m.play(w, enc, prompt) })
	wg.Go(func() { m.listen(r, d.RTPPacketReader) })

	hangupBy, ctxErr := e.waitHangup(ctx, d, c, m, res.AnsweredAt)
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
	var recErr error
	if c.RecordPath != "" {
		recErr = m.rec.writeWAV(c.RecordPath)
	}
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
			return // media closed: the call is over
		}
		m.rec.add(&m.rec.left, frame, now)
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
		m.rec.add(&m.rec.right, pcm, now.Add(-time.Duration(len(pcm))*time.Second/sampleRate))
		if loud(pcm) {
			m.lastVoiceAt.Store(now.UnixNano())
		}
	}
}

// waitHangup waits until the call must end and says who ends it; ctxErr is
// set when ctx ended it.
func (e *Engine) waitHangup(ctx context.Context, d *diago.DialogClientSession, c CallSpec, m *callMedia, answeredAt time.Time) (hangupBy string, ctxErr error) {
	var maxC <-chan time.Time
	if c.MaxDuration > 0 {
		tm := time.NewTimer(c.MaxDuration - time.Since(answeredAt))
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

// recorder keeps both directions of a call on one timeline starting at the
// answer.
type recorder struct {
	mu          sync.Mutex
	start       time.Time
	left, right []int16
}

func newRecorder(start time.Time) *recorder { return &recorder{start: start} }

// add puts pcm, which started playing at t, on a channel. A frame later
// than the channel's end by more than two frames is preceded by silence;
// frames never overlap.
func (r *recorder) add(ch *[]int16, pcm []int16, t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	pos := int(t.Sub(r.start) * sampleRate / time.Second)
	if gap := pos - len(*ch); gap > 2*frameSamples {
		*ch = append(*ch, make([]int16, gap)...)
	}
	*ch = append(*ch, pcm...)
}

// writeWAV writes the stereo recording: left us, right the callee.
func (r *recorder) writeWAV(path string) (err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := max(len(r.left), len(r.right))
	data := make([]int, 2*n)
	for i, s := range r.left {
		data[2*i] = int(s)
	}
	for i, s := range r.right {
		data[2*i+1] = int(s)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("recording: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("recording: %w", cerr)
		}
	}()
	enc := wav.NewEncoder(f, sampleRate, 16, 2, 1)
	buf := &audio.IntBuffer{
		Format:         &audio.Format{NumChannels: 2, SampleRate: sampleRate},
		Data:           data,
		SourceBitDepth: 16,
	}
	if err := enc.Write(buf); err != nil {
		return fmt.Errorf("recording: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("recording: %w", err)
	}
	return nil
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
