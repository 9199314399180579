//go:build pocketsphinx && cgo

package speech

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func newEmbedded(t *testing.T, opts EmbeddedOptions) *pocketSphinx {
	t.Helper()
	r, err := NewEmbedded(opts)
	if err != nil {
		t.Fatalf("NewEmbedded: %v (apt-get install libpocketsphinx-dev pocketsphinx-en-us)", err)
	}
	p := r.(*pocketSphinx)
	t.Cleanup(p.Close)
	return p
}

var yesNo = []string{"yes", "yeah", "sure", "that's right", "no", "nope", "no thanks", "not really"}

// TestEmbeddedHearsAnswers: with a gather step's choices as hints, the
// callee's answer in either voice comes back as one of the phrases, and
// open recognition still works on the same decoder afterwards.
func TestEmbeddedHearsAnswers(t *testing.T) {
	r := newEmbedded(t, EmbeddedOptions{Decoders: 1})
	ctx := context.Background()
	for file, want := range map[string]string{
		"yn02-espeak.wav": "yes", "yn09-espeak.wav": "no", "yn03-flite.wav": "yes", "yn11-flite.wav": "no",
	} {
		res, err := r.Recognize(ctx, heldOutPCM(t, file), yesNo)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		choices := [][2]string{{"yes", "yes"}, {"yes", "yeah"}, {"yes", "sure"}, {"yes", "that's right"},
			{"no", "no"}, {"no", "nope"}, {"no", "no thanks"}, {"no", "not really"}}
		if got, _ := (utterance{choices: choices}).valueOf(res.Text); got != want {
			t.Errorf("%s: heard %q (%s), want %s", file, res.Text, got, want)
		}
		if res.Confidence <= 0 || res.Confidence > 1 {
			t.Errorf("%s: confidence %v, want within (0, 1]", file, res.Confidence)
		}
	}
	res, err := r.Recognize(ctx, heldOutPCM(t, "op02-flite.wav"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if e, n := wordErrors("can you call me back later", res.Text); e > n/2 {
		t.Errorf("open recognition heard %q for \"can you call me back later\"", res.Text)
	}
}

// TestEmbeddedIgnoresUnknownHints: a hint with a word the dictionary does
// not have is left out rather than failing the utterance; hints that are
// all unknown fall back to open recognition.
func TestEmbeddedIgnoresUnknownHints(t *testing.T) {
	r := newEmbedded(t, EmbeddedOptions{Decoders: 1})
	res, err := r.Recognize(context.Background(), heldOutPCM(t, "yn08-espeak.wav"), []string{"no", "xqzvbl", "yes"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := (utterance{choices: [][2]string{{"yes", "yes"}, {"no", "no"}}}).valueOf(res.Text); got != "no" {
		t.Errorf("heard %q, want no", res.Text)
	}
	if _, err := r.Recognize(context.Background(), heldOutPCM(t, "yn08-espeak.wav"), []string{"xqzvbl"}); err != nil {
		t.Errorf("all hints unknown: %v, want open recognition", err)
	}
}

// TestEmbeddedSilence: silence gives no text and no error.
func TestEmbeddedSilence(t *testing.T) {
	r := newEmbedded(t, EmbeddedOptions{Decoders: 1})
	for _, hints := range [][]string{nil, yesNo} {
		res, err := r.Recognize(context.Background(), make([]int16, 2*SampleRate), hints)
		if err != nil || res.Text != "" {
			t.Errorf("hints %v: silence gave %q, %v; want nothing", hints, res.Text, err)
		}
	}
}

// TestEmbeddedConcurrent: more calls than decoders at once each get their
// own utterance's answer (the pool hands a decoder to one call at a time;
// go test -race checks the rest).
func TestEmbeddedConcurrent(t *testing.T) {
	r := newEmbedded(t, EmbeddedOptions{Decoders: 2})
	files := []string{"yn02-espeak.wav", "yn09-espeak.wav", "yn02-espeak.wav", "yn09-espeak.wav", "yn02-espeak.wav", "yn09-espeak.wav"}
	want := make([]string, len(files))
	for i, f := range files {
		res, err := r.Recognize(context.Background(), heldOutPCM(t, f), yesNo)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = res.Text
	}
	got := make([]string, len(files))
	var wg sync.WaitGroup
	for i, f := range files {
		pcm := heldOutPCM(t, f)
		wg.Go(func() {
			res, err := r.Recognize(context.Background(), pcm, yesNo)
			if err != nil {
				t.Error(err)
			}
			got[i] = res.Text
		})
	}
	wg.Wait()
	if !slices.Equal(got, want) {
		t.Errorf("concurrent results %q, one at a time %q", got, want)
	}
}

// TestEmbeddedLongAudio: audio longer than MaxUtteranceSeconds is decoded
// segment by segment and every segment's words are kept.
func TestEmbeddedLongAudio(t *testing.T) {
	r := newEmbedded(t, EmbeddedOptions{Decoders: 1, MaxUtteranceSeconds: 3})
	yes := heldOutPCM(t, "yn02-espeak.wav")
	var long []int16
	for len(long) < 10*SampleRate {
		segment := make([]int16, 3*SampleRate) // one answer per segment
		copy(segment, yes)
		long = append(long, segment...)
	}
	res, err := r.Recognize(context.Background(), long, yesNo)
	if err != nil {
		t.Fatal(err)
	}
	single, err := r.Recognize(context.Background(), yes, yesNo)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Repeat([]string{single.Text}, len(long)/(3*SampleRate))
	if res.Text != joinWords(want) {
		t.Errorf("10 s of repeated answers heard as %q, want %q", res.Text, joinWords(want))
	}
}

func joinWords(s []string) string {
	out := ""
	for i, w := range s {
		if i > 0 {
			out += " "
		}
		out += w
	}
	return out
}

// TestEmbeddedCancelled: a call whose context ends while it waits for a
// decoder gives up with the context's error.
func TestEmbeddedCancelled(t *testing.T) {
	r := newEmbedded(t, EmbeddedOptions{Decoders: 1})
	d := <-r.pool // every decoder busy
	defer func() { r.pool <- d }()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Recognize(ctx, heldOutPCM(t, "yn02-espeak.wav"), nil); !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
}

func TestEmbeddedMissingModel(t *testing.T) {
	_, err := NewEmbedded(EmbeddedOptions{ModelDir: t.TempDir()})
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("err %v, want the missing model file", err)
	}
}

// TestEmbeddedWordOffsets: the recognizer places each word it heard in
// the utterance, segments of a long utterance included: the words are the
// text's, in order, and each lies where it was said (the words of a
// phrase said after half a second of silence start after it; those of the
// second segment after the first segment's end).
func TestEmbeddedWordOffsets(t *testing.T) {
	r := newEmbedded(t, EmbeddedOptions{Decoders: 1, MaxUtteranceSeconds: 4})
	said := heldOutPCM(t, "op02-flite.wav") // "can you call me back later"
	half := make([]int16, SampleRate/2)
	if len(said) > 3*SampleRate {
		t.Fatalf("the phrase lasts %d samples: want at most 3 s for two 4 s segments", len(said))
	}
	first := slices.Concat(half, said)
	first = append(first, make([]int16, 4*SampleRate-len(first))...)
	res, err := r.Recognize(context.Background(), slices.Concat(first, half, said), nil)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	last := time.Duration(0)
	for _, w := range res.Words {
		texts = append(texts, w.Text)
		if w.Start < last || w.End <= w.Start {
			t.Errorf("word %+v after %s: want words in order, each with a length", w, last)
		}
		last = w.End
	}
	if strings.Join(texts, " ") != res.Text {
		t.Errorf("words %q, text %q: want the text's words", texts, res.Text)
	}
	saidFor := time.Duration(len(said)) * time.Second / SampleRate
	var inFirst, inSecond int
	for _, w := range res.Words {
		switch {
		case w.Start >= 400*time.Millisecond && w.End <= 500*time.Millisecond+saidFor+100*time.Millisecond:
			inFirst++
		case w.Start >= 4400*time.Millisecond && w.End <= 4500*time.Millisecond+saidFor+100*time.Millisecond:
			inSecond++
		default:
			t.Errorf("word %+v is where nothing was said", w)
		}
	}
	if inFirst < 3 || inSecond < 3 {
		t.Errorf("words %+v: want the phrase's words in both segments", res.Words)
	}
}
