package engine

import (
	"testing"

	"github.com/switchboard-dev/switchboard/internal/telephony/sip/siptest"
)

// baresip is a baresip callee (siptest.Baresip) under the names these
// tests use.
type baresip struct {
	*siptest.Baresip
	addr string
}

// startBaresip starts a baresip callee answering calls to place's default
// To, playing voice.
func startBaresip(t *testing.T, voice []int16) *baresip {
	t.Helper()
	b := siptest.StartBaresip(t, "+14155550123", voice)
	return &baresip{Baresip: b, addr: b.Addr}
}

func (b *baresip) command(command, params string) error { return b.Command(command, params) }

func (b *baresip) waitCallEnded(t *testing.T) { b.WaitCallEnded(t) }
