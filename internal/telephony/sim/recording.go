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

// Speech is rendered as tones: one pitch per speaker, fixed-length
// utterances with a pause after each.
const (
	agentHz   = 440.0
	calleeHz  = 660.0
	utterance = 1200 * time.Millisecond
	pause     = 300 * time.Millisecond
	amplitude = 0.3 * math.MaxInt16
	fade      = 10 * time.Millisecond // avoids clicks at utterance edges

	talkSamples = int(utterance * SampleRate / time.Second)
	turnSamples = int((utterance + pause) * SampleRate / time.Second)
	fadeSamples = float64(fade * SampleRate / time.Second)
)

// Recording returns a WAV (PCM 16-bit, mono, 8 kHz) exactly p.Duration long
// (at most MaxRecording), alternating agent and callee tones in the order
// the transcript has them speak.
func (c *Carrier) Recording(_ context.Context, _ telephony.Request, p telephony.Progress) (io.ReadCloser, error) {
	if err := endedConnected(p); err != nil {
		return nil, err
	}
	n := samples(min(max(p.Duration, 0), MaxRecording))
	// The machine's greeting comes first on voicemail; the agent otherwise.
	first, second := agentHz, calleeHz
	if p.Disposition == telephony.AnsweringMachine {
		first, second = calleeHz, agentHz
	}
	pcm := make([]int16, n)
	for i := range pcm {
		pcm[i] = sample(i, first, second)
	}
	return io.NopCloser(bytes.NewReader(audio.Mono(pcm))), nil
}

// samples is the number of samples in d, rounded to the nearest one.
func samples(d time.Duration) int {
	return int((d*SampleRate + time.Second/2) / time.Second)
}

// sample is the i-th sample: a tone of the current speaker's pitch during an
// utterance, silence during the pause after it.
func sample(i int, first, second float64) int16 {
	turn, pos := i/turnSamples, i%turnSamples
	if pos >= talkSamples {
		return 0
	}
	hz := first
	if turn%2 == 1 {
		hz = second
	}
	env := min(1, float64(min(pos, talkSamples-1-pos))/fadeSamples)
	return int16(amplitude * env * math.Sin(2*math.Pi*hz*float64(i)/SampleRate))
}
