package sim

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/audio"
)

// transferAgent is a script that says a line, transfers to `to` with
// opts, and says "We are back." when the transfer failed (its next).
func transferAgent(to string, opts switchboardv1.TransferOptions) switchboardv1.AgentSpec {
	return switchboardv1.AgentSpec{TransferDestinations: []string{"+1415555*"}, Script: []switchboardv1.ScriptStep{
		{Say: "Connecting you."},
		{Transfer: &switchboardv1.TransferStep{To: to, TransferOptions: opts, Next: "back"}},
		{Say: "This is skipped."},
		{ID: "back", Say: "We are back."},
	}}
}

func TestSimScriptTransferNumberPlan(t *testing.T) {
	bridge := switchboardv1.TransferOptions{Method: switchboardv1.TransferByBridge, HoldLine: "Hold on, {{name}}."}
	warm := switchboardv1.TransferOptions{Mode: switchboardv1.TransferWarm}
	for _, tc := range []struct {
		name, to string
		opts     switchboardv1.TransferOptions
		result   switchboardv1.TransferResult
		method   switchboardv1.TransferMethod
		status   int
		reason   string // the call's; "" goes on at next (agent_hangup)
		hold     bool
	}{
		{"refer answered", "+14155550100", switchboardv1.TransferOptions{}, switchboardv1.TransferTransferred, switchboardv1.TransferByRefer, 200, "call_transfer", false},
		{"bridge answered", "+14155550100", bridge, switchboardv1.TransferBridged, switchboardv1.TransferByBridge, 200, "transfer_bridged", true},
		{"warm accepted", "+14155550100", warm, switchboardv1.TransferBridged, switchboardv1.TransferByBridge, 200, "transfer_bridged", true},
		{"REFER refused, bridged", "+14155550003", switchboardv1.TransferOptions{}, switchboardv1.TransferBridged, switchboardv1.TransferByBridge, 200, "transfer_bridged", true},
		{"busy", "+14155550001", switchboardv1.TransferOptions{}, switchboardv1.TransferBusy, switchboardv1.TransferByRefer, 486, "", false},
		{"no answer", "+14155550002", bridge, switchboardv1.TransferNoAnswer, switchboardv1.TransferByBridge, 487, "", true},
		{"warm declined", "+14155550004", warm, switchboardv1.TransferDeclined, switchboardv1.TransferByBridge, 0, "", true},
		{"cold refused", "+14155550004", switchboardv1.TransferOptions{}, switchboardv1.TransferRefused, switchboardv1.TransferByRefer, 603, "", false},
		{"failed", "+14155550005", switchboardv1.TransferOptions{}, switchboardv1.TransferFailed, switchboardv1.TransferByRefer, 503, "", false},
		{"not a destination", "+14165550100", bridge, switchboardv1.TransferNotAllowed, switchboardv1.TransferByBridge, 0, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := scriptReq("+14155551234", transferAgent(tc.to, tc.opts))
			r.Variables = map[string]any{"name": "Ada"}
			c := New(DefaultTimings())
			p := progress(t, c, r, placedAt.Add(time.Hour))
			x := p.Transfer
			if x == nil || x.Result != tc.result || x.Method != tc.method || x.SIPStatus != tc.status || x.To != tc.to {
				t.Fatalf("transfer %+v, want %s by %s (%d)", x, tc.result, tc.method, tc.status)
			}
			turns := scriptTurns(t, r)
			got := texts(turns)
			if strings.Contains(got, "Hold on, Ada.") != (tc.hold && tc.opts.HoldLine != "") ||
				strings.Contains(got, "Please hold while I connect you.") != (tc.hold && tc.opts.HoldLine == "") {
				t.Errorf("hold line (want %v) in:\n%s", tc.hold, got)
			}
			heard := tc.opts.Mode == switchboardv1.TransferWarm && tc.result != switchboardv1.TransferNotAllowed
			if strings.Contains(got, "(whispered to "+tc.to+": You have a transferred call.") != heard {
				t.Errorf("whisper (want %v) in:\n%s", heard, got)
			}
			if tc.reason == "" {
				if p.DisconnectionReason != "agent_hangup" || !strings.HasSuffix(got, "agent: We are back.\n") ||
					strings.Contains(got, "skipped") || !strings.Contains(got, "failed: "+string(tc.result)) || x.Detail == "" {
					t.Errorf("reason %q, detail %q, transcript:\n%s", p.DisconnectionReason, x.Detail, got)
				}
				if x.ConnectedAt != (time.Time{}) || x.SecondLeg != 0 {
					t.Errorf("a failed transfer connected: %+v", x)
				}
				return
			}
			if p.DisconnectionReason != tc.reason || strings.Contains(got, "We are back.") ||
				!strings.Contains(got, `(the person at `+tc.to+`: "Hello, this is `+tc.to) {
				t.Errorf("reason %q, transcript:\n%s", p.DisconnectionReason, got)
			}
			if !x.RequestedAt.After(placedAt) || x.ConnectedAt.Before(x.RequestedAt) ||
				(tc.result == switchboardv1.TransferBridged) != (x.SecondLeg > 0) {
				t.Errorf("times %+v", x)
			}
		})
	}
}

func TestSimScriptTransferGuardAndPressDigits(t *testing.T) {
	spec := transferAgent("+14155550100", switchboardv1.TransferOptions{})
	spec.Script = append([]switchboardv1.ScriptStep{{PressDigits: &switchboardv1.PressDigitsStep{Digits: "2"}}}, spec.Script...)
	r := scriptReq("+14155551234", spec)
	c := New(DefaultTimings())
	c.GuardTransfers(func(telephony.Request) telephony.TransferGuard {
		return func(_ context.Context, to string) error { return errors.New(to + " is on the do-not-call list") }
	})
	p := progress(t, c, r, placedAt.Add(time.Hour))
	if p.Transfer == nil || p.Transfer.Result != switchboardv1.TransferNotAllowed || !strings.Contains(p.Transfer.Detail, "do-not-call") {
		t.Fatalf("transfer %+v, want not_allowed by the guard", p.Transfer)
	}
	turns, err := c.Transcript(context.Background(), r, p)
	if err != nil {
		t.Fatal(err)
	}
	if turns[0].Text != "pressed 2" || !turns[0].Note || !strings.HasSuffix(texts(turns), "agent: We are back.\n") {
		t.Errorf("transcript:\n%s", texts(turns))
	}
}

func TestSimScriptTransferRecordingHoldsThePerson(t *testing.T) {
	r := scriptReq("+14155551234", transferAgent("+14155550100", switchboardv1.TransferOptions{Method: switchboardv1.TransferByBridge}))
	c := New(DefaultTimings())
	p := progress(t, c, r, placedAt.Add(time.Hour))
	turns, err := c.Transcript(context.Background(), r, p)
	if err != nil {
		t.Fatal(err)
	}
	pcm := recordingPCM(t, c, r, p)
	var person int
	for _, tr := range turns {
		if personTurn(tr) {
			person++
			if hz := pitchAt(pcm, tr.Start, tr.End); hz < personHz-30 || hz > personHz+30 {
				t.Errorf("the person's line is at %.0f Hz, want %.0f", hz, personHz)
			}
		}
	}
	if person != 1 {
		t.Fatalf("%d person turns in:\n%s", person, texts(turns))
	}
}

func recordingPCM(t *testing.T, c *Carrier, r telephony.Request, p telephony.Progress) []int16 {
	t.Helper()
	rc, err := c.Recording(context.Background(), r, p)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	wav, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	raw := wav[audio.HeaderSize:]
	pcm := make([]int16, len(raw)/2)
	for i := range pcm {
		pcm[i] = int16(uint16(raw[2*i]) | uint16(raw[2*i+1])<<8)
	}
	return pcm
}

// pitchAt is the tone's frequency between from and to, by its zero
// crossings.
func pitchAt(pcm []int16, from, to time.Duration) float64 {
	a, b := min(samples(from), len(pcm)), min(samples(to), len(pcm))
	crossings := 0
	for i := a + 1; i < b; i++ {
		if (pcm[i-1] < 0) != (pcm[i] < 0) {
			crossings++
		}
	}
	if b <= a {
		return 0
	}
	return float64(crossings) / 2 / (float64(b-a) / SampleRate)
}
