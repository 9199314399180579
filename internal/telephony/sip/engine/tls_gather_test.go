package engine

import (
	"testing"

	"github.com/switchboard-dev/switchboard/internal/telephony/sip/siptest"
)

// A script's gather works on an encrypted call as on a clear one: over
// TLS through kamailio to a callee that accepts only SRTP, the keys the
// callee types (RFC 4733 events, inside SRTP) are gathered, cut the
// prompt, and the script goes on.
func TestTLSGatherDigitsWithSRTP(t *testing.T) {
	ca := newTestCA(t, "carrier CA")
	cert, key := ca.server(t)
	callee := siptest.StartBaresip(t, "+14155550123", make([]int16, 20*sampleRate), siptest.WithMediaEnc("srtp-mand"))
	k := startKamailioTLS(t, cert, key, nil, callee.Addr)
	e := newEngine(t, EngineConfig{})
	res := placeTypingPIN(t, e, tlsTrunk(k, &TrunkTLS{Roots: ca.pool()}, MediaSRTPRequired), callee, "42#")
	callee.WaitCallEnded(t)
	if !res.Answered || res.HangupBy != HangupByAgent {
		t.Fatalf("result %+v: want answered (SRTP, the callee accepts nothing else), agent hangup after the script", res)
	}
	if got := res.Digits["pin"]; got != "42" {
		t.Errorf("pin %q, want 42 (digits %v)", got, res.Digits)
	}
	if len(res.Events) != 3 || res.Events[1].Speaker != SpeakerCallee || res.Events[1].Text != "pressed 42#" {
		t.Errorf("transcript %+v: want the prompt, the callee pressing 42#, the thanks", res.Events)
	}
}
