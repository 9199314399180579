package callpolicy

import (
	"fmt"
	"strings"
	"unicode/utf8"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/numberlists"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts"
)

// spokenText is one text of an agent's that text-to-speech says, and where
// it is in the Agent.
type spokenText struct {
	where, text string
}

// spokenTexts lists what the agent says: the greeting, say steps, gather
// prompts and the voicemail message it leaves.
func spokenTexts(a *switchboardv1.Agent) []spokenText {
	var texts []spokenText
	if a.Spec.Greeting != "" {
		texts = append(texts, spokenText{"greeting", a.Spec.Greeting})
	}
	for i, st := range a.Spec.Script {
		switch {
		case st.Say != "":
			texts = append(texts, spokenText{fmt.Sprintf("script step %d", i+1), st.Say})
		case st.Gather != nil && st.Gather.Prompt != "":
			texts = append(texts, spokenText{fmt.Sprintf("script step %d's prompt", i+1), st.Gather.Prompt})
		}
	}
	if c := a.Spec.Conversation; c != nil && c.BeginMessage != "" {
		texts = append(texts, spokenText{"conversation's begin message", c.BeginMessage})
	}
	if vm := a.Spec.Voicemail; vm != nil && vm.Action == switchboardv1.VoicemailLeaveMessage {
		texts = append(texts, spokenText{"voicemail message", vm.Message})
	}
	return texts
}

// checkSpokenText refuses a call whose variables would make a text of the
// agent's longer than text-to-speech says (tts.MaxTextLength): the call
// would otherwise fail when its script is prepared, after its trunk slot
// was taken.
func checkSpokenText(a *switchboardv1.Agent, req Request, _ *numberlists.Index) *Rejection {
	for _, t := range spokenTexts(a) {
		n := utf8.RuneCountInString(tts.Fill(t.text, req.Variables))
		if n <= tts.MaxTextLength {
			continue
		}
		return &Rejection{Code: CodeSpokenTextTooLong, Message: fmt.Sprintf(
			"With these variables the agent's %s would be %d characters long, over the %d characters it can say at once; shorten %s.",
			t.where, n, tts.MaxTextLength, strings.Join(tts.Placeholders(t.text), ", "))}
	}
	return nil
}
