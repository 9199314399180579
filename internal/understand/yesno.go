package understand

// yesNo lists ways of saying yes and no. A phrase with an empty value
// matches only to stop a shorter one inside it from counting ("not sure"
// is neither, though it contains "sure").
var yesNo = func() []phrase {
	table := map[string][]string{
		"yes": {"yes", "yeah", "yea", "yep", "yup", "ya", "sure", "certainly", "correct", "right",
			"thats right", "that is right", "thats correct", "absolutely", "definitely", "of course",
			"ok", "okay", "affirmative", "please do", "yes please", "i do", "i would", "i will",
			"sounds good", "why not", "mhm", "indeed", "exactly", "true", "go ahead", "no problem",
			"not a problem", "all right", "alright", "sure thing"},
		"no": {"no", "nope", "nah", "no thanks", "no thank you", "not really", "not at all",
			"negative", "never", "dont", "do not", "i dont", "i do not", "i wouldnt", "i would not",
			"i wont", "i will not", "not right", "thats not right", "not correct", "incorrect", "wrong",
			"false", "no way", "not interested", "cancel", "absolutely not", "definitely not",
			"certainly not", "of course not", "not yet", "nah thanks"},
		"": {"not sure", "im not sure", "dont know", "i dont know", "no idea", "maybe", "perhaps",
			"not certain"},
	}
	var out []phrase
	for value, list := range table {
		for _, p := range list {
			out = append(out, phrase{words: Words(p), value: value})
		}
	}
	return out
}()

// YesNo reads a yes or a no ("yeah sure", "that's right", "no thanks",
// "nope"). Neither, both ("yes, no, I mean...") or uncertainty ("I'm not
// sure") is no answer.
func YesNo(text string) (yes, ok bool) {
	words := Words(text)
	found := scan(words, yesNo)
	for _, f := range found {
		if f == "" {
			// An uncertain phrase makes the whole answer uncertain.
			return false, false
		}
	}
	v, ok := only(found)
	return v == "yes", ok
}
