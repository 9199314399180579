package engine

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/emiago/diago"

	"github.com/switchboard-dev/switchboard/internal/conversation"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts"
)

// Transfer asks for the callee to be handed to a person: a script's
// transfer step, a conversation's transfer_call or transfer_number.
type Transfer struct {
	// To is the person's number, E.164.
	To     string
	Mode   switchboardv1.TransferMode
	Method switchboardv1.TransferMethod
	// RingTimeout bounds the person's ringing (and a REFER's wait for its
	// final NOTIFY); 30 s when zero.
	RingTimeout time.Duration
	// ShowCalleeAsCaller sends the callee's number as the caller ID of
	// the call to the person (bridge, warm).
	ShowCalleeAsCaller bool
	// Hold is said to the callee (8 kHz mono 16-bit) while the person's
	// phone rings, again every few seconds (bridge, warm); HoldText is its
	// text for the transcript.
	Hold     []int16
	HoldText string
	// Whisper is said to the person before the callee is connected (warm);
	// WhisperText is its text for the transcript.
	Whisper     []int16
	WhisperText string
	// AcceptDigit is the key the person presses to accept (warm); "yes"
	// or "accept" said counts too. AcceptTimeout bounds the wait after the
	// whisper; 15 s when zero.
	AcceptDigit   string
	AcceptTimeout time.Duration
	// Next is the step a script goes to when the transfer failed ("" is
	// the following step).
	Next string
}

// PressDigits keys Digits to the far end after Delay: RFC 4733 telephone
// events, or SIP INFO on a trunk whose DTMF is "info"; w pauses 500 ms.
type PressDigits struct {
	Digits string
	Delay  time.Duration
}

// Header is a custom SIP header (X-...) sent on the INVITE and on
// transfers.
type Header struct{ Name, Value string }

// transferFunc hands the callee of one answered call to a person and
// returns how it went; it blocks until the transfer connected (and, when
// bridged, until the bridged call ended) or failed, the callee then being
// back with the agent.
type transferFunc func(ctx context.Context, t Transfer) telephony.TransferOutcome

// liveCall is an answered call as a transfer needs it: its dialog, the
// trunk and spec it was placed with, its media and its result.
type liveCall struct {
	e     *Engine
	d     *diago.DialogClientSession
	trunk Trunk
	spec  CallSpec
	m     *callMedia
	res   *Result
}

// transfer is the call's transferFunc: the guard decides, then REFER,
// a bridge or a warm transfer; the outcome goes in the result.
func (lc *liveCall) transfer(ctx context.Context, t Transfer) telephony.TransferOutcome {
	if t.RingTimeout <= 0 {
		t.RingTimeout = 30 * time.Second
	}
	if t.Mode == "" {
		t.Mode = switchboardv1.TransferCold
	}
	if t.Method == "" || t.Mode == switchboardv1.TransferWarm {
		t.Method = switchboardv1.TransferByRefer
		if t.Mode == switchboardv1.TransferWarm {
			t.Method = switchboardv1.TransferByBridge
		}
	}
	out := telephony.TransferOutcome{To: t.To, Mode: t.Mode, Method: t.Method, RequestedAt: time.Now()}
	if err := lc.allowed(ctx, t.To); err != nil {
		out.Result, out.Detail = switchboardv1.TransferNotAllowed, err.Error()
	} else {
		lc.res.note(SpeakerAgent, transferringNote(t))
		switch {
		case t.Mode == switchboardv1.TransferWarm:
			out = lc.warm(ctx, t, out)
		case t.Method == switchboardv1.TransferByBridge:
			out = lc.bridge(ctx, t, out)
		default:
			out = lc.refer(ctx, t, out)
		}
	}
	lc.res.Transfer = &out
	lc.res.note(SpeakerAgent, outcomeNote(out))
	return out
}

// transferringNote is the transcript's note of a transfer's start.
func transferringNote(t Transfer) string {
	how := "by REFER"
	switch {
	case t.Mode == switchboardv1.TransferWarm:
		how = "warm"
	case t.Method == switchboardv1.TransferByBridge:
		how = "by bridge"
	}
	return "(transferring to " + t.To + " " + how + ")"
}

// outcomeNote is the transcript's note of how a transfer ended:
// "(transferred to +1...)", "(transfer to +1... failed: busy, 486)".
func outcomeNote(o telephony.TransferOutcome) string {
	switch o.Result {
	case switchboardv1.TransferTransferred:
		return "(transferred to " + o.To + ")"
	case switchboardv1.TransferBridged:
		return "(bridged to " + o.To + ")"
	}
	why := string(o.Result)
	switch {
	case o.SIPStatus != 0:
		why += ", " + strconv.Itoa(o.SIPStatus)
	case o.Detail != "":
		why += ", " + o.Detail
	}
	if o.Result == switchboardv1.TransferNotAllowed {
		return "(transfer to " + o.To + " refused: " + why + ")"
	}
	return "(transfer to " + o.To + " failed: " + why + ")"
}

// allowed asks the call's guard; no guard allows nothing.
func (lc *liveCall) allowed(ctx context.Context, to string) error {
	if lc.spec.AllowTransfer == nil {
		return errNoTransfers
	}
	return lc.spec.AllowTransfer(ctx, to)
}

// Transfer hands the callee to req.Number with the conversation's
// transfer options (Conversation.Transfer); a line without them, or
// without a transfer function, refuses.
func (l *sipLine) Transfer(ctx context.Context, req conversation.TransferRequest) conversation.TransferResult {
	if l.transfer == nil || l.options == nil {
		return conversation.TransferResult{Result: string(switchboardv1.TransferNotAllowed),
			Detail: "this agent cannot transfer calls"}
	}
	t := *l.options
	t.To = req.Number
	l.whisperSummary(ctx, &t, req.Summary)
	out := l.transfer(ctx, t)
	return conversation.TransferResult{Connected: out.Result.Succeeded(), Reason: out.DisconnectionReason(),
		Result: string(out.Result), Detail: out.Detail}
}

// summaryPlaceholder in a conversation's whisper is the model's summary
// of the call so far.
const summaryPlaceholder = "{{summary}}"

// whisperSummary fills a warm transfer's whisper that holds {{summary}}
// with the model's summary and speaks it in the line's voice (before the
// person is dialed, so that they do not wait for it). A voice that fails
// leaves the whisper the policy rendered, if any.
func (l *sipLine) whisperSummary(ctx context.Context, t *Transfer, summary string) {
	if t.Mode != switchboardv1.TransferWarm || !strings.Contains(t.WhisperText, summaryPlaceholder) {
		return
	}
	t.WhisperText = strings.TrimSpace(strings.ReplaceAll(t.WhisperText, summaryPlaceholder, summary))
	if l.voice == nil {
		return
	}
	if pcm, _, err := tts.SpeakNoting(ctx, l.voice, t.WhisperText); err == nil {
		t.Whisper = pcm
	}
}
