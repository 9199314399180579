package speech

import "strings"

// numberWords is a number capture's vocabulary, to pass as hints: every
// number from zero to a hundred as one phrase, since the hint grammar takes
// one phrase per utterance. On the held-out set it doubled the embedded
// recognizer's number accuracy over open recognition.
var numberWords = func() []string {
	units := strings.Fields("one two three four five six seven eight nine")
	words := append([]string{"zero", "oh"}, units...)
	words = append(words, strings.Fields("ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen")...)
	for _, tens := range strings.Fields("twenty thirty forty fifty sixty seventy eighty ninety") {
		words = append(words, tens)
		for _, u := range units {
			words = append(words, tens+" "+u)
		}
	}
	return append(words, "a hundred", "one hundred")
}()

// CaptureHints returns the hints for a typed capture: "number" (the numbers
// up to a hundred), "yes_no" (common yes and no answers). Other kinds give
// nil, open recognition: "digits" are a sequence the one-phrase grammar
// cannot take (and are usually keyed), and for "date" and "time" a
// vocabulary of days, months, ordinals and numbers was measured worse than
// open recognition on the held-out set (hack/benchmarks.md).
func CaptureHints(kind string) []string {
	switch kind {
	case "number":
		return numberWords
	case "yes_no":
		return strings.Split("yes,yeah,yep,sure,correct,that's right,of course,please do,"+
			"no,nope,no thanks,not really,not now,never", ",")
	}
	return nil
}
