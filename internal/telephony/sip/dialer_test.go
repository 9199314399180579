package sip

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/engine"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/gate"
)

// slowSpeaker speaks once release is closed (or fails with err then).
type slowSpeaker struct {
	release chan struct{}
	err     error
	// speaking counts the Speak calls under way.
	speaking atomic.Int32
}

func (s *slowSpeaker) Speak(ctx context.Context, _ string) ([]int16, error) {
	s.speaking.Add(1)
	defer s.speaking.Add(-1)
	select {
	case <-s.release:
		return []int16{1, 2, 3}, s.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type oneTrunk struct{ limits gate.Limits }

func (t oneTrunk) Trunk(context.Context, string, string) (engine.Trunk, gate.Limits, error) {
	return engine.Trunk{}, t.limits, nil
}

// placer records the calls placed; each ends at once, unanswered.
type placer struct {
	placed atomic.Int32
	pinErr error // what Pin answers
}

// Pin allows every trunk address, unless pinErr says otherwise.
func (p *placer) Pin(_ context.Context, t engine.Trunk) (engine.Trunk, error) { return t, p.pinErr }

func (p *placer) Place(context.Context, engine.Trunk, engine.CallSpec) (engine.Result, error) {
	p.placed.Add(1)
	return engine.Result{}, nil
}

func newTestDialer(t *testing.T, speaker *slowSpeaker, limits gate.Limits) (*Dialer, *placer, *wakes) {
	t.Helper()
	p, wk := &placer{}, &wakes{}
	d, err := New(t.Context(), Config{Engine: p, Trunks: oneTrunk{limits}, Script: &ScriptRenderer{Speaker: speaker},
		Backlog:  func(context.Context, string, string) ([]gate.Waiter, error) { return nil, nil },
		SpoolDir: t.TempDir(), WakeCall: wk.wake, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	return d, p, wk
}

// wakes counts the calls woken.
type wakes struct{ n atomic.Int32 }

func (w *wakes) wake(types.NamespacedName) { w.n.Add(1) }

func scriptedCall(name string) telephony.Request {
	return telephony.Request{CallID: "call_" + name, Namespace: "org", CallName: name, Trunk: "carrier",
		Agent: &switchboardv1.Agent{Spec: switchboardv1.AgentSpec{
			Script: []switchboardv1.ScriptStep{{Say: "Hello."}}}}}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
	}
}

// Dial does not wait for text-to-speech: the call waits (PreparingScript)
// and is woken when its script is ready; it goes out on the Dial after.
func TestDialPreparesTheScriptOffTheCallersGoroutine(t *testing.T) {
	speaker := &slowSpeaker{release: make(chan struct{})}
	d, p, wk := newTestDialer(t, speaker, gate.Limits{})
	req := scriptedCall("a")
	start := time.Now()
	err := d.Dial(t.Context(), req, start)
	we, ok := telephony.AsWaitError(err)
	if !ok || !we.Preparing {
		t.Fatalf("Dial while the speaker is busy = %v, want a WaitError for preparing", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("Dial waited %s for text-to-speech", took)
	}
	// The speaker answers only once released, below: Dial returned while
	// the script was still being spoken, on another goroutine.
	eventually(t, "the script is being prepared", func() bool { return speaker.speaking.Load() == 1 })
	if err := d.Dial(t.Context(), req, start); err == nil {
		t.Fatal("a second Dial let the call go before its script was ready")
	}
	close(speaker.release)
	eventually(t, "the call is woken once its script is ready", func() bool { return wk.n.Load() > 0 })
	if p.placed.Load() != 0 {
		t.Fatal("the call went out before a Dial let it")
	}
	if err := d.Dial(t.Context(), req, start); err != nil {
		t.Fatalf("Dial once the script is ready = %v", err)
	}
	eventually(t, "the call is placed", func() bool { return p.placed.Load() == 1 })
}

// A script that cannot be prepared fails the call on the next Dial, and
// frees its place on the trunk at once.
func TestDialReportsAScriptThatFailed(t *testing.T) {
	speaker := &slowSpeaker{release: make(chan struct{}), err: errors.New("flite did not finish within 10s and was stopped")}
	d, p, wk := newTestDialer(t, speaker, gate.Limits{MaxConcurrent: 1})
	req := scriptedCall("a")
	if err := d.Dial(t.Context(), req, time.Now()); err == nil {
		t.Fatal("Dial did not wait for the script")
	}
	close(speaker.release)
	eventually(t, "the call is woken", func() bool { return wk.n.Load() > 0 })
	if active, _ := d.Usage("org", "carrier"); active != 0 {
		t.Errorf("the failed call still holds %d slot(s) of the trunk", active)
	}
	de, ok := telephony.AsDispatchError(d.Dial(t.Context(), req, time.Now()))
	if !ok || de.Code != telephony.CodeDispatchFailed || de.Reason !=
		"the agent's script could not be prepared: step 1: text-to-speech: flite did not finish within 10s and was stopped" {
		t.Fatalf("Dial after the script failed = %v", de)
	}
	if p.placed.Load() != 0 {
		t.Error("a call whose script failed was placed")
	}
}

// A call stopped while its script is prepared never goes out, and its
// trunk slot is freed.
func TestHangupWhilePreparingFreesTheTrunk(t *testing.T) {
	speaker := &slowSpeaker{release: make(chan struct{})}
	d, p, _ := newTestDialer(t, speaker, gate.Limits{MaxConcurrent: 1})
	req := scriptedCall("a")
	if err := d.Dial(t.Context(), req, time.Now()); err == nil {
		t.Fatal("Dial did not wait for the script")
	}
	if active, _ := d.Usage("org", "carrier"); active != 1 {
		t.Fatalf("a call being prepared holds %d slots, want 1", active)
	}
	if err := d.Hangup(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	close(speaker.release)
	eventually(t, "the trunk slot is freed", func() bool { active, _ := d.Usage("org", "carrier"); return active == 0 })
	if d.session(req.CallID) != nil {
		t.Error("the stopped call's session is kept")
	}
	if p.placed.Load() != 0 {
		t.Error("a call stopped before it was dialed was placed")
	}
}

// A tls trunk whose certificate fails verification fails the call with
// dispatch_failed and the verification's words: never a call in clear.
func TestDialFailsOnAnInvalidCertificate(t *testing.T) {
	speaker := &slowSpeaker{release: make(chan struct{})}
	close(speaker.release)
	d, p, wk := newTestDialer(t, speaker, gate.Limits{})
	p.pinErr = &engine.TLSError{Kind: engine.TLSCertificateInvalid, Err: errors.New("x509: certificate has expired or is not yet valid")}
	req := scriptedCall("a")
	err := d.Dial(t.Context(), req, time.Now())
	if err == nil {
		eventually(t, "the call is woken", func() bool { return wk.n.Load() > 0 })
		err = d.Dial(t.Context(), req, time.Now())
	}
	de, ok := telephony.AsDispatchError(err)
	if !ok || de.Code != telephony.CodeDispatchFailed || de.Reason !=
		`SIP trunk "carrier": the trunk's TLS certificate is not valid: x509: certificate has expired or is not yet valid` {
		t.Fatalf("Dial on a trunk whose certificate expired = %v", err)
	}
	if p.placed.Load() != 0 {
		t.Error("a call on a trunk that failed TLS verification was placed")
	}
}
