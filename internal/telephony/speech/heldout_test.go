package speech

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/telephony/audio"
)

// The held-out set (hack/speech/generate.sh) and how a recognizer is scored
// on it: yes/no, choice and number utterances by the value a gather step
// would take from the text, dates and times and open sentences by word
// error rate.

const heldOutDir = "testdata/heldout"

type utterance struct {
	file, voice, category, value, text string
	// choices maps each value of a gather step to its phrases; the
	// recognizer is given every phrase as a hint.
	choices [][2]string // (value, phrase), in the manifest's order
	pcm     []int16
}

func (u utterance) hints() []string {
	switch u.category {
	case "number":
		return CaptureHints("number")
	}
	var h []string
	for _, c := range u.choices {
		h = append(h, c[1])
	}
	return h
}

func loadHeldOut(tb testing.TB) []utterance {
	tb.Helper()
	f, err := os.Open(filepath.Join(heldOutDir, "manifest.tsv"))
	if err != nil {
		tb.Fatalf("the held-out set is missing (hack/speech/generate.sh makes it): %v", err)
	}
	defer f.Close()
	var set []utterance
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Split(sc.Text(), "\t")
		if len(fields) != 7 {
			tb.Fatalf("manifest line %q: want 7 fields", sc.Text())
		}
		u := utterance{file: fields[0], voice: fields[1], category: fields[2], value: fields[3], text: fields[6]}
		for group := range strings.SplitSeq(fields[4], ";") {
			value, phrases, ok := strings.Cut(group, ":")
			if !ok {
				continue
			}
			for p := range strings.SplitSeq(phrases, ",") {
				u.choices = append(u.choices, [2]string{value, p})
			}
		}
		u.pcm = heldOutPCM(tb, u.file)
		set = append(set, u)
	}
	// SPEECH_HELDOUT_CATEGORIES=yes_no,choice narrows the set while tuning.
	if only := os.Getenv("SPEECH_HELDOUT_CATEGORIES"); only != "" {
		set = slices.DeleteFunc(set, func(u utterance) bool { return !slices.Contains(strings.Split(only, ","), u.category) })
	}
	return set
}

// heldOutPCM reads one of the set's WAV files.
func heldOutPCM(tb testing.TB, file string) []int16 {
	tb.Helper()
	f, err := os.Open(filepath.Join(heldOutDir, file))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	pcm, err := audio.DecodeMono(f)
	if err != nil {
		tb.Fatalf("%s: %v", file, err)
	}
	return pcm
}

// choiceOf is the value whose phrase comes first in the text (the longest
// phrase at the same place), as a gather step picks a choice; "" for none.
func choiceOf(text string, choices [][2]string) string {
	words := " " + normalizePhrase(text) + " "
	best, bestAt, bestLen := "", len(words), 0
	for _, c := range choices {
		at := strings.Index(words, " "+normalizePhrase(c[1])+" ")
		if at >= 0 && (at < bestAt || at == bestAt && len(c[1]) > bestLen) {
			best, bestAt, bestLen = c[0], at, len(c[1])
		}
	}
	return best
}

var numberValues = map[string]int{
	"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
	"eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
	"fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
	"nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
	"seventy": 70, "eighty": 80, "ninety": 90,
}

// numberOf is the first number in the text ("twenty three" is 23), or -1.
func numberOf(text string) int {
	n, found := 0, false
	for _, w := range strings.Fields(normalizePhrase(text)) {
		v, ok := numberValues[w]
		if d, err := strconv.Atoi(w); err == nil {
			v, ok = d, true
		}
		switch {
		case ok && !found:
			n, found = v, true
		case ok && n >= 20 && n%10 == 0 && v < 10:
			return n + v
		case found:
			return n
		}
	}
	if !found {
		return -1
	}
	return n
}

// wordErrors is the word-level edit distance between reference and
// hypothesis, and the reference's length.
func wordErrors(ref, hyp string) (int, int) {
	r, h := strings.Fields(normalizePhrase(ref)), strings.Fields(normalizePhrase(hyp))
	prev := make([]int, len(h)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(r); i++ {
		cur := make([]int, len(h)+1)
		cur[0] = i
		for j := 1; j <= len(h); j++ {
			sub := prev[j-1]
			if r[i-1] != h[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev = cur
	}
	return prev[len(h)], len(r)
}

func TestScoring(t *testing.T) {
	yn := [][2]string{{"yes", "yes"}, {"yes", "that's right"}, {"no", "no"}, {"no", "no thanks"}}
	for text, want := range map[string]string{
		"yeah that's right": "yes", "No, thanks!": "no", "no that's not right": "no", "maybe": "",
	} {
		if got := choiceOf(text, yn); got != want {
			t.Errorf("choiceOf(%q) = %q, want %q", text, got, want)
		}
	}
	for text, want := range map[string]int{
		"twenty three": 23, "there will be four of us": 4, "um, four people": 4, "forty": 40,
		"twelve people": 12, "no idea": -1, "table for 5": 5,
	} {
		if got := numberOf(text); got != want {
			t.Errorf("numberOf(%q) = %d, want %d", text, got, want)
		}
	}
	if e, n := wordErrors("can you call me back later", "can you call back letter"); e != 2 || n != 6 {
		t.Errorf("wordErrors = %d/%d, want 2/6", e, n)
	}
}

// TestHeldOutSet checks the set is what the issue asks: at least 100
// utterances, two voices, every category, readable 8 kHz audio.
func TestHeldOutSet(t *testing.T) {
	set := loadHeldOut(t)
	if len(set) < 100 {
		t.Fatalf("%d utterances, want at least 100", len(set))
	}
	voices, categories := map[string]int{}, map[string]int{}
	for _, u := range set {
		voices[u.voice]++
		categories[u.category]++
		if len(u.pcm) < SampleRate/2 {
			t.Errorf("%s: %d samples, shorter than half a second", u.file, len(u.pcm))
		}
		if (u.category == "yes_no" || u.category == "choice") && choiceOf(u.text, u.choices) != u.value {
			t.Errorf("%s: its own text %q does not score as %q", u.file, u.text, u.value)
		}
		if u.category == "number" && strconv.Itoa(numberOf(u.text)) != u.value {
			t.Errorf("%s: its own text %q does not score as %s", u.file, u.text, u.value)
		}
	}
	if len(voices) != 2 {
		t.Errorf("voices %v, want two", voices)
	}
	for _, c := range []string{"yes_no", "choice", "number", "date_time", "open"} {
		if categories[c] == 0 {
			t.Errorf("no %s utterance", c)
		}
	}
}

// evaluation accumulates one recognizer's figures over the set.
type evaluation struct {
	right, total     map[string]int
	errors, refWords map[string]int
	// latencies of the utterances recognized with hints (constrained) and
	// without (open): the two searches differ tenfold in cost.
	latencies    map[bool][]time.Duration
	audioSeconds float64
	failures     int
}

func evaluate(tb testing.TB, r Recognizer, set []utterance, useHints bool, verbose bool) evaluation {
	ev := evaluation{right: map[string]int{}, total: map[string]int{}, errors: map[string]int{}, refWords: map[string]int{},
		latencies: map[bool][]time.Duration{}}
	for _, u := range set {
		var hints []string
		if useHints {
			hints = u.hints()
		}
		start := time.Now()
		res, err := r.Recognize(context.Background(), u.pcm, hints)
		ev.latencies[len(hints) > 0] = append(ev.latencies[len(hints) > 0], time.Since(start))
		ev.audioSeconds += float64(len(u.pcm)) / SampleRate
		if err != nil {
			ev.failures++
			tb.Logf("%s: %v", u.file, err)
		}
		var ok bool
		switch u.category {
		case "yes_no", "choice":
			ok = choiceOf(res.Text, u.choices) == u.value
		case "number":
			ok = strconv.Itoa(numberOf(res.Text)) == u.value
		default:
			e, n := wordErrors(u.text, res.Text)
			ev.errors[u.category] += e
			ev.refWords[u.category] += n
			ok = e == 0
		}
		ev.total[u.category]++
		if ok {
			ev.right[u.category]++
		}
		if verbose && !ok {
			tb.Logf("%-18s %-9s want %-32q got %q", u.file, u.category, u.text, res.Text)
		}
	}
	return ev
}

func (ev evaluation) report(b *testing.B, name string, cpu time.Duration) {
	pct := func(c string) float64 { return 100 * float64(ev.right[c]) / float64(max(ev.total[c], 1)) }
	wer := func(c string) float64 { return 100 * float64(ev.errors[c]) / float64(max(ev.refWords[c], 1)) }
	p := func(constrained bool, q float64) time.Duration {
		lat := slices.Sorted(slices.Values(ev.latencies[constrained]))
		if len(lat) == 0 {
			return 0
		}
		return lat[int(q*float64(len(lat)-1))]
	}
	n := len(ev.latencies[true]) + len(ev.latencies[false])
	b.ReportMetric(pct("yes_no"), "yesno%")
	b.ReportMetric(pct("choice"), "choice%")
	b.ReportMetric(pct("number"), "number%")
	b.ReportMetric(wer("open"), "openWER%")
	b.ReportMetric(wer("date_time"), "datetimeWER%")
	b.ReportMetric(float64(p(false, 0.95).Milliseconds()), "open-p95-ms")
	b.ReportMetric(cpu.Seconds()/ev.audioSeconds, "cpu-s/audio-s")
	fmt.Printf("%s: %d utterances (%.0f s of audio), failures %d\n"+
		"  yes/no %.1f %%, choice %.1f %%, number %.1f %%, open sentences WER %.1f %% (%.0f %% exact), dates and times WER %.1f %%\n"+
		"  latency per utterance: constrained (%d) p50 %v, p95 %v; open (%d) p50 %v, p95 %v\n"+
		"  %.3f CPU-seconds per audio-second\n",
		name, n, ev.audioSeconds, ev.failures, pct("yes_no"), pct("choice"), pct("number"),
		wer("open"), pct("open"), wer("date_time"),
		len(ev.latencies[true]), p(true, 0.5).Round(time.Millisecond), p(true, 0.95).Round(time.Millisecond),
		len(ev.latencies[false]), p(false, 0.5).Round(time.Millisecond), p(false, 0.95).Round(time.Millisecond),
		cpu.Seconds()/ev.audioSeconds)
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkHeldOut runs each recognizer evaluated over the held-out set
// once per iteration (go test -bench HeldOut -benchtime 1x) and prints its
// accuracy per category, word error rate, latency and CPU. The embedded
// recognizer runs twice: with the utterance's choices as hints (a gather
// step) and without (the open transcript). -v lists every miss.
func BenchmarkHeldOut(b *testing.B) {
	set := loadHeldOut(b)
	emb, err := NewEmbedded(EmbeddedOptions{Decoders: 1})
	if err != nil {
		b.Skipf("no embedded recognizer: %v", err)
	}
	for _, mode := range []struct {
		name  string
		hints bool
	}{{"embedded-hints", true}, {"embedded-open", false}} {
		b.Run(mode.name, func(b *testing.B) {
			for b.Loop() {
				cpu := cpuTime()
				ev := evaluate(b, emb, set, mode.hints, testing.Verbose())
				ev.report(b, mode.name, cpuTime()-cpu)
			}
		})
	}
}
