//go:build !pocketsphinx || !cgo

package speech

func newPocketSphinx(EmbeddedOptions) (Recognizer, error) { return nil, ErrNoEmbedded }
