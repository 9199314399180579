package engine

import (
	"cmp"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/internal/understand"
)

// decide makes a decision of a (keys or speech) for g, as of now (for
// relative dates: "tomorrow").
func (g *Gather) decide(a answer, now time.Time) decision {
	var value string
	var ok bool
	if a.keys != nil {
		value, ok = g.decideKeys(a.keys.digits.String())
	} else if a.said.err == nil && a.said.confidence >= g.MinConfidence {
		// A doubtful answer is asked again: a wrong value is worse.
		value, ok = g.decideSpeech(a.said.text, now)
	}
	if !ok {
		return decision{branch: BranchNoMatch}
	}
	d := decision{value: value, next: g.Next, matched: true}
	for _, c := range g.Choices {
		if c.Value == value {
			d.branch, d.next = c.Value, cmp.Or(c.Next, g.Next)
		}
	}
	return d
}

// decideKeys reads keyed digits: the choice they select, or the captured
// value (numbers, digits, 1 for yes and 2 or 0 for no).
func (g *Gather) decideKeys(digits string) (string, bool) {
	switch {
	case g.keyedDigits():
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

// decideSpeech reads what the callee said: the choice it matches, or the
// value of the capture type (package understand).
func (g *Gather) decideSpeech(text string, now time.Time) (string, bool) {
	if g.Choices != nil {
		choices := make([]understand.Choice, len(g.Choices))
		for i, c := range g.Choices {
			choices[i] = understand.Choice{Value: c.Value, Phrases: append([]string{c.Value}, c.Phrases...)}
		}
		return understand.Match(text, choices)
	}
	switch g.Capture {
	case CaptureNumber:
		n, ok := understand.Number(text)
		return strconv.FormatFloat(n, 'f', -1, 64), ok
	case CaptureDigits:
		return understand.Digits(text)
	case CaptureDate:
		d, ok := understand.Date(text, now)
		return d.Format(time.DateOnly), ok
	case CaptureTime:
		c, ok := understand.Time(text)
		return c.String(), ok
	case CaptureYesNo:
		yes, ok := understand.YesNo(text)
		if yes {
			return "yes", ok
		}
		return "no", ok
	case CaptureText:
		return text, text != ""
	}
	return "", false
}
