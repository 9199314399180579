package conversation

import (
	"strings"
	"time"
)

// TurnTaking is when the callee's turn ends, what interrupts the agent and
// when a silent callee is reminded (the Agent's spec.conversation.turnTaking).
type TurnTaking struct {
	// MinEndpointing is the silence after the callee's voice ends before
	// their turn does; MaxEndpointing replaces it when what they said
	// sounds unfinished. Both count from the end of the voice, so the
	// silence that ended the utterance counts too.
	MinEndpointing, MaxEndpointing time.Duration
	// MinInterruption is how long the callee must speak over the agent to
	// cut it off; a recognized utterance that is no backchannel cuts it
	// off too, however short.
	MinInterruption time.Duration
	// Backchannels never interrupt ("uh-huh", "yeah", "okay").
	Backchannels []string
	// ReminderAfter of silence after the agent's turn asks for a
	// reminder, at most ReminderMax times in a row (0: never); after the
	// last the agent hangs up (inactivity).
	ReminderAfter time.Duration
	ReminderMax   int
}

// DefaultTurnTaking are the defaults the Agent's CRD gives: LiveKit's
// endpointing (0.5 s, 3 s), a half-second interruption, Retell's
// reminder (10 s, once).
func DefaultTurnTaking() TurnTaking {
	return TurnTaking{MinEndpointing: 500 * time.Millisecond, MaxEndpointing: 3 * time.Second,
		MinInterruption: 500 * time.Millisecond, Backchannels: DefaultBackchannels,
		ReminderAfter: 10 * time.Second, ReminderMax: 1}
}

// DefaultBackchannels are Vapi's acknowledgement phrases: said alone
// while the agent speaks, they do not interrupt it.
var DefaultBackchannels = []string{"uh-huh", "uh huh", "mhm", "mm-hmm", "hmm", "yeah", "yes", "yep", "okay", "ok",
	"right", "sure", "i see", "got it", "alright", "all right"}

// unfinishedEndings are last words after which a speaker usually goes on.
var unfinishedEndings = map[string]bool{"and": true, "but": true, "or": true, "so": true, "because": true,
	"um": true, "uh": true, "er": true, "the": true, "a": true, "an": true, "to": true, "with": true,
	"my": true, "is": true, "of": true, "for": true, "if": true, "then": true, "like": true}

// endpointing is the silence to wait after text before the callee's turn
// ends.
func (t TurnTaking) endpointing(text string) time.Duration {
	words := strings.Fields(normalize(text))
	if len(words) > 0 && unfinishedEndings[words[len(words)-1]] && !strings.ContainsAny(lastRune(text), ".?!") {
		return max(t.MaxEndpointing, t.MinEndpointing)
	}
	return t.MinEndpointing
}

// backchannel reports whether text is only a backchannel.
func (t TurnTaking) backchannel(text string) bool {
	n := normalize(text)
	if n == "" {
		return false
	}
	for _, b := range t.Backchannels {
		if n == normalize(b) {
			return true
		}
	}
	return false
}

// normalize lowercases text and drops punctuation but hyphens and spaces.
func normalize(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '\'':
			b.WriteRune(r)
		case r == ' ', r == '\t':
			b.WriteRune(' ')
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

func lastRune(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	return s[len(s)-1:]
}
