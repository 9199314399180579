package analysis

import (
	"strings"
	"time"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts"
	"github.com/switchboard-dev/switchboard/internal/understand"
)

// asking is what the agent's script asks for a field: the prompts of the
// gather steps that take it (their retry prompts included) and their
// choices. A gather step's answer is not always taken during the call: it
// ran out of retries on words it could not match, or the callee answered
// after it gave up, or spoke to a gather that takes keys only; the rules
// then read the transcript for the choices, as the step would have.
type asking struct {
	// prompts are the prompts' words, with the call's variables filled in
	// as the agent said them.
	prompts map[string]bool
	choices []understand.Choice
}

// scriptAsks is what req's agent asks for f; empty without an agent.
func scriptAsks(req telephony.Request, f telephony.Field) asking {
	a := asking{prompts: map[string]bool{}}
	if req.Agent == nil {
		return a
	}
	for _, s := range req.Agent.Spec.Script {
		g := s.Gather
		if g == nil || g.Field != f.Name {
			continue
		}
		for _, p := range []string{g.Prompt, s.Say} {
			a.addPrompt(p, req.Variables)
		}
		for _, r := range []string{retryPrompt(g.NoMatch), retryPrompt(g.NoInput)} {
			a.addPrompt(r, req.Variables)
		}
		for _, c := range g.Choices {
			a.choices = append(a.choices, understand.Choice{Value: c.Value, Phrases: append([]string{c.Value}, c.Phrases...)})
		}
	}
	return a
}

func (a asking) addPrompt(p string, vars map[string]any) {
	if w := words(tts.Fill(p, vars)); w != "" {
		a.prompts[w] = true
	}
}

// asks reports whether an agent's line is one of the prompts.
func (a asking) asks(line string) bool { return a.prompts[words(line)] }

// words is text as its normalized words (understand.Words), one string.
func words(text string) string { return strings.Join(understand.Words(text), " ") }

// read reads f's value in what the callee said: the choice it names when f
// is asked by choices (none named, no value: a choice's field takes no
// other words), else the value of f's type in it (fromText).
func (a asking) read(f telephony.Field, text string, now time.Time) any {
	if len(a.choices) == 0 {
		return fromText(f, text, now)
	}
	value, ok := understand.Match(text, a.choices)
	switch {
	case !ok:
		return nil
	case f.Type == "string":
		return value // as the gather step would have taken it
	}
	return fromText(f, value, now)
}

// retryPrompt is a retry's own prompt ("" when it says the gather's).
func retryPrompt(r *switchboardv1.GatherRetry) string {
	if r == nil {
		return ""
	}
	return r.Prompt
}
