package speech

import (
	"strings"
	"unicode"
)

// normalizePhrase lowercases a phrase and keeps letters, digits and
// apostrophes, so "That's right!" and "that's right" are the same phrase.
func normalizePhrase(s string) string {
	fields := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\''
	})
	return strings.Join(fields, " ")
}

// fillerWords absorb what a callee says around the expected phrases ("um",
// "how about", "I need", "please"): without them a grammar of the phrases
// alone forces every word heard into some phrase ("how about wednesday"
// came out as "monday wednesday"). Common short English words, without
// near-homophones of typical answers ("know", "yet").
var fillerWords = strings.Fields(`um uh please`)

// hintGrammar is a JSGF grammar of the hinted phrases and the filler words,
// in any order and number, the phrases weighted above the fillers, for
// constrained recognition. known says whether the engine's dictionary has a
// word: a phrase with an unknown word is left out (the decoder refuses a
// grammar that names it). It returns "" when no phrase is left.
func hintGrammar(hints []string, known func(word string) bool) string {
	seen := map[string]bool{}
	inPhrase := map[string]bool{}
	var phrases []string
	for _, h := range hints {
		p := normalizePhrase(h)
		if p == "" || seen[p] {
			continue
		}
		words := strings.Fields(p)
		ok := true
		for _, w := range words {
			ok = ok && known(w)
		}
		if !ok {
			continue
		}
		seen[p] = true
		phrases = append(phrases, p)
		for _, w := range words {
			inPhrase[w] = true
		}
	}
	if len(phrases) == 0 {
		return ""
	}
	// A filler that is also a phrase's word would let the phrase be heard
	// as filler; leave it to the phrase.
	var fillers []string
	for _, w := range fillerWords {
		if !inPhrase[w] && known(w) {
			fillers = append(fillers, w)
		}
	}
	return "#JSGF V1.0;\ngrammar hints;\n" +
		"public <utterance> = ( <phrase> | <filler> )+ ;\n" +
		"<phrase> = " + strings.Join(phrases, " | ") + " ;\n" +
		"<filler> = " + strings.Join(fillers, " | ") + " ;\n"
}
