package speech

import (
	"errors"
	"runtime"
)

// DefaultModelDir is where Debian's pocketsphinx-en-us package puts the
// US English model: the acoustic model in en-us/, the language model
// en-us.lm.bin and the pronouncing dictionary cmudict-en-us.dict.
const DefaultModelDir = "/usr/share/pocketsphinx/model/en-us"

// EmbeddedName is the embedded recognizer's name in the transcript.
const EmbeddedName = "embedded"

// ErrNoEmbedded is returned by NewEmbedded in a binary built without the
// embedded recognizer (without the pocketsphinx build tag, or without cgo).
var ErrNoEmbedded = errors.New("speech: this binary was built without the embedded recognizer " +
	"(build with CGO_ENABLED=1 -tags pocketsphinx, with libpocketsphinx-dev and pocketsphinx-en-us installed)")

// EmbeddedOptions configure the embedded recognizer.
type EmbeddedOptions struct {
	// ModelDir holds the model (DefaultModelDir when empty).
	ModelDir string
	// Decoders bounds the utterances recognized at once: each decoder
	// holds its own copy of the model (about 90 MB resident, measured), and a
	// call beyond the bound waits for one. Default: the number of CPUs.
	Decoders int
	// MaxUtteranceSeconds cuts longer audio into segments recognized one
	// after another, so a monologue of any length uses bounded memory
	// (default 30).
	MaxUtteranceSeconds int
}

func (o EmbeddedOptions) withDefaults() EmbeddedOptions {
	if o.ModelDir == "" {
		o.ModelDir = DefaultModelDir
	}
	if o.Decoders <= 0 {
		o.Decoders = runtime.NumCPU()
	}
	if o.MaxUtteranceSeconds <= 0 {
		o.MaxUtteranceSeconds = 30
	}
	return o
}

// NewEmbedded returns the embedded recognizer: CMU PocketSphinx with its
// US English model, run in-process. It returns ErrNoEmbedded in a binary
// built without it, and an error naming the file when the model is missing.
func NewEmbedded(opts EmbeddedOptions) (Recognizer, error) {
	return newPocketSphinx(opts.withDefaults())
}
