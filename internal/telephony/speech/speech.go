// Package speech turns a callee's speech into text. A Recognizer is one
// engine: the embedded default, which runs on the operator's CPU, or a
// server the organization runs (an OpenAI-compatible transcription endpoint,
// a Vosk server). The call engine cuts the callee's audio into utterances
// (voice activity detection, package media) and asks a Recognizer for each.
package speech

import (
	"context"

	"github.com/switchboard-dev/switchboard/internal/telephony"
)

// SampleRate is the rate of the audio a Recognizer is given: telephone
// audio, 16-bit signed mono PCM, as the call's media carries it.
const SampleRate = 8000

// Recognizer transcribes utterances.
type Recognizer interface {
	// Name is how the transcript names this recognizer ("embedded",
	// "server").
	Name() string
	// Recognize transcribes one utterance of 8 kHz mono PCM. Hints are the
	// phrases the caller expects (a gather step's choices); a recognizer
	// that supports constrained recognition favours them, others may
	// ignore them. Nil hints ask for open recognition. An utterance with
	// no speech recognized gives an empty Text and no error.
	Recognize(ctx context.Context, pcm []int16, hints []string) (Result, error)
}

// Result is what was recognized in one utterance.
type Result struct {
	Text string
	// Confidence is from 0 to 1; recognizers that report none give 1 for
	// a non-empty Text.
	Confidence float64
	// Recognizer, when set, is who recognized this utterance for the
	// transcript, when it is not the Recognizer's own Name(): a server's
	// fallback sets "embedded (server failed: timeout)".
	Recognizer string
	// Words are Text's words with their place in the utterance, where the
	// recognizer gives them (the embedded one does; a server when its
	// answer has them); nil otherwise.
	Words []Word
}

// Word is one recognized word and where it was said, as offsets from the
// start of the utterance's audio (the transcript's word, placed in the
// recording later).
type Word = telephony.Word

// DefaultMinConfidence is a gather step's confidence threshold when it
// sets none, by capture type ("" for choices): an answer recognized with
// less is no match, and the step asks again rather than take a value it
// is not sure of. Chosen on the embedded recognizer's held-out sets
// (hack/benchmarks.md): for numbers 0.6, which only a sure answer passes
// (verified); for yes/no and choices 0, since the embedded recognizer's
// check, which leaves no wrong number, also doubts most right yes/no
// answers. A recognizer that reports no confidence gives 1.
func DefaultMinConfidence(capture string) float64 {
	if capture == "number" {
		return 0.6
	}
	return 0
}
