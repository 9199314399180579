// Package media holds the call engine's real-time audio processing that
// does not depend on SIP: voice activity detection and the cutting of the
// callee's audio into utterances. Audio is 8 kHz 16-bit mono PCM, as the
// call's G.711 media decodes to, in 20 ms frames.
package media

import "time"

const (
	// SampleRate is the rate of the audio processed here.
	SampleRate = 8000
	// FrameSamples is one 20 ms frame.
	FrameSamples = SampleRate / 50
	// FrameDuration is how long a frame plays.
	FrameDuration = 20 * time.Millisecond
)

// VADConfig tunes the voice activity detector. Zero fields take the
// defaults of DefaultVADConfig.
type VADConfig struct {
	// Threshold is the mean absolute 16-bit amplitude a frame must reach to
	// be voice, whatever the noise (the same measure as the answering
	// machine detector's silence threshold).
	Threshold int
	// NoiseRatio is how many times louder than the noise floor a frame
	// must be to be voice, so that steady line noise is not speech.
	NoiseRatio int
	// Start is how much voice in a row starts speech: long enough to
	// ignore clicks, short enough for barge-in within 300 ms.
	Start time.Duration
	// Hangover is the silence that ends speech: the pause after which the
	// callee is taken to have finished (end of speech), rather than
	// pausing between words.
	Hangover time.Duration
	// MaxUtterance bounds one utterance: speech longer than that is cut
	// into utterances of at most this length, so that memory stays bounded
	// however long the callee talks.
	MaxUtterance time.Duration
	// PreRoll is the audio before the start of speech kept in the
	// utterance (the soft start of the first word).
	PreRoll time.Duration
}

// DefaultVADConfig is what zero fields of a VADConfig take.
func DefaultVADConfig() VADConfig {
	return VADConfig{
		Threshold:    200,
		NoiseRatio:   3,
		Start:        60 * time.Millisecond,
		Hangover:     400 * time.Millisecond,
		MaxUtterance: 15 * time.Second,
		PreRoll:      200 * time.Millisecond,
	}
}

func (c VADConfig) withDefaults() VADConfig {
	d := DefaultVADConfig()
	or := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	ord := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	or(&c.Threshold, d.Threshold)
	or(&c.NoiseRatio, d.NoiseRatio)
	ord(&c.Start, d.Start)
	ord(&c.Hangover, d.Hangover)
	ord(&c.MaxUtterance, d.MaxUtterance)
	ord(&c.PreRoll, d.PreRoll)
	return c
}

// frames is how many whole frames (at least one) d lasts.
func frames(d time.Duration) int { return max(1, int(d/FrameDuration)) }

// VAD tells voice from silence and noise, frame by frame, by energy
// against a tracked noise floor. It keeps no audio and does not allocate.
type VAD struct {
	threshold, ratio int
	// floor is the noise floor, in the same unit as the energy: it drops at
	// once to a quieter frame and creeps up slowly (a steady sound becomes the floor within a few seconds),
	// so that steady noise becomes the floor while the pauses between
	// words keep it down during speech.
	floor   int
	started bool
}

// NewVAD returns a detector with cfg's threshold and noise ratio.
func NewVAD(cfg VADConfig) *VAD {
	cfg = cfg.withDefaults()
	return &VAD{threshold: cfg.Threshold, ratio: cfg.NoiseRatio}
}

// Voiced reports whether frame is voice.
func (v *VAD) Voiced(frame []int16) bool {
	e := Energy(frame)
	if !v.started {
		v.started, v.floor = true, e
	}
	voiced := e >= v.threshold && e >= v.floor*v.ratio
	if e < v.floor {
		v.floor = e
	} else {
		// +1 so that a floor of 0 (digital silence) can rise too.
		v.floor += (e-v.floor)/256 + 1
		v.floor = min(v.floor, e)
	}
	return voiced
}

// Energy is the mean absolute amplitude of pcm (0 when empty).
func Energy(pcm []int16) int {
	if len(pcm) == 0 {
		return 0
	}
	var sum int
	for _, s := range pcm {
		if s < 0 {
			sum -= int(s)
		} else {
			sum += int(s)
		}
	}
	return sum / len(pcm)
}
