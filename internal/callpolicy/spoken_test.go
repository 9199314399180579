package callpolicy

import (
	"strings"
	"testing"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts"
)

func TestSpokenTextBound(t *testing.T) {
	// "Hello " and "." around the note: a note of 4089 characters makes a
	// text of exactly tts.MaxTextLength.
	fits := strings.Repeat("x", tts.MaxTextLength-len("Hello ."))
	over := fits + "y"
	say := func(text string) switchboardv1.ScriptStep { return switchboardv1.ScriptStep{Say: text} }
	tests := []struct {
		name  string
		spec  switchboardv1.AgentSpec
		note  string
		where string // "" means allowed
	}{
		{"greeting at the limit", switchboardv1.AgentSpec{Greeting: "Hello {{note}}."}, fits, ""},
		{"greeting over", switchboardv1.AgentSpec{Greeting: "Hello {{note}}."}, over, "greeting"},
		{"say step over", switchboardv1.AgentSpec{Script: []switchboardv1.ScriptStep{
			say("Hi."), say("Hello {{ note }}.")}}, over, "script step 2"},
		{"gather prompt over", switchboardv1.AgentSpec{Script: []switchboardv1.ScriptStep{
			{Gather: &switchboardv1.GatherStep{Field: "x", Prompt: "Hello {{note}}."}}}}, over, "script step 1's prompt"},
		{"voicemail message over", switchboardv1.AgentSpec{Voicemail: &switchboardv1.VoicemailSpec{
			Action: switchboardv1.VoicemailLeaveMessage, Message: "Hello {{note}}."}}, over, "voicemail message"},
		{"voicemail not left", switchboardv1.AgentSpec{Voicemail: &switchboardv1.VoicemailSpec{
			Action: switchboardv1.VoicemailHangup, Message: "Hello {{note}}."}}, over, ""},
		{"the variable is not said", switchboardv1.AgentSpec{Greeting: "Hello {{name}}."}, over, ""},
		// Characters, not bytes: 4089 two-byte characters still fit.
		{"counted in characters", switchboardv1.AgentSpec{Greeting: "Hello {{note}}."},
			strings.Repeat("é", len(fits)), ""},
		// A placeholder said many times multiplies the variable.
		{"repeated placeholder", switchboardv1.AgentSpec{Greeting: strings.Repeat("{{note}} ", 5)},
			strings.Repeat("x", 1000), "greeting"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &switchboardv1.Agent{Spec: tt.spec}
			rej := Check(a, Request{Namespace: "org", ToNumber: "+14155551234",
				Variables: map[string]any{"note": tt.note, "name": "Ada"}}, nil)
			if tt.where == "" {
				if rej != nil {
					t.Fatalf("refused: %+v", rej)
				}
				return
			}
			if rej == nil || rej.Code != CodeSpokenTextTooLong {
				t.Fatalf("Check = %+v, want %s", rej, CodeSpokenTextTooLong)
			}
			for _, want := range []string{"agent's " + tt.where + " would be", "over the 4096 characters", "shorten note."} {
				if !strings.Contains(rej.Message, want) {
					t.Errorf("message %q does not say %q", rej.Message, want)
				}
			}
		})
	}
}
