// Package understand turns what a caller said, as a recognizer wrote it down,
// into values: numbers ("twenty three", "there will be four of us", "4"),
// yes or no ("yeah sure", "that's not right"), dates and times relative to a
// given moment ("next friday", "december third", "three thirty pm"), digit
// strings ("one two three four") and one of a set of choices by their phrases.
//
// Both the call-time script interpreter (a gather step) and the post-call
// analysis use it, so a callee's answer means the same thing to both. Every
// function is pure and deterministic. When the text holds no value, or more
// than one that disagree, the answer is "no value" (ok false): a wrong value
// would be worse than asking again or leaving a field empty.
package understand

import (
	"strings"
	"unicode"
)

// fillers are hesitation sounds a recognizer writes down; they carry no
// meaning and are dropped before anything is matched.
var fillers = map[string]bool{
	"um": true, "umm": true, "uh": true, "uhh": true, "er": true, "erm": true,
	"ah": true, "hmm": true, "hm": true, "mm": true, "mmm": true,
}

// Words normalizes text into lowercase words: punctuation other than a
// number's decimal point or a clock's colon is dropped, apostrophes are
// removed ("that's" is "thats", "don't" is "dont"), hyphens separate words,
// "a.m."/"p.m." become "am"/"pm", digits are split from letters that follow
// them ("3pm" is "3 pm", "3rd" is "3 rd") and fillers such as "um" are left
// out. Phrases and callers' answers are compared in this form.
func Words(text string) []string {
	text = strings.ToLower(text)
	text = strings.NewReplacer("a.m.", " am ", "p.m.", " pm ", "’", "", "'", "").Replace(text)
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) == 0 {
			return
		}
		w := strings.TrimRight(string(cur), ".:")
		cur = cur[:0]
		if w != "" && !fillers[w] {
			words = append(words, w)
		}
	}
	runes := []rune(text)
	for i, r := range runes {
		next := rune(0)
		if i+1 < len(runes) {
			next = runes[i+1]
		}
		switch classify(cur, r, next) {
		case appendRune:
			cur = append(cur, r)
		case splitBefore:
			flush()
			cur = append(cur, r)
		case separate:
			flush()
		}
	}
	flush()
	return words
}

const (
	separate    = iota // r ends the word
	appendRune         // r belongs to the word
	splitBefore        // r starts a new word (a letter after digits or a digit after letters)
	dropRune           // r is left out of a word that goes on (the comma in 1,000)
)

// classify says what r does to the word cur being built; next follows r.
func classify(cur []rune, r, next rune) int {
	afterDigit := len(cur) > 0 && isDigitRune(cur[len(cur)-1])
	afterLetter := len(cur) > 0 && unicode.IsLetter(cur[len(cur)-1])
	switch {
	case unicode.IsLetter(r) && afterDigit, unicode.IsDigit(r) && afterLetter:
		return splitBefore
	case unicode.IsLetter(r) || unicode.IsDigit(r):
		return appendRune
	case (r == '.' || r == ':') && afterDigit && isDigitRune(next):
		// 3.5 and 7:45 stay one token.
		return appendRune
	case r == ',' && afterDigit && isDigitRune(next):
		return dropRune
	}
	return separate
}

func isDigitRune(r rune) bool { return r >= '0' && r <= '9' }

// phrase is a normalized phrase and what it stands for.
type phrase struct {
	words []string
	value string
}

// scan walks words left to right and, at each position, takes the longest
// phrase that starts there, so "not sure" wins over "sure" and "that's not
// right" over "right". It returns the values of the phrases found, in order.
func scan(words []string, phrases []phrase) []string {
	var found []string
	for i := 0; i < len(words); {
		best := -1
		for p, ph := range phrases {
			if len(ph.words) == 0 || i+len(ph.words) > len(words) {
				continue
			}
			if equalWords(words[i:i+len(ph.words)], ph.words) && (best < 0 || len(ph.words) > len(phrases[best].words)) {
				best = p
			}
		}
		if best < 0 {
			i++
			continue
		}
		found = append(found, phrases[best].value)
		i += len(phrases[best].words)
	}
	return found
}

func equalWords(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// only returns the single distinct value in found, ignoring empty values
// (phrases that only stop a shorter phrase from matching), or false.
func only(found []string) (string, bool) {
	var v string
	for _, f := range found {
		switch {
		case f == "":
		case v == "":
			v = f
		case f != v:
			return "", false
		}
	}
	return v, v != ""
}
