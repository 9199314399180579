//go:build !pocketsphinx || !cgo

package speech

import (
	"errors"
	"testing"
)

// A binary built without the embedded recognizer says so at start-up.
func TestNoEmbedded(t *testing.T) {
	if _, err := NewEmbedded(EmbeddedOptions{}); !errors.Is(err, ErrNoEmbedded) {
		t.Errorf("err %v, want ErrNoEmbedded", err)
	}
}
