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
		turns = append(turns, e.Turn)
	}
	return turns
}
