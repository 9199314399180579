package understand

import (
	"math"
	"strconv"
	"strings"
)

var ones = map[string]int{
	"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
	"eight": 8, "nine": 9,
}

var teens = map[string]int{
	"ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
	"sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
}

var tens = map[string]int{
	"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
	"seventy": 70, "eighty": 80, "ninety": 90,
}

var scales = map[string]float64{"thousand": 1e3, "million": 1e6, "billion": 1e9}

// Number reads the one number in the text, in words or digits: "four",
// "twenty three", "one hundred and five", "three point five", "minus two",
// "4", "1,000", "2.5", "there will be four of us". No number, or two
// different numbers ("two or three"), is no value.
func Number(text string) (float64, bool) {
	found := numbers(Words(text))
	if len(found) == 0 {
		return 0, false
	}
	for _, n := range found[1:] {
		if n != found[0] {
			return 0, false
		}
	}
	return found[0], true
}

// numbers returns every number spoken in words, in order.
func numbers(words []string) []float64 {
	var out []float64
	for i := 0; i < len(words); {
		n, used := numberAt(words, i)
		if used == 0 {
			i++
			continue
		}
		out = append(out, n)
		i += used
	}
	return out
}

// follows says which kind of number word may come after which, the way
// English builds numbers ("twenty three", "two hundred and five", "one
// thousand twelve"); "" is the start of a number.
var follows = map[string]map[string]bool{
	"ones":    {"": true, "tens": true, "hundred": true, "scale": true, "and": true},
	"teen":    {"": true, "hundred": true, "scale": true, "and": true},
	"tens":    {"": true, "hundred": true, "scale": true, "and": true},
	"hundred": {"ones": true, "teen": true},
	"scale":   {"ones": true, "teen": true, "tens": true, "hundred": true},
}

// kindOf returns the kind of a number word and its value.
func kindOf(w string) (string, float64) {
	if v, ok := ones[w]; ok {
		return "ones", float64(v)
	}
	if v, ok := teens[w]; ok {
		return "teen", float64(v)
	}
	if v, ok := tens[w]; ok {
		return "tens", float64(v)
	}
	if w == "hundred" {
		return "hundred", 100
	}
	if s, ok := scales[w]; ok {
		return "scale", s
	}
	return "", 0
}

// numberAt parses the number that starts at words[i], returning it and how
// many words it took (0: none starts there). Words join into one number only
// as follows allows, so "two three" is two numbers, not twenty-three.
func numberAt(words []string, i int) (float64, int) {
	start := i
	sign := 1.0
	if (words[i] == "minus" || words[i] == "negative") && i+1 < len(words) {
		sign = -1
		i++
	}
	if n, used := writtenAt(words, i); used > 0 {
		return sign * n, i + used - start
	}
	n, used := spokenAt(words, i)
	if used == 0 {
		return 0, 0
	}
	return sign * n, i + used - start
}

// writtenAt reads a number in digits, with an optional scale word ("5
// thousand").
func writtenAt(words []string, i int) (float64, int) {
	n, ok := digitsToken(words[i])
	if !ok {
		return 0, 0
	}
	if i+1 < len(words) {
		if kind, s := kindOf(words[i+1]); kind == "scale" || kind == "hundred" {
			return n * s, 2
		}
	}
	return n, 1
}

// spokenAt reads a number in words.
func spokenAt(words []string, i int) (float64, int) {
	start := i
	var total, group float64
	last := ""
	for ; i < len(words); i++ {
		kind, v := kindOf(words[i])
		switch {
		case kind != "" && follows[kind][last] && (kind != "hundred" || group < 100):
			total, group = add(kind, v, total, group)
			last = kind
		case joins(words, i, last):
			if words[i] == "a" {
				group = 1
			}
			last = "ones"
			if words[i] == "and" {
				last = "and"
			}
		case words[i] == "point" && last != "hundred" && last != "scale" && last != "and":
			frac, used := fraction(words[i+1:])
			if used == 0 {
				return finish(total, group, last, i-start)
			}
			return total + group + frac, i + 1 + used - start
		default:
			return finish(total, group, last, i-start)
		}
	}
	return finish(total, group, last, i-start)
}

// joins says whether words[i] is "a" before a scale ("a hundred") or "and"
// inside a number ("two hundred and five").
func joins(words []string, i int, last string) bool {
	if i+1 >= len(words) {
		return false
	}
	switch words[i] {
	case "a":
		return last == "" && isScale(words[i+1])
	case "and":
		return (last == "hundred" || last == "scale") && isNumberWord(words[i+1])
	}
	return false
}

func add(kind string, v, total, group float64) (float64, float64) {
	switch kind {
	case "hundred":
		return total, group * 100
	case "scale":
		return total + group*v, 0
	}
	return total, group + v
}

// finish drops a trailing "and" ("four and") from a number.
func finish(total, group float64, last string, used int) (float64, int) {
	switch last {
	case "":
		return 0, 0
	case "and":
		used--
	}
	return total + group, used
}

func isScale(w string) bool {
	kind, _ := kindOf(w)
	return kind == "scale" || kind == "hundred"
}

func isNumberWord(w string) bool {
	_, a := ones[w]
	_, b := teens[w]
	_, c := tens[w]
	return a || b || c
}

// fraction reads the digits after "point", spoken one by one.
func fraction(words []string) (float64, int) {
	var b strings.Builder
	b.WriteString("0.")
	n := 0
	for _, w := range words {
		v, ok := ones[w]
		if !ok {
			break
		}
		b.WriteString(strconv.Itoa(v))
		n++
	}
	if n == 0 {
		return 0, 0
	}
	f, _ := strconv.ParseFloat(b.String(), 64)
	return f, n
}

// digitsToken parses a token written in digits ("4", "3.5"); a clock time
// such as "7:45" is not a number.
func digitsToken(w string) (float64, bool) {
	if w == "" || !isDigitRune(rune(w[0])) || strings.Contains(w, ":") {
		return 0, false
	}
	n, err := strconv.ParseFloat(w, 64)
	if err != nil || math.IsInf(n, 0) || math.IsNaN(n) {
		return 0, false
	}
	return n, true
}
