package sip

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/engine"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts"
)

// summaryVar is the whisper's placeholder for the model's summary of the
// call, filled by the conversation when it transfers.
const summaryVar = "summary"

// transferStep renders a script's transfer step. Its target's {{name}} is
// filled from the call's variables when the call is dialed; a variable
// that is missing, or a value that is not an E.164 number, does not fail
// the call: the transfer fails not_allowed when the step runs (the guard
// refuses what it cannot dial, saying why) and the script goes on at next,
// as it does for any failed transfer, so a branch never taken costs
// nothing and the callee is never dropped.
func (r *ScriptRenderer) transferStep(ctx context.Context, st *switchboardv1.TransferStep, l lines) (engine.Step, error) {
	t, err := transferOptions(ctx, st.TransferOptions, l, false)
	if err != nil {
		return engine.Step{}, err
	}
	t.To, t.Next = fillNumber(st.To, l.vars), st.Next
	// No Text: the engine writes the transfer and its outcome into the
	// transcript when it runs.
	return engine.Step{Transfer: t}, nil
}

// ConversationTransfer prepares the transfer options of req's
// conversation (its transfer_call tool and a Retell server's
// transfer_number): the hold line and whisper spoken in the agent's voice
// with the call's variables filled. To is left to the request. A whisper
// that says {{summary}} is not spoken here: WhisperText keeps the
// placeholder for the conversation to fill with the model's summary and
// speak. Nil when the agent's conversation sets no transfer (the
// conversation's transfers are then refused).
func (r *ScriptRenderer) ConversationTransfer(ctx context.Context, req telephony.Request) (*engine.Transfer, error) {
	if req.Agent == nil || req.Agent.Spec.Conversation == nil || req.Agent.Spec.Conversation.Transfer == nil {
		return nil, nil
	}
	t, err := transferOptions(ctx, req.Agent.Spec.Conversation.Transfer.TransferOptions, r.lines(req), true)
	if err != nil {
		return nil, fmt.Errorf("conversation transfer: %w", err)
	}
	return t, nil
}

// transferOptions renders o with the CRD's defaults: the hold line always
// (a refused REFER falls back to a bridge, which holds), the whisper for
// warm transfers only. summaryLater keeps a whisper's {{summary}} for the
// conversation.
func transferOptions(ctx context.Context, o switchboardv1.TransferOptions, l lines, summaryLater bool) (*engine.Transfer, error) {
	o = o.WithDefaults()
	t := &engine.Transfer{Mode: o.Mode, Method: o.Method, ShowCalleeAsCaller: o.ShowCalleeAsCaller,
		RingTimeout: time.Duration(o.RingTimeoutSeconds) * time.Second, AcceptDigit: o.AcceptDigit,
		AcceptTimeout: time.Duration(o.AcceptTimeoutSeconds) * time.Second}
	hold, err := l.say(ctx, o.HoldLine)
	if err != nil {
		return nil, fmt.Errorf("hold line: %w", err)
	}
	t.Hold, t.HoldText = hold.Audio, hold.Text
	if t.Mode != switchboardv1.TransferWarm {
		return t, nil
	}
	whisper := o.Whisper
	if summaryLater && slices.Contains(tts.Placeholders(whisper), summaryVar) {
		vars := maps.Clone(l.vars)
		if vars == nil {
			vars = map[string]any{}
		}
		vars[summaryVar] = "{{" + summaryVar + "}}"
		t.WhisperText = tts.Fill(whisper, vars)
		return t, nil
	}
	said, err := l.say(ctx, whisper)
	if err != nil {
		return nil, fmt.Errorf("whisper: %w", err)
	}
	t.Whisper, t.WhisperText = said.Audio, said.Text
	return t, nil
}

// fillNumber fills a transfer target's placeholder from vars; a missing
// variable leaves the placeholder, which the guard then refuses by name.
func fillNumber(to string, vars map[string]any) string {
	for _, name := range tts.Placeholders(to) {
		if v, ok := vars[name]; !ok || v == nil {
			return to
		}
	}
	return tts.Fill(to, vars)
}
