package sip

import (
	"testing"
	"time"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony"
)

// A transfer step becomes the engine's transfer: its target filled from
// the call's variables, the CRD's defaults for what is unset, the hold
// line (and, warm, the whisper) spoken with variables filled.
func TestRenderTransferSteps(t *testing.T) {
	agent := &switchboardv1.Agent{Spec: switchboardv1.AgentSpec{
		TransferDestinations: []string{"+1415*"},
		Script: []switchboardv1.ScriptStep{
			{Transfer: &switchboardv1.TransferStep{To: "{{manager}}", Next: "sorry"}},
			{Transfer: &switchboardv1.TransferStep{To: "+14155550100", TransferOptions: switchboardv1.TransferOptions{
				Mode: switchboardv1.TransferWarm, RingTimeoutSeconds: 20, HoldLine: "One moment, {{name}}.",
				Whisper: "{{name}} about order {{order}}.", AcceptDigit: "9", AcceptTimeoutSeconds: 5}}},
			{Transfer: &switchboardv1.TransferStep{To: "{{nobody}}"}},
			{ID: "sorry", Say: "Sorry."},
		}}}
	r := &ScriptRenderer{Speaker: lengthSpeaker{}}
	spec, err := r.Render(t.Context(), telephony.Request{Agent: agent,
		Variables: map[string]any{"manager": "+14155550111", "name": "Ada", "order": 42}})
	if err != nil {
		t.Fatal(err)
	}
	cold := spec.Script[0].Transfer
	if cold == nil || cold.To != "+14155550111" || cold.Next != "sorry" || cold.Mode != switchboardv1.TransferCold ||
		cold.RingTimeout != 30*time.Second || cold.HoldText != switchboardv1.DefaultTransferHoldLine || len(cold.Hold) != len(switchboardv1.DefaultTransferHoldLine) ||
		cold.Whisper != nil || cold.WhisperText != "" {
		t.Errorf("cold transfer with defaults = %+v", cold)
	}
	warm := spec.Script[1].Transfer
	if warm == nil || warm.Mode != switchboardv1.TransferWarm || warm.RingTimeout != 20*time.Second ||
		warm.HoldText != "One moment, Ada." || len(warm.Hold) != len("One moment, Ada.") ||
		warm.WhisperText != "Ada about order 42." || len(warm.Whisper) != len("Ada about order 42.") ||
		warm.AcceptDigit != "9" || warm.AcceptTimeout != 5*time.Second {
		t.Errorf("warm transfer = %+v", warm)
	}
	// A missing variable does not fail the call: the placeholder stays,
	// and the guard refuses it (not_allowed) if the step ever runs.
	if missing := spec.Script[2].Transfer; missing == nil || missing.To != "{{nobody}}" {
		t.Errorf("transfer to a missing variable = %+v, want its placeholder kept", missing)
	}
}

// The conversation's transfer options: spoken lines, and a whisper that
// says {{summary}} left for the conversation to fill and speak.
func TestRenderConversationTransfer(t *testing.T) {
	conv := &switchboardv1.Conversation{Transfer: &switchboardv1.ConversationTransfer{
		TransferOptions: switchboardv1.TransferOptions{Mode: switchboardv1.TransferWarm,
			Whisper: "{{name}} called: {{summary}}"}}}
	r := &ScriptRenderer{Speaker: lengthSpeaker{}}
	req := telephony.Request{Agent: &switchboardv1.Agent{Spec: switchboardv1.AgentSpec{Conversation: conv}},
		Variables: map[string]any{"name": "Ada"}}
	tr, err := r.ConversationTransfer(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if tr == nil || tr.To != "" || tr.WhisperText != "Ada called: {{summary}}" || tr.Whisper != nil ||
		tr.HoldText != switchboardv1.DefaultTransferHoldLine || tr.AcceptDigit != "1" || tr.AcceptTimeout != 15*time.Second {
		t.Errorf("conversation transfer = %+v", tr)
	}
	conv.Transfer = nil
	if tr, err := r.ConversationTransfer(t.Context(), req); tr != nil || err != nil {
		t.Errorf("without a transfer: %+v, %v; want nil", tr, err)
	}
}
