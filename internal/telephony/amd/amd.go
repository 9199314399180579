// Package amd tells a human from an answering machine by the rhythm of the
// first seconds of audio after the callee answers: a human says a short
// "Hello?" and waits, a machine starts with silence or talks on.
//
// The algorithm is the one of Asterisk's app_amd, reimplemented from its
// description (none of its code is used). Audio is 8 kHz 16-bit mono PCM,
// cut into 20 ms frames of 160 samples. A frame is silent when its mean
// absolute amplitude is below SilenceThreshold, voiced otherwise. The
// detector counts consecutive silence, consecutive voice, total voice and
// words. A word starts once MinWordLength of consecutive voice is heard
// outside a word; a word ends once BetweenWordsSilence of consecutive
// silence is heard, so shorter gaps stay inside the word. After each frame
// the first rule that holds decides:
//
//	silent frame, no word yet, silence >= InitialSilence        MACHINE  initial silence
//	silent frame, a word heard, silence >= AfterGreetingSilence HUMAN    after greeting silence
//	voiced frame, words > MaximumNumberOfWords                  MACHINE  too many words
//	voiced frame, consecutive voice >= MaximumWordLength        MACHINE  max word length
//	voiced frame, total voice >= Greeting                       MACHINE  long greeting
//	any frame, audio analysed >= TotalAnalysisTime              NOTSURE  total analysis time
//
// Durations are measured in whole frames, so a parameter that is not a
// multiple of 20 ms takes effect at the next frame boundary.
package amd

import (
	"errors"
	"fmt"
	"time"
)

// Audio format the detector expects.
const (
	SampleRate    = 8000                  // samples per second
	FrameDuration = 20 * time.Millisecond // one analysis frame
	FrameSamples  = SampleRate / 50       // samples per frame (160)
)

// Params tune the detector. Start from DefaultParams.
type Params struct {
	// InitialSilence of consecutive silence before any word: MACHINE.
	InitialSilence time.Duration
	// Greeting of total voice: MACHINE (a greeting too long for a human).
	Greeting time.Duration
	// AfterGreetingSilence of consecutive silence once a word was heard:
	// HUMAN (the callee said hello and waits).
	AfterGreetingSilence time.Duration
	// TotalAnalysisTime of audio without a decision: NOTSURE.
	TotalAnalysisTime time.Duration
	// MinWordLength of consecutive voice makes a word.
	MinWordLength time.Duration
	// BetweenWordsSilence of consecutive silence ends a word.
	BetweenWordsSilence time.Duration
	// MaximumNumberOfWords: one more word is MACHINE.
	MaximumNumberOfWords int
	// MaximumWordLength of consecutive voice: MACHINE.
	MaximumWordLength time.Duration
	// SilenceThreshold: a frame whose mean absolute amplitude is below it is
	// silent. From 1 to 32768.
	SilenceThreshold int
}

// DefaultParams are app_amd's defaults.
func DefaultParams() Params {
	return Params{
		InitialSilence:       2500 * time.Millisecond,
		Greeting:             1500 * time.Millisecond,
		AfterGreetingSilence: 800 * time.Millisecond,
		TotalAnalysisTime:    5000 * time.Millisecond,
		MinWordLength:        100 * time.Millisecond,
		BetweenWordsSilence:  50 * time.Millisecond,
		MaximumNumberOfWords: 3,
		MaximumWordLength:    5000 * time.Millisecond,
		SilenceThreshold:     256,
	}
}

// maxAmplitude is the largest absolute value of a 16-bit sample.
const maxAmplitude = 32768

// Validate reports every parameter out of range: durations must be
// positive, MaximumNumberOfWords at least 1 and SilenceThreshold from 1 to
// 32768.
func (p Params) Validate() error {
	var errs []error
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"InitialSilence", p.InitialSilence},
		{"Greeting", p.Greeting},
		{"AfterGreetingSilence", p.AfterGreetingSilence},
		{"TotalAnalysisTime", p.TotalAnalysisTime},
		{"MinWordLength", p.MinWordLength},
		{"BetweenWordsSilence", p.BetweenWordsSilence},
		{"MaximumWordLength", p.MaximumWordLength},
	} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("amd: %s must be positive, got %v", d.name, d.v))
		}
	}
	if p.MaximumNumberOfWords < 1 {
		errs = append(errs, fmt.Errorf("amd: MaximumNumberOfWords must be at least 1, got %d", p.MaximumNumberOfWords))
	}
	if p.SilenceThreshold < 1 || p.SilenceThreshold > maxAmplitude {
		errs = append(errs, fmt.Errorf("amd: SilenceThreshold must be from 1 to %d, got %d", maxAmplitude, p.SilenceThreshold))
	}
	return errors.Join(errs...)
}

// Status is the detector's verdict; "" means undecided. The values are the
// ones Asterisk reports in AMDSTATUS.
type Status string

const (
	Human   Status = "HUMAN"
	Machine Status = "MACHINE"
	NotSure Status = "NOTSURE"
)

// Causes of a Result. Each one fires exactly when its counter reaches its
// parameter, so the parameters and Result.After say the rest.
const (
	CauseInitialSilence       = "initial silence"
	CauseLongGreeting         = "long greeting"
	CauseTooManyWords         = "too many words"
	CauseMaxWordLength        = "max word length"
	CauseAfterGreetingSilence = "after greeting silence"
	CauseTotalAnalysisTime    = "total analysis time"
)

// Result is a decision.
type Result struct {
	Status Status
	Cause  string
	// After is how much audio had been analysed at the decision.
	After time.Duration
}

func (r Result) String() string {
	if r.Status == "" {
		return "undecided"
	}
	return fmt.Sprintf("%s (%s) after %v", r.Status, r.Cause, r.After)
}

// Detector analyses one call's audio as it streams in. It is not safe for
// concurrent use.
type Detector struct {
	p Params

	// The frame being filled: sum of absolute amplitudes and sample count.
	sum int64
	n   int

	elapsed    time.Duration // audio analysed, in whole frames
	silence    time.Duration // consecutive silence
	voice      time.Duration // consecutive voice
	totalVoice time.Duration
	words      int
	inWord     bool

	result Result
}

// New returns a detector. It panics if p.Validate fails: validate
// configuration when it is read.
func New(p Params) *Detector {
	if err := p.Validate(); err != nil {
		panic(err)
	}
	return &Detector{p: p}
}

// Feed analyses the next samples, in any chunk sizes: a frame may straddle
// calls. It returns the result and true as soon as the frame that decides
// is complete, ignoring the rest of samples; from then on every call returns
// that same result.
func (d *Detector) Feed(samples []int16) (Result, bool) {
	for _, s := range samples {
		if d.result.Status != "" {
			break
		}
		v := int64(s)
		if v < 0 {
			v = -v
		}
		d.sum += v
		d.n++
		if d.n == FrameSamples {
			d.frame(d.sum < int64(d.p.SilenceThreshold)*FrameSamples)
			d.sum, d.n = 0, 0
		}
	}
	return d.result, d.result.Status != ""
}

// frame accounts for one complete frame.
func (d *Detector) frame(silent bool) {
	d.elapsed += FrameDuration
	if silent {
		d.silentFrame()
	} else {
		d.voicedFrame()
	}
	if d.result.Status == "" && d.elapsed >= d.p.TotalAnalysisTime {
		d.decide(NotSure, CauseTotalAnalysisTime)
	}
}

func (d *Detector) silentFrame() {
	d.voice = 0
	d.silence += FrameDuration
	if d.inWord && d.silence >= d.p.BetweenWordsSilence {
		d.inWord = false
	}
	switch {
	case d.words == 0 && d.silence >= d.p.InitialSilence:
		d.decide(Machine, CauseInitialSilence)
	case d.words > 0 && d.silence >= d.p.AfterGreetingSilence:
		d.decide(Human, CauseAfterGreetingSilence)
	}
}

func (d *Detector) voicedFrame() {
	d.silence = 0
	d.voice += FrameDuration
	d.totalVoice += FrameDuration
	if !d.inWord && d.voice >= d.p.MinWordLength {
		d.inWord = true
		d.words++
	}
	switch {
	case d.words > d.p.MaximumNumberOfWords:
		d.decide(Machine, CauseTooManyWords)
	case d.voice >= d.p.MaximumWordLength:
		d.decide(Machine, CauseMaxWordLength)
	case d.totalVoice >= d.p.Greeting:
		d.decide(Machine, CauseLongGreeting)
	}
}

func (d *Detector) decide(s Status, cause string) {
	d.result = Result{Status: s, Cause: cause, After: d.elapsed}
}
