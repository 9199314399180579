package sip

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/callpolicy"
	"github.com/switchboard-dev/switchboard/internal/numberlists"
	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/engine"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/gate"
)

// transferPlacer answers, asks the call's guard about two numbers, takes a
// second leg as a bridged transfer does, and ends the call bridged.
type transferPlacer struct {
	placer
	d *Dialer
	// refused is the guard's answer for a number outside the agent's
	// destinations; activeDuringLeg the trunk's calls while the second
	// leg lasted.
	refused, allowed error
	activeDuringLeg  int
	legErr           error
}

func (p *transferPlacer) Place(ctx context.Context, _ engine.Trunk, spec engine.CallSpec) (engine.Result, error) {
	p.refused = spec.AllowTransfer(ctx, "+14165550100")
	p.allowed = spec.AllowTransfer(ctx, "+14155550100")
	release, err := spec.SecondLeg(ctx)
	p.legErr = err
	if err == nil {
		p.activeDuringLeg, _ = p.d.Usage("org", "carrier")
		release()
	}
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	out := telephony.TransferOutcome{To: "+14155550100", Mode: switchboardv1.TransferCold,
		Method: switchboardv1.TransferByBridge, Result: switchboardv1.TransferBridged, SIPStatus: 200,
		RequestedAt: t0.Add(5 * time.Second), ConnectedAt: t0.Add(9 * time.Second), SecondLeg: 20 * time.Second}
	p.placed.Add(1)
	return engine.Result{Answered: true, AnsweredAt: t0, EndedAt: t0.Add(30 * time.Second),
		HangupBy: engine.HangupByCallee, Transfer: &out}, nil
}

// A SIP call's transfers are guarded by the agent's destinations and the
// number lists, its second leg counts on the trunk, and its outcome and
// disconnection reason reach the reconciler.
func TestDialerTransfers(t *testing.T) {
	p := &transferPlacer{}
	lists := numberlists.NewIndex()
	d, err := New(t.Context(), Config{Engine: p, Trunks: oneTrunk{gate.Limits{MaxConcurrent: 2}},
		Script:   &ScriptRenderer{Speaker: &slowSpeaker{release: closedChan()}},
		Backlog:  func(context.Context, string, string) ([]gate.Waiter, error) { return nil, nil },
		SpoolDir: t.TempDir(), WakeCall: (&wakes{}).wake, Log: logr.Discard(),
		Transfers: callpolicy.Transfers(lists)})
	if err != nil {
		t.Fatal(err)
	}
	p.d = d
	req := scriptedCall("a")
	req.Agent.Spec.TransferDestinations = []string{"+1415*"}
	eventually(t, "the call goes out", func() bool { return d.Dial(t.Context(), req, time.Now()) == nil })
	eventually(t, "the call ends", func() bool {
		pr, _ := d.Progress(t.Context(), req, time.Now(), time.Now())
		return pr.Phase == telephony.Ended
	})
	if p.refused == nil || p.allowed != nil {
		t.Errorf("guard: outside the destinations = %v, inside = %v", p.refused, p.allowed)
	}
	if p.legErr != nil || p.activeDuringLeg != 2 {
		t.Errorf("second leg: err %v, trunk calls during it %d, want 2", p.legErr, p.activeDuringLeg)
	}
	pr, _ := d.Progress(t.Context(), req, time.Now(), time.Now())
	if pr.Transfer == nil || pr.Transfer.Result != switchboardv1.TransferBridged || pr.Transfer.To != "+14155550100" {
		t.Fatalf("Progress.Transfer = %+v", pr.Transfer)
	}
	if pr.DisconnectionReason != switchboardv1.ReasonTransferBridged {
		t.Errorf("disconnection reason = %q, want %q", pr.DisconnectionReason, switchboardv1.ReasonTransferBridged)
	}
	if active, _ := d.Usage("org", "carrier"); active != 0 {
		t.Errorf("the trunk holds %d calls after the call and its second leg ended", active)
	}
}

func closedChan() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}
