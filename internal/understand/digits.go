package understand

import (
	"strconv"
	"strings"
)

// Digits reads a string of digits spoken one by one or in pairs, as people
// read out a PIN, an account or a phone number: "one two three four",
// "1234", "five five five twenty three", "oh seven", "double five". The
// digits must form one run; words around them ("my pin is ...") are
// ignored, but two runs separated by other words are no value.
func Digits(text string) (string, bool) {
	words := Words(text)
	var runs []string
	var cur strings.Builder
	for i := 0; i < len(words); i++ {
		d, used := digitsAt(words, i)
		if used == 0 {
			if cur.Len() > 0 {
				runs = append(runs, cur.String())
				cur.Reset()
			}
			continue
		}
		cur.WriteString(d)
		i += used - 1
	}
	if cur.Len() > 0 {
		runs = append(runs, cur.String())
	}
	if len(runs) != 1 {
		return "", false
	}
	return runs[0], true
}

// digitsAt reads the digits that start at words[i] and how many words they
// took (0: none).
func digitsAt(words []string, i int) (string, int) {
	w := words[i]
	if allDigits(w) {
		return w, 1
	}
	if w == "oh" || w == "o" {
		return "0", 1
	}
	if v, ok := ones[w]; ok {
		return strconv.Itoa(v), 1
	}
	if v, ok := teens[w]; ok {
		return strconv.Itoa(v), 1
	}
	if v, ok := tens[w]; ok {
		// "twenty three" is 23; "twenty" alone is 20.
		if i+1 < len(words) {
			if o, ok := ones[words[i+1]]; ok && o > 0 {
				return strconv.Itoa(v + o), 2
			}
		}
		return strconv.Itoa(v), 1
	}
	if n := map[string]int{"double": 2, "triple": 3}[w]; n > 0 && i+1 < len(words) {
		if d, used := digitsAt(words, i+1); used == 1 && len(d) == 1 {
			return strings.Repeat(d, n), 2
		}
	}
	return "", 0
}

func allDigits(w string) bool {
	if w == "" {
		return false
	}
	for _, r := range w {
		if !isDigitRune(r) {
			return false
		}
	}
	return true
}
