package speech

import (
	"math"
	"strings"
	"testing"
)

func TestHintGrammar(t *testing.T) {
	dict := map[string]bool{"yes": true, "that's": true, "right": true, "no": true, "um": true, "uh": true, "please": true}
	known := func(w string) bool { return dict[w] }
	g := hintGrammar([]string{"Yes!", "That's right", "yes", "nope", "No, please"}, known)
	for _, want := range []string{
		"public <utterance> = <filler>* <phrase> <filler>* ;",
		"<phrase> = yes | that's right | no please ;", // normalized, deduplicated, "nope" unknown
		"<filler> = um | uh ;",                        // "please" is a phrase's word
	} {
		if !strings.Contains(g, want) {
			t.Errorf("grammar\n%s\nlacks %q", g, want)
		}
	}
	if g := hintGrammar([]string{"nope", " ", "?"}, known); g != "" {
		t.Errorf("no usable phrase gave\n%s\nwant none (open recognition)", g)
	}
}

func TestCleanHypothesis(t *testing.T) {
	if got := cleanHypothesis("<s> (NULL) the(2) [NOISE] delivery <sil> ++breath++ arrived (NULL) </s>"); got != "the delivery arrived" {
		t.Errorf("got %q", got)
	}
}

// TestUpsample16k: a 1 kHz tone keeps its pitch and loudness at 16 kHz,
// and nothing is added above 4 kHz (the image a plain zero-stuffing leaves
// at 7 kHz).
func TestUpsample16k(t *testing.T) {
	in := make([]int16, SampleRate/10)
	for i := range in {
		in[i] = int16(10000 * math.Sin(2*math.Pi*1000*float64(i)/SampleRate))
	}
	out := Upsample16k(in)
	if len(out) != 2*len(in) {
		t.Fatalf("%d samples, want %d", len(out), 2*len(in))
	}
	mid := out[200 : len(out)-200] // away from the edges
	at := func(freq float64) float64 {
		var re, im float64
		for i, s := range mid {
			re += float64(s) * math.Cos(2*math.Pi*freq*float64(i)/16000)
			im += float64(s) * math.Sin(2*math.Pi*freq*float64(i)/16000)
		}
		return 2 * math.Hypot(re, im) / float64(len(mid))
	}
	if a := at(1000); a < 9000 || a > 11000 {
		t.Errorf("1 kHz amplitude %.0f, want about 10000", a)
	}
	if a := at(7000); a > 200 {
		t.Errorf("7 kHz image amplitude %.0f, want under 200", a)
	}
}

// The grammar's fillers, which the decoder puts around the phrase whether
// or not the callee hesitated, leave the transcript; a filler that is a
// phrase's word stays.
func TestTrimFillers(t *testing.T) {
	for _, tt := range []struct{ text, want string }{
		{"um uh cancel it", "cancel it"},
		{"yeah uh", "yeah"},
		{"no please", "no please"}, // "please" is a word of the phrase "No, please"
		{"um", ""},
	} {
		if got := trimFillers(tt.text, []string{"yeah", "cancel it", "No, please"}); got != tt.want {
			t.Errorf("trimFillers(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

// TestCheckGrammar: the check grammar lets a phone loop stand for the
// whole utterance or for the words around the phrase, with the hint
// grammar's phrases and fillers.
func TestCheckGrammar(t *testing.T) {
	known := func(string) bool { return true }
	g := checkGrammar(hintGrammar([]string{"four", "forty two"}, known))
	for _, want := range []string{
		"public <utterance> = <filler>* <garbage>+ <filler>* | <around> <phrase> <around> ;",
		"<around> = <filler>* | <filler>* <garbage>+ <filler>* ;",
		"<phrase> = four | forty two ;",
		"<garbage> = _phone_aa | _phone_ae |",
	} {
		if !strings.Contains(g, want) {
			t.Errorf("grammar\n%s\nlacks %q", g, want)
		}
	}
	if strings.Count(g, phoneWordPrefix) != len(phones) {
		t.Errorf("grammar\n%s\nwant one word per phone (%d)", g, len(phones))
	}
	if checkGrammar("") != "" {
		t.Error("no hint grammar gave a check grammar")
	}
	if got := cleanHypothesis("_phone_dh _phone_eh four _phone_ah"); got != "four" {
		t.Errorf("phone words left in the transcript: %q", got)
	}
}

// TestVerified: an answer the check heard too is sure; another phrase, a
// part of it, or none (the phone loop won) is a doubt below a number
// capture's default threshold.
func TestVerified(t *testing.T) {
	for _, tt := range []struct {
		hint, check string
		sure        bool
	}{
		{"four", "four", true},
		{"eighty four", "four", false},   // "there will be four of us"
		{"twenty three", "three", false}, // "twenty three"
		{"forty two", "four", false},     // "four people": which is it?
		{"eighty", "", false},            // "can you repeat that"
	} {
		if conf := verified(tt.hint, tt.check); (conf >= DefaultMinConfidence("number")) != tt.sure {
			t.Errorf("verified(%q, %q) = %v, want sure %v", tt.hint, tt.check, conf, tt.sure)
		}
	}
}
