package understand

import (
	"testing"
	"time"
)

// BenchmarkAnswer reads one typical answer each way a gather step or the
// analysis may: the cost of understanding one utterance.
func BenchmarkAnswer(b *testing.B) {
	now := time.Date(2026, time.November, 26, 15, 0, 0, 0, time.UTC)
	choices := []Choice{{Value: "yes", Phrases: []string{"yes", "yeah", "sure", "that's right"}},
		{Value: "no", Phrases: []string{"no", "nope", "no thanks"}}}
	for b.Loop() {
		Number("um, there will be twenty three of us")
		YesNo("yeah sure, that's right")
		Date("next friday at three thirty pm", now)
		Time("next friday at three thirty pm")
		Digits("my pin is one two three four")
		Match("um, no thanks", choices)
	}
}
