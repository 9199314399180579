package speech

import "strings"

// cleanHypothesis drops PocketSphinx's filler and noise tokens ("<sil>",
// "[NOISE]", "++breath++") and its alternate-pronunciation marks
// ("the(2)") from a hypothesis.
func cleanHypothesis(hyp string) string {
	var words []string
	for _, w := range strings.Fields(hyp) {
		if w, ok := spokenWord(w); ok {
			words = append(words, w)
		}
	}
	return strings.Join(words, " ")
}

// spokenWord is a PocketSphinx token as a word of the transcript, without
// its alternate-pronunciation mark; false for a filler or noise token
// (silence, sentence bounds, noises), for a grammar's null transitions,
// which its segments have as "(NULL)", and for the check grammar's phone
// words.
func spokenWord(token string) (string, bool) {
	if token == "" || strings.ContainsRune("<[(", rune(token[0])) || strings.HasPrefix(token, "++") ||
		strings.HasPrefix(token, phoneWordPrefix) {
		return "", false
	}
	if i := strings.IndexByte(token, '('); i > 0 {
		token = token[:i]
	}
	return token, true
}
