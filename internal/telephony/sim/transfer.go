package sim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/conversation"
	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts"
)

// Transfers on the simulated carrier (see the package comment).
//
// A transfer (a script's transfer step, a conversation's transfer_call or
// transfer_number) first asks the guard (GuardTransfers; by default the
// agent's transferDestinations): a refusal is not_allowed and nothing is
// dialed. Then the person's number decides, by its last four digits, as
// the carrier's own plan:
//
//	0001  busy (486 Busy Here)
//	0002  no_answer: nobody answers within ringTimeoutSeconds (simulated
//	      quickly; a REFER's NOTIFY never comes)
//	0003  the trunk refuses REFER (405): a cold refer transfer bridges
//	      instead, and the person answers
//	0004  the person refuses: a warm transfer is declined after the
//	      whisper, a cold one refused (603 Decline)
//	0005  failed: the call to the person cannot be placed (503)
//	other the person answers and says "Hello, this is <number>. I'll take
//	      it from here." (the recording's third pitch)
//
// An answered cold transfer by refer is transferred (call_transfer); by
// bridge, or warm, it is bridged (transfer_bridged) with a short second
// leg: the person's line. The callee hears the hold line meanwhile
// (bridge, warm). The transcript notes the transfer, its outcome is the
// Call's status.transfer, and a failed one gives the call back to the
// agent: a script goes on at the step's next (or the following step), a
// conversation's model is told why.

// The person's number plan, by its last four digits.
const (
	personBusy     = "0001"
	personNoAnswer = "0002"
	personNoRefer  = "0003"
	personRefuses  = "0004"
	personFails    = "0005"
)

const (
	// transferRing is how long the simulated person's phone rings (and a
	// no_answer's "ring timeout" lasts) in a conversation.
	transferRing = 200 * time.Millisecond
	// personHz is the person's pitch in the recording.
	personHz = 550.0
	// personPrefix starts the transcript note of the person's line.
	personPrefix = "(the person at "
)

// GuardTransfers sets what decides a call's transfers (the agent's
// transferDestinations and the number lists); without it only the
// agent's transferDestinations are checked. Call it before the first call.
func (c *Carrier) GuardTransfers(guard func(req telephony.Request) telephony.TransferGuard) {
	c.guard = guard
}

// transferGuard is the call's guard.
func (c *Carrier) transferGuard(req telephony.Request) telephony.TransferGuard {
	if c.guard != nil {
		return c.guard(req)
	}
	return destinationsGuard(req)
}

// allowTransfer is the call's guard bound to ctx, as a script run needs it.
func (c *Carrier) allowTransfer(ctx context.Context, req telephony.Request) func(string) error {
	g := c.transferGuard(req)
	return func(to string) error {
		if g == nil {
			return fmt.Errorf("this agent cannot transfer calls")
		}
		return g(ctx, to)
	}
}

// destinationsGuard allows the agent's transferDestinations: a number, or
// a prefix ending in *.
func destinationsGuard(req telephony.Request) telephony.TransferGuard {
	return func(_ context.Context, to string) error {
		if req.Agent != nil {
			for _, d := range req.Agent.Spec.TransferDestinations {
				if d == to || strings.HasSuffix(d, "*") && strings.HasPrefix(to, strings.TrimSuffix(d, "*")) {
					return nil
				}
			}
		}
		return fmt.Errorf("%s is not one of the agent's transfer destinations", to)
	}
}

// transferOpts are a transfer's options with the CRD's defaults.
type transferOpts struct {
	mode   switchboardv1.TransferMode
	method switchboardv1.TransferMethod
	ring   time.Duration
	hold   string
	// whisper is the warm transfer's whisper, {{summary}} kept for the
	// conversation's summary.
	whisper string
}

func withDefaults(o switchboardv1.TransferOptions, vars map[string]any) transferOpts {
	o = o.WithDefaults()
	t := transferOpts{mode: o.Mode, method: o.Method, ring: time.Duration(o.RingTimeoutSeconds) * time.Second,
		hold: tts.Fill(o.HoldLine, vars)}
	withSummary := map[string]any{"summary": "{{summary}}"}
	for k, v := range vars {
		if k != "summary" {
			withSummary[k] = v
		}
	}
	t.whisper = tts.Fill(o.Whisper, withSummary)
	return t
}

// bridges reports whether the transfer dials the person itself (the
// callee then hears the hold line).
func (t transferOpts) bridges(to string) bool {
	return t.method == switchboardv1.TransferByBridge || suffix(to) == personNoRefer
}

// simTransfer is how the transfer to `to` goes by the number plan, refusal
// being the guard's; line is what the person says when answered. Times
// are the caller's to set.
func simTransfer(t transferOpts, to string, refusal error) (out telephony.TransferOutcome, line string) {
	out = telephony.TransferOutcome{To: to, Mode: t.mode, Method: t.method}
	if refusal != nil {
		out.Result, out.Detail = switchboardv1.TransferNotAllowed, refusal.Error()
		return out, ""
	}
	switch suffix(to) {
	case personBusy:
		out.Result, out.SIPStatus, out.Detail = switchboardv1.TransferBusy, 486, "the person's line was busy (486 Busy Here)"
	case personNoAnswer:
		out.Result, out.Detail = switchboardv1.TransferNoAnswer, fmt.Sprintf("nobody answered within %s", t.ring)
		if t.method == switchboardv1.TransferByBridge {
			out.SIPStatus = 487
		}
	case personRefuses:
		out.Result, out.SIPStatus, out.Detail = switchboardv1.TransferRefused, 603, "the person refused the call (603 Decline)"
		if t.mode == switchboardv1.TransferWarm {
			out.Result, out.SIPStatus, out.Detail = switchboardv1.TransferDeclined, 0, "the person hung up on the whisper"
		}
	case personFails:
		out.Result, out.SIPStatus, out.Detail = switchboardv1.TransferFailed, 503, "the call to the person could not be placed (503)"
	default:
		out.Result, out.SIPStatus = switchboardv1.TransferTransferred, 200
		if t.bridges(to) {
			out.Method, out.Result = switchboardv1.TransferByBridge, switchboardv1.TransferBridged
		}
		return out, "Hello, this is " + to + ". I'll take it from here."
	}
	return out, ""
}

// whispered reports whether the person heard the whisper: a warm
// transfer they answered (and accepted or declined).
func whispered(t transferOpts, out telephony.TransferOutcome) bool {
	return t.mode == switchboardv1.TransferWarm &&
		(out.Result == switchboardv1.TransferBridged || out.Result == switchboardv1.TransferDeclined)
}

// whisperNote is the transcript's note of the whisper, summary filling
// its {{summary}}.
func whisperNote(t transferOpts, to, summary string) string {
	return "(whispered to " + to + ": " + strings.TrimSpace(tts.Fill(t.whisper, map[string]any{"summary": summary})) + ")"
}

// transferNote is the transcript's note of a transfer's outcome.
func transferNote(out telephony.TransferOutcome) string {
	if out.Result.Succeeded() {
		return fmt.Sprintf("(transferred to %s: %s, %s by %s)", out.To, out.Result, out.Mode, out.Method)
	}
	return fmt.Sprintf("(the transfer to %s failed: %s: %s)", out.To, out.Result, out.Detail)
}

// personNote is the transcript's turn of the person's line.
func personNote(to, line string) string { return personPrefix + to + ": \"" + line + "\")" }

// personTurn reports whether t is the person's line.
func personTurn(t telephony.Turn) bool {
	return t.Speaker == agent && t.Note && strings.HasPrefix(t.Text, personPrefix)
}

// lineTurn is a turn the simulated line adds to a conversation's
// transcript (a transfer's hold line, the person's line), with when it
// happened, to be put among the loop's entries.
type lineTurn struct {
	at   time.Time
	turn telephony.Turn
}

// Transfer hands the callee to the person by the number plan, with the
// conversation's transfer options: the guard first, then the hold line
// (when it bridges) while the person's phone rings, then the person's
// line when answered (a bridged transfer's second leg). The callee waits
// meanwhile, saying nothing.
func (l *simLine) Transfer(ctx context.Context, req conversation.TransferRequest) conversation.TransferResult {
	var opts switchboardv1.TransferOptions
	if c := l.plan.req.Agent.Spec.Conversation; c != nil && c.Transfer != nil {
		opts = c.Transfer.TransferOptions
	}
	t := withDefaults(opts, l.plan.req.Variables)
	refusal := errors.New("this agent cannot transfer calls")
	if l.guard != nil {
		refusal = l.guard(ctx, req.Number)
	}
	out, line := simTransfer(t, req.Number, refusal)
	out.RequestedAt = time.Now()
	l.holding.Store(true)
	defer l.holding.Store(false)
	if out.Result != switchboardv1.TransferNotAllowed {
		ring := transferRing
		if t.bridges(req.Number) {
			ring = max(ring, l.timing.speaking(t.hold))
			l.addTurn(telephony.Turn{Speaker: agent, Text: t.hold}, out.RequestedAt, l.timing.speaking(t.hold))
		}
		if !sleepCtx(ctx, ring) {
			return conversation.TransferResult{Result: string(switchboardv1.TransferFailed), Detail: "the call ended"}
		}
	}
	if whispered(t, out) {
		l.addTurn(telephony.Turn{Speaker: agent, Text: whisperNote(t, req.Number, req.Summary), Note: true}, time.Now(), 0)
	}
	if line != "" {
		out.ConnectedAt = time.Now()
		leg := l.timing.speaking(line)
		l.addTurn(telephony.Turn{Speaker: agent, Text: personNote(req.Number, line), Note: true}, out.ConnectedAt, leg)
		if out.Result == switchboardv1.TransferBridged {
			sleepCtx(ctx, leg)
			out.SecondLeg = time.Since(out.ConnectedAt)
		}
	}
	l.xmu.Lock()
	l.transfer = &out
	l.xmu.Unlock()
	return conversation.TransferResult{Connected: out.Result.Succeeded(), Reason: out.DisconnectionReason(),
		Result: string(out.Result), Detail: out.Detail}
}

// addTurn keeps a turn of the line's, lasting d from at.
func (l *simLine) addTurn(t telephony.Turn, at time.Time, d time.Duration) {
	t.Start, t.End = offset(l.answeredAt, at), offset(l.answeredAt, at.Add(d))
	l.xmu.Lock()
	l.extra = append(l.extra, lineTurn{at: at, turn: t})
	l.xmu.Unlock()
}

// sleepCtx waits d; false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
