package understand

import "strconv"

// Choice is one of the answers a question accepts: its value and the
// phrases a caller may say for it.
type Choice struct {
	Value   string
	Phrases []string
}

// Match returns the value of the one choice whose phrase the text contains,
// compared word by word after normalization (see Words; numbers up to
// nineteen compare alike in words and digits, since recognizers write
// either), the longest phrase winning where phrases overlap. Nothing
// matched, or phrases of two different choices, is no match: the caller
// should be asked again.
func Match(text string, choices []Choice) (string, bool) {
	var phrases []phrase
	for _, c := range choices {
		if c.Value == "" {
			continue
		}
		for _, p := range c.Phrases {
			phrases = append(phrases, phrase{words: digitWords(Words(p)), value: c.Value})
		}
	}
	return only(scan(digitWords(Words(text)), phrases))
}

// digitWords writes the small numbers among words in digits.
func digitWords(words []string) []string {
	for i, w := range words {
		if v, ok := ones[w]; ok {
			words[i] = strconv.Itoa(v)
		} else if v, ok := teens[w]; ok {
			words[i] = strconv.Itoa(v)
		}
	}
	return words
}
