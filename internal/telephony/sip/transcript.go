package sip

import (
	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/engine"
)

// transcript turns the engine's record of a call into turns. A callee's
// turn of a gather keeps the field it answered and the value it took
// (Digits: the keyed digits, the choice's value or the captured value), so
// the analysis can fill the field, and the branch taken.
func transcript(res engine.Result) []telephony.Turn {
	turns := make([]telephony.Turn, 0, len(res.Events))
	for _, e := range res.Events {
		turns = append(turns, telephony.Turn{Speaker: e.Speaker, Text: e.Text, Field: e.Field, Digits: e.Digits,
			Start: e.Start, End: e.End, Confidence: e.Confidence, Recognizer: e.Recognizer, Branch: e.Branch, Next: e.Next, Mark: e.Mark, Words: e.Words, Note: e.Note})
	}
	return turns
}
