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
