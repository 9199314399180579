package sipdial

import (
	"slices"
	"strings"

	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip"
)

// transcript turns the engine's record of a call into turns. A callee's
// turn reporting digits is tied to the gather field they answered, so the
// analysis can fill it.
func transcript(res sip.Result) []telephony.Turn {
	turns := make([]telephony.Turn, 0, len(res.Events))
	tied := map[string]bool{}
	for _, e := range res.Events {
		t := telephony.Turn{Speaker: e.Speaker, Text: e.Text}
		if e.Speaker == "callee" {
			t.Field, t.Digits = gatheredIn(e.Text, res.Digits, tied)
		}
		turns = append(turns, t)
	}
	// Digits the events did not mention still count.
	fields := make([]string, 0, len(res.Digits))
	for f := range res.Digits {
		if !tied[f] && res.Digits[f] != "" {
			fields = append(fields, f)
		}
	}
	slices.Sort(fields)
	for _, f := range fields {
		turns = append(turns, telephony.Turn{Speaker: "callee", Text: "pressed " + res.Digits[f], Field: f, Digits: res.Digits[f]})
	}
	return turns
}

// gatheredIn finds the (first untied) field whose digits a callee event
// reports.
func gatheredIn(text string, digits map[string]string, tied map[string]bool) (field, keyed string) {
	fields := make([]string, 0, len(digits))
	for f := range digits {
		fields = append(fields, f)
	}
	slices.Sort(fields)
	for _, f := range fields {
		if d := digits[f]; d != "" && !tied[f] && strings.Contains(text, d) {
			tied[f] = true
			return f, d
		}
	}
	return "", ""
}
