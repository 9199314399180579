package media

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-audio/wav"

	"github.com/switchboard-dev/switchboard/internal/telephony/tts"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// samples is how many samples d lasts.
func samples(d time.Duration) int { return int(d * SampleRate / time.Second) }

// tone is a 440 Hz sine of amplitude amp lasting d: voice, as far as
// energy goes.
func tone(d time.Duration, amp float64) []int16 {
	pcm := make([]int16, samples(d))
	for i := range pcm {
		pcm[i] = int16(amp * math.Sin(2*math.Pi*440*float64(i)/SampleRate))
	}
	return pcm
}

func silence(d time.Duration) []int16 { return make([]int16, samples(d)) }

// noise is white noise of mean absolute amplitude about amp/2.
func noise(d time.Duration, amp int, seed uint64) []int16 {
	r := rand.New(rand.NewPCG(seed, 1))
	pcm := make([]int16, samples(d))
	for i := range pcm {
		pcm[i] = int16(r.IntN(2*amp+1) - amp)
	}
	return pcm
}

func concat(parts ...[]int16) []int16 {
	var out []int16
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// mix adds b to a (same length or shorter).
func mix(a, b []int16) []int16 {
	out := append([]int16(nil), a...)
	for i := range min(len(a), len(b)) {
		out[i] = int16(max(math.MinInt16, min(math.MaxInt16, int(a[i])+int(b[i]))))
	}
	return out
}

// utterance is an utterance as the tests see it: times in the stream.
type utterance struct {
	start, end time.Duration
	cut        bool
}

// segment writes pcm to a Segmenter in packets of packet samples and
// returns the speech starts and the utterances.
func segment(t *testing.T, cfg VADConfig, pcm []int16, packet int) (starts []time.Duration, utts []utterance) {
	t.Helper()
	var s *Segmenter
	s = NewSegmenter(cfg, func(ev Event) {
		switch ev {
		case SpeechStarted:
			starts = append(starts, at(s.Pos()))
		case UtteranceEnded:
			u := s.Utterance()
			if int64(len(u.PCM)) != u.End-u.Start {
				t.Errorf("utterance of %d samples from %d to %d", len(u.PCM), u.Start, u.End)
			}
			utts = append(utts, utterance{at(u.Start), at(u.End), u.Cut})
		}
	})
	for len(pcm) > 0 {
		n := min(packet, len(pcm))
		s.Write(pcm[:n])
		pcm = pcm[n:]
	}
	return starts, utts
}

func at(pos int64) time.Duration { return time.Duration(pos) * time.Second / SampleRate }

// near reports whether got is within tol of want.
func near(got, want, tol time.Duration) bool { return got >= want-tol && got <= want+tol }

func TestSegmenterCutsAtEndOfSpeech(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name   string
		pcm    []int16
		packet int
		want   []utterance // start without the pre-roll
	}{
		{"silence", silence(3 * time.Second), FrameSamples, nil},
		{"one word", concat(silence(time.Second), tone(500*ms, 3000), silence(time.Second)), FrameSamples,
			[]utterance{{time.Second, 1500 * ms, false}}},
		{"a pause between words is one utterance", concat(silence(time.Second), tone(400*ms, 3000), silence(200*ms), tone(400*ms, 3000), silence(time.Second)), FrameSamples,
			[]utterance{{time.Second, 2 * time.Second, false}}},
		{"a long pause ends it", concat(silence(time.Second), tone(400*ms, 3000), silence(time.Second), tone(400*ms, 3000), silence(time.Second)), FrameSamples,
			[]utterance{{time.Second, 1400 * ms, false}, {2400 * ms, 2800 * ms, false}}},
		{"odd packet sizes", concat(silence(time.Second), tone(500*ms, 3000), silence(time.Second)), 73,
			[]utterance{{time.Second, 1500 * ms, false}}},
		{"a click is not speech", concat(silence(time.Second), tone(40*ms, 8000), silence(time.Second)), FrameSamples, nil},
		{"steady line noise is not speech", noise(5*time.Second, 1500, 1), FrameSamples, nil},
		{"speech over line noise", mix(noise(3*time.Second, 600, 2), concat(silence(time.Second), tone(500*ms, 4000))), FrameSamples,
			[]utterance{{time.Second, 1500 * ms, false}}},
		{"speech to the end of the stream is not an utterance yet", concat(silence(time.Second), tone(time.Second, 3000)), FrameSamples, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			starts, got := segment(t, VADConfig{}, tc.pcm, tc.packet)
			preroll := DefaultVADConfig().PreRoll
			ok := len(got) == len(tc.want)
			for i := 0; ok && i < len(got); i++ {
				ok = near(got[i].start, tc.want[i].start-preroll, 40*ms) && near(got[i].end, tc.want[i].end, 40*ms) && !got[i].cut
			}
			if !ok {
				t.Errorf("utterances %+v, want %+v (starts include the %s pre-roll)", got, tc.want, preroll)
			}
			if len(starts) < len(got) {
				t.Errorf("%d speech starts for %d utterances", len(starts), len(got))
			}
			// Speech is noticed within Start (60 ms) and a frame of its
			// beginning: the barge-in budget is 300 ms.
			for i, s := range starts {
				if i < len(tc.want) && !near(s, tc.want[i].start+80*ms, 40*ms) {
					t.Errorf("speech %d noticed at %s, want about %s", i, s, tc.want[i].start+80*ms)
				}
			}
		})
	}
}

// The end of the stream ends the utterance in progress.
func TestSegmenterFlush(t *testing.T) {
	var got []Utterance
	var s *Segmenter
	s = NewSegmenter(VADConfig{}, func(ev Event) {
		if ev == UtteranceEnded {
			got = append(got, s.Utterance())
		}
	})
	s.Flush() // nothing in progress: nothing
	s.Write(concat(silence(time.Second), tone(500*time.Millisecond, 3000), silence(100*time.Millisecond)))
	if len(got) != 0 {
		t.Fatalf("%d utterances before the end of speech", len(got))
	}
	s.Flush()
	if len(got) != 1 || !near(at(got[0].End), 1500*time.Millisecond, 40*time.Millisecond) {
		t.Errorf("flushed %+v, want the utterance up to its last voice at 1.5 s", got)
	}
}

// A callee who talks for two hours without a long pause costs one
// utterance's memory: the speech is handed over in utterances of at most
// MaxUtterance, and writing does not allocate.
func TestSegmenterBoundsAMonologue(t *testing.T) {
	ms := time.Millisecond
	word := concat(tone(300*ms, 3000), silence(100*ms)) // pauses shorter than the hangover
	cfg := VADConfig{MaxUtterance: 15 * time.Second}
	n, cuts := 0, 0
	var s *Segmenter
	s = NewSegmenter(cfg, func(ev Event) {
		if ev != UtteranceEnded {
			return
		}
		n++
		u := s.Utterance()
		if len(u.PCM) > samples(cfg.MaxUtterance) {
			t.Fatalf("utterance of %s, over the %s bound", at(int64(len(u.PCM))), cfg.MaxUtterance)
		}
		if u.Cut {
			cuts++
		}
	})
	talk := func(d time.Duration) {
		for range int(d / (400 * ms)) {
			for f := 0; f < len(word); f += FrameSamples {
				s.Write(word[f : f+FrameSamples])
			}
		}
	}
	talk(2 * time.Hour)
	// The counts after two hours, before the allocation check talks more.
	got, gotCuts := n, cuts
	if allocs := testing.AllocsPerRun(5, func() { talk(time.Minute) }); allocs != 0 {
		t.Errorf("%v allocations writing a minute of speech, want none", allocs)
	}
	// 2 h in 15 s pieces.
	if want := int(2 * time.Hour / cfg.MaxUtterance); got < want-1 || got > want+1 || gotCuts < want-2 {
		t.Errorf("%d utterances (%d cut at the bound), want about %d, all cut", got, gotCuts, want)
	}
}

// Real speech in two voices (flite's, and espeak-ng's resampled to 8 kHz):
// two answers with a pause long enough between them to end the first.
func TestSegmenterOnSpeech(t *testing.T) {
	for _, v := range []struct {
		name string
		say  func(t *testing.T, text string) []int16
	}{{"flite", fliteSays}, {"espeak-ng", espeakSays}} {
		t.Run(v.name, func(t *testing.T) {
			first, second := v.say(t, "there will be four of us"), v.say(t, "yes, that's right")
			pcm := concat(silence(time.Second), first, silence(1500*time.Millisecond), second, silence(time.Second))
			_, got := segment(t, VADConfig{}, pcm, FrameSamples)
			if len(got) != 2 {
				t.Fatalf("utterances %+v, want the two answers", got)
			}
			// The voices pad their speech with some silence; the cut is
			// within it.
			firstEnd := time.Second + at(int64(len(first)))
			if got[0].end > firstEnd || got[0].end < firstEnd-500*time.Millisecond {
				t.Errorf("first answer cut at %s, want by its end at %s", got[0].end, firstEnd)
			}
			secondStart := firstEnd + 1500*time.Millisecond
			if got[1].start < secondStart-DefaultVADConfig().PreRoll-20*time.Millisecond {
				t.Errorf("second answer starts at %s, before it is said at %s", got[1].start, secondStart)
			}
		})
	}
}

func fliteSays(t *testing.T, text string) []int16 {
	t.Helper()
	testsupport.Needs(t, "flite")
	var f tts.Flite
	pcm, err := f.Speak(context.Background(), text)
	if err != nil {
		t.Fatalf("flite: %v (install it with `apt-get install -y flite`)", err)
	}
	return pcm
}

// espeakSays speaks text with espeak-ng (Debian package espeak-ng), which
// writes 22050 Hz only, and resamples it to 8 kHz by averaging the input
// over each output sample's span (a crude low-pass; enough for energy).
func espeakSays(t *testing.T, text string) []int16 {
	t.Helper()
	testsupport.Needs(t, "espeak-ng")
	path := filepath.Join(t.TempDir(), "speech.wav")
	if out, err := exec.CommandContext(t.Context(), "espeak-ng", "-w", path, text).CombinedOutput(); err != nil {
		t.Fatalf("espeak-ng: %v %s (install it with `apt-get install -y espeak-ng`)", err, out)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	buf, err := wav.NewDecoder(f).FullPCMBuffer()
	if err != nil {
		t.Fatalf("espeak-ng's WAV: %v", err)
	}
	in, rate := buf.Data, buf.Format.SampleRate
	out := make([]int16, len(in)*SampleRate/rate)
	for i := range out {
		from, to := i*rate/SampleRate, min(len(in), (i+1)*rate/SampleRate)
		sum := 0
		for _, s := range in[from:to] {
			sum += s
		}
		out[i] = int16(sum / max(1, to-from))
	}
	return out
}

func BenchmarkSegmenter(b *testing.B) {
	pcm := concat(silence(time.Second), tone(time.Second, 3000))
	s := NewSegmenter(VADConfig{}, func(Event) {})
	b.ReportAllocs()
	b.SetBytes(FrameSamples * 2)
	b.ResetTimer()
	for i := range b.N {
		f := (i * FrameSamples) % len(pcm)
		s.Write(pcm[f : f+FrameSamples])
	}
}
