package conversation

import (
	"strings"
	"testing"
)

func TestSentencesCutsAStreamedAnswerWhereTheVoiceCanStart(t *testing.T) {
	for _, tc := range []struct {
		name   string
		chunks []string
		want   []string
	}{
		{"sentences as they complete", []string{"Hello there. How", " are you? I'm", " fine."},
			[]string{"Hello there.", "How are you?", "I'm fine."}},
		{"the first clause goes early", []string{"Thanks for calling the clinic, we have", " a slot on Friday, at nine."},
			[]string{"Thanks for calling the clinic,", "we have a slot on Friday, at nine."}},
		{"a short first clause waits", []string{"Yes, of course. Bye."}, []string{"Yes, of course.", "Bye."}},
		{"decimals stay whole", []string{"It costs 4.50 dollars."}, []string{"It costs 4.50 dollars."}},
		{"a thought is never spoken", []string{"<think>the user wants", " a time</think>Nine o'clock. ", "Bye."},
			[]string{"Nine o'clock.", "Bye."}},
		{"an unclosed thought is dropped", []string{"Sure. <think>hmm"}, []string{"Sure."}},
		{"line breaks end a piece", []string{"Options:\n1 sales\n2 support"}, []string{"Options:", "1 sales", "2 support"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s sentences
			var got []string
			for _, c := range tc.chunks {
				got = append(got, s.add(c)...)
			}
			if rest := s.flush(); rest != "" {
				got = append(got, rest)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("pieces = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestEndpointingWaitsLongerAfterUnfinishedWords(t *testing.T) {
	tt := DefaultTurnTaking()
	if got := tt.endpointing("I'd like a table for"); got != tt.MaxEndpointing {
		t.Errorf("after 'for': %s, want the max delay", got)
	}
	if got := tt.endpointing("a table for four"); got != tt.MinEndpointing {
		t.Errorf("after a finished phrase: %s, want the min delay", got)
	}
	if !tt.backchannel("Uh-huh.") || tt.backchannel("uh-huh, but no") {
		t.Error("backchannel: only the phrase alone is one")
	}
}
