package speech

import (
	"slices"
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

// fillerWords are the hesitations and politeness a callee puts around an
// answer ("um, four", "support please"). A larger list of common words was
// measured worse: short filler words then absorb the answer itself.
var fillerWords = strings.Fields(`um uh please`)

// hintGrammar is a JSGF grammar for constrained recognition: exactly one of
// the hinted phrases, with filler words before and after it. One phrase,
// not a sequence: with "one or more phrases" the decoder filled the noise
// before an answer with extra phrases ("yeah no thanks" for "no thanks"),
// and a gather step wants one answer. known says whether the engine's
// dictionary has a word: a phrase with an unknown word is left out (the
// decoder refuses a grammar that names it). It returns "" when no phrase
// is left.
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
		"public <utterance> = <filler>* <phrase> <filler>* ;\n" +
		"<phrase> = " + strings.Join(phrases, " | ") + " ;\n" +
		"<filler> = " + strings.Join(fillers, " | ") + " ;\n"
}

// checkGrammar is the hint grammar in which the phrase competes with a
// phone loop (a word of one phone per phone of the model, phoneWords):
// before and after the phrase, for the words a callee says around an
// answer ("there will be four of us"), and for the whole utterance, for
// an answer that is none of the phrases. A second decoding of the same
// audio with it tells a sure answer from a forced one (verified).
func checkGrammar(hintGrammar string) string {
	if hintGrammar == "" {
		return ""
	}
	var garbage []string
	for _, p := range phones {
		garbage = append(garbage, phoneWord(p))
	}
	return strings.Replace(hintGrammar, "public <utterance> = <filler>* <phrase> <filler>* ;",
		"public <utterance> = <filler>* <garbage>+ <filler>* | <around> <phrase> <around> ;\n"+
			"<around> = <filler>* | <filler>* <garbage>+ <filler>* ;\n"+
			"<garbage> = "+strings.Join(garbage, " | ")+" ;", 1)
}

// trimFillers drops from a constrained hypothesis the filler words the
// hints' grammar allowed around the phrase: they are the grammar's
// tolerance of hesitations, and the decoder puts them in whether or not
// the callee hesitated, so the transcript would show words nobody said.
// A filler that is a word of one of the phrases is kept.
func trimFillers(text string, hints []string) string {
	filler := grammarFiller(hints)
	var kept []string
	for _, w := range strings.Fields(text) {
		if !filler(w) {
			kept = append(kept, w)
		}
	}
	return strings.Join(kept, " ")
}

// trimFillerWords is trimFillers for the words with their offsets.
func trimFillerWords(words []Word, hints []string) []Word {
	filler := grammarFiller(hints)
	var kept []Word
	for _, w := range words {
		if !filler(w.Text) {
			kept = append(kept, w)
		}
	}
	return kept
}

// grammarFiller reports whether a word is one of the hints' grammar's
// fillers and no word of its phrases.
func grammarFiller(hints []string) func(string) bool {
	inPhrase := map[string]bool{}
	for _, h := range hints {
		for _, w := range strings.Fields(normalizePhrase(h)) {
			inPhrase[w] = true
		}
	}
	return func(w string) bool { return slices.Contains(fillerWords, w) && !inPhrase[w] }
}

// phones are the US English model's phones (CMU's set).
var phones = strings.Fields("AA AE AH AO AW AY B CH D DH EH ER EY F G HH IH IY JH K L M N NG OW OY P R S SH T TH UH UW V W Y Z ZH")

// phoneWordPrefix starts the names of the phone loop's words, which
// spokenWord leaves out of transcripts.
const phoneWordPrefix = "_phone_"

func phoneWord(phone string) string { return phoneWordPrefix + strings.ToLower(phone) }

// Confidences of a constrained answer (verified). An answer the check
// also heard is sure; one it heard otherwise, or not at all (the phone
// loop fitted the audio better than any phrase), is a doubt. A check that
// heard a part of the answer is a doubt too: "eighty four" checked as
// "four" was "there will be four of us", but "twenty three" checked as
// "three" was "twenty three".
const (
	confidenceDisputed = 0.5
	confidenceRejected = 0.25
)

// verified weighs the hint grammar's hypothesis by the check grammar's on
// the same audio: how sure the two together are of it.
func verified(hint, check string) float64 {
	switch check {
	case "":
		return confidenceRejected
	case hint:
		return 1
	}
	return confidenceDisputed
}
