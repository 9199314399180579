package engine

import (
	"time"

	"github.com/switchboard-dev/switchboard/internal/understand"
)

// decide makes a decision of a (keys or speech) for g, as of now (for
// relative dates: "tomorrow"), by the reading the simulated carrier shares
// (understand.Gather).
func (g *Gather) decide(a answer, now time.Time) decision {
	u := understand.Gather{Choices: g.Choices, Capture: g.Capture, Next: g.Next}
	var d understand.Decision
	switch {
	case a.keys != nil:
		d = u.Keys(a.keys.digits.String())
	case a.said.err == nil && a.said.confidence >= g.MinConfidence:
		d = u.Speech(a.said.text, now)
	default:
		// A doubtful answer is asked again: a wrong value is worse.
		d = u.NoMatch()
	}
	return decision{value: d.Value, branch: d.Branch, next: d.Next, matched: d.Matched}
}
