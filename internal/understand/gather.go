package understand

import (
	"cmp"
	"strconv"
	"strings"
	"time"
)

// Capture types of a gather step without choices (Gather.Capture).
const (
	CaptureNumber = "number"
	CaptureDigits = "digits"
	CaptureDate   = "date"
	CaptureTime   = "time"
	CaptureYesNo  = "yes_no"
	CaptureText   = "text"
)

// BranchNoMatch is a Decision's Branch when the answer is none of the
// choices and no value of the capture type.
const BranchNoMatch = "noMatch"

// Gather is what a script's gather step accepts, as far as reading an
// answer goes: the decision the SIP engine makes of the callee's keys and
// words, and the simulated carrier of its simulated callee's, so that both
// branch alike.
type Gather struct {
	// Choices are the answers accepted; nil takes a Capture, or digits.
	Choices []GatherChoice
	// Capture is the type of value taken without Choices: one of the
	// Capture constants, or "" for keyed digits as they are.
	Capture string
	// Next is the ID of the step after an answer (a choice without its
	// own Next, or a captured value); "" goes on in order.
	Next string
}

// GatherChoice is one answer a Gather accepts.
type GatherChoice struct {
	// Value is the answer's value (the field's value, the turn's branch).
	Value string
	// Phrases are what the callee may say for it (Value counts too).
	Phrases []string
	// Digits keyed select it; "" cannot be keyed.
	Digits string
	// Next is the ID of the step to go to; "" is the Gather's Next.
	Next string
}

// Decision is what a Gather made of an answer: Value is what its field
// takes; Branch (a choice's value, or BranchNoMatch) and Next are the
// transcript's and where the script goes.
type Decision struct {
	Value, Branch, Next string
	Matched             bool
}

// KeyedDigits reports whether g takes keyed digits as they are (a gather
// as they were before choices and captures).
func (g Gather) KeyedDigits() bool { return g.Choices == nil && g.Capture == "" }

// Keys decides keyed digits: the choice they select, or the captured
// value (numbers, digits, 1 for yes and 2 or 0 for no).
func (g Gather) Keys(digits string) Decision {
	return g.decided(g.keys(digits))
}

// Speech decides what the callee said, as of now (for relative dates:
// "tomorrow"): the choice it matches, or the value of the capture type.
func (g Gather) Speech(text string, now time.Time) Decision {
	return g.decided(g.speech(text, now))
}

// NoMatch is the decision on an answer that cannot be taken at all (one
// the recognizer doubts, or failed on).
func (g Gather) NoMatch() Decision { return Decision{Branch: BranchNoMatch} }

func (g Gather) decided(value string, ok bool) Decision {
	if !ok {
		return g.NoMatch()
	}
	d := Decision{Value: value, Next: g.Next, Matched: true}
	for _, c := range g.Choices {
		if c.Value == value {
			d.Branch, d.Next = c.Value, cmp.Or(c.Next, g.Next)
		}
	}
	return d
}

func (g Gather) keys(digits string) (string, bool) {
	switch {
	case g.KeyedDigits():
		return digits, true
	case g.Choices != nil:
		for _, c := range g.Choices {
			if c.Digits != "" && c.Digits == digits {
				return c.Value, true
			}
		}
		return "", false
	}
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return "", false
	}
	switch g.Capture {
	case CaptureNumber:
		n, err := strconv.ParseUint(digits, 10, 63)
		return strconv.FormatUint(n, 10), err == nil
	case CaptureDigits:
		return digits, true
	case CaptureYesNo:
		switch digits {
		case "1":
			return "yes", true
		case "0", "2":
			return "no", true
		}
	}
	return "", false
}

func (g Gather) speech(text string, now time.Time) (string, bool) {
	if g.Choices != nil {
		choices := make([]Choice, len(g.Choices))
		for i, c := range g.Choices {
			choices[i] = Choice{Value: c.Value, Phrases: append([]string{c.Value}, c.Phrases...)}
		}
		return Match(text, choices)
	}
	switch g.Capture {
	case CaptureNumber:
		n, ok := Number(text)
		return strconv.FormatFloat(n, 'f', -1, 64), ok
	case CaptureDigits:
		return Digits(text)
	case CaptureDate:
		d, ok := Date(text, now)
		return d.Format(time.DateOnly), ok
	case CaptureTime:
		c, ok := Time(text)
		return c.String(), ok
	case CaptureYesNo:
		yes, ok := YesNo(text)
		if yes {
			return "yes", ok
		}
		return "no", ok
	case CaptureText:
		return text, text != ""
	}
	return "", false
}
