package sim

import (
	"bytes"
	"context"
	"io"
	"math"
	"time"

	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/audio"
)

// Recording format: what carriers commonly deliver for narrowband calls.
const (
	SampleRate = audio.SampleRate

	// MaxRecording caps the generated audio so a misconfigured Talk cannot
	// exhaust memory.
	MaxRecording = 10 * time.Minute
)

// Speech is rendered as tones: one pitch per speaker, each turn of the
// transcript in its slot of the recording (see place), silence between.
const (
	agentHz   = 440.0
	calleeHz  = 660.0
	amplitude = 0.3 * math.MaxInt16
	fade      = 10 * time.Millisecond // avoids clicks at utterance edges

	fadeSamples = float64(fade * SampleRate / time.Second)
)

// Recording returns a WAV (PCM 16-bit, mono, 8 kHz) exactly p.Duration long
// (at most MaxRecording) in which each turn of the transcript is a tone of
// its speaker's pitch at the offsets the transcript gives it. A streamed
// call's is the stereo recording of its real streams (see streams).
func (c *Carrier) Recording(ctx context.Context, req telephony.Request, p telephony.Progress) (io.ReadCloser, error) {
	if err := endedConnected(p); err != nil {
		return nil, err
	}
	if c.streamed(req) {
		return c.streams.recording(req.CallID)
	}
	if c.conversed(req) {
		return c.conversationRecording(req, recordingLength(p))
	}
	pcm := make([]int16, c.boundedSamples(samples(recordingLength(p))))
	for _, t := range turns(req, p, c.allowTransfer(ctx, req)) {
		hz := pitch(t)
		tone(pcm[min(samples(t.Start), len(pcm)):min(samples(t.End), len(pcm))], samples(t.Start), hz)
	}
	return io.NopCloser(bytes.NewReader(audio.Mono(pcm))), nil
}

// pitch is the tone of t's speaker: the agent's, the callee's, or a
// transfer's person's.
func pitch(t telephony.Turn) float64 {
	switch {
	case t.Speaker == callee:
		return calleeHz
	case personTurn(t):
		return personHz
	}
	return agentHz
}

// boundedSamples is n, or fewer to keep a mono recording within
// maxRecordingBytes.
func (c *Carrier) boundedSamples(n int) int {
	if c.maxRecordingBytes <= 0 {
		return n
	}
	return min(n, int(max(c.maxRecordingBytes-audio.HeaderSize, 0)/2))
}

// recordingLength is how long the recording of the call is.
func recordingLength(p telephony.Progress) time.Duration {
	return min(max(p.Duration, 0), MaxRecording)
}

// samples is the number of samples in d, rounded to the nearest one.
func samples(d time.Duration) int {
	return int((d*SampleRate + time.Second/2) / time.Second)
}

// tone fills seg, which starts at sample offset, with a sine of hz Hz
// faded in and out.
func tone(seg []int16, offset int, hz float64) {
	for pos := range seg {
		env := min(1, float64(min(pos, len(seg)-1-pos))/fadeSamples)
		seg[pos] = int16(amplitude * env * math.Sin(2*math.Pi*hz*float64(offset+pos)/SampleRate))
	}
}
