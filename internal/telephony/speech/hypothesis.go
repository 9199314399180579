package speech

import "strings"

// cleanHypothesis drops PocketSphinx's filler and noise tokens ("<sil>",
// "[NOISE]", "++breath++") and its alternate-pronunciation marks
// ("the(2)") from a hypothesis.
func cleanHypothesis(hyp string) string {
	var words []string
	for _, w := range strings.Fields(hyp) {
		if strings.HasPrefix(w, "<") || strings.HasPrefix(w, "[") || strings.HasPrefix(w, "++") {
			continue
		}
		if i := strings.IndexByte(w, '('); i > 0 {
			w = w[:i]
		}
		words = append(words, w)
	}
	return strings.Join(words, " ")
}
