package analysis

import (
	"fmt"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/telephony"
)

// BenchmarkRulesLongCall analyzes a two-hour call's transcript (a turn
// every 4 s: 1,800 turns, half of them the callee's) with five fields:
// the rules' cost grows with the transcript, and stays small.
func BenchmarkRulesLongCall(b *testing.B) {
	var turns []telephony.Turn
	for i := range 900 {
		turns = append(turns,
			telephony.Turn{Speaker: "agent", Text: fmt.Sprintf("Question %d: how many people will be dining?", i)},
			telephony.Turn{Speaker: "callee", Text: "Um, there will be four of us, at half past seven tomorrow."})
	}
	p := answered(2 * time.Hour)
	p.EndedAt = &endedAt
	req := telephony.Request{Fields: booking}
	for b.Loop() {
		Analyze(req, p, turns)
	}
}
