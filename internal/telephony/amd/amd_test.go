package amd

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// seg is a stretch of synthetic audio.
type seg struct {
	kind byte // 't' tone (voice), 'n' noise below the threshold, 'z' digital silence, 'c' constant
	ms   int
	amp  int // tone amplitude, noise peak, or the constant value
}

func tone(ms int) seg  { return seg{'t', ms, 8000} }
func noise(ms int) seg { return seg{'n', ms, 400} } // uniform ±400: mean |x| ≈ 200 < 256

// audio renders segments at 8 kHz; noise is reproducible.
func audio(segs ...seg) []int16 {
	rng := rand.New(rand.NewPCG(1, 2))
	var out []int16
	for _, s := range segs {
		n := s.ms * SampleRate / 1000
		for i := range n {
			var v float64
			switch s.kind {
			case 't':
				v = float64(s.amp) * math.Sin(2*math.Pi*440*float64(i)/SampleRate)
			case 'n':
				v = float64(rng.IntN(2*s.amp+1) - s.amp)
			case 'c':
				v = float64(s.amp)
			}
			out = append(out, int16(v))
		}
	}
	return out
}

// words renders n words of wordMs voice, each followed by gapMs of noise.
func words(n, wordMs, gapMs int) []seg {
	var segs []seg
	for range n {
		segs = append(segs, tone(wordMs), noise(gapMs))
	}
	return segs
}

func concat(segs ...[]seg) []seg {
	var out []seg
	for _, s := range segs {
		out = append(out, s...)
	}
	return out
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

type scenario struct {
	name   string
	params func(*Params)
	segs   []seg
	want   Result
}

func scenarios() []scenario {
	// Blips shorter than MinWordLength are voice but never words.
	var blips []seg
	for range 12 {
		blips = append(blips, tone(60), noise(440))
	}
	// Gaps shorter than BetweenWordsSilence stay inside the word.
	var stutter []seg
	for range 5 {
		stutter = append(stutter, tone(200), noise(40))
	}
	return []scenario{
		{
			name: "hello then silence is human",
			segs: []seg{noise(200), tone(400), noise(900)},
			want: Result{Human, CauseAfterGreetingSilence, ms(200 + 400 + 800)},
		},
		{
			name: "hello, how are you, then silence is human",
			segs: concat([]seg{noise(300)}, words(3, 260, 200), []seg{noise(1000)}),
			want: Result{Human, CauseAfterGreetingSilence, ms(300 + 3*460 - 200 + 800)},
		},
		{
			name: "hello right away is human",
			segs: []seg{tone(300), noise(1000)},
			want: Result{Human, CauseAfterGreetingSilence, ms(300 + 800)},
		},
		{
			name: "3 s continuous greeting is a machine",
			segs: []seg{noise(300), tone(3000)},
			want: Result{Machine, CauseLongGreeting, ms(300 + 1500)},
		},
		{
			name: "long greeting counts voice across words",
			segs: concat([]seg{noise(100)}, words(2, 700, 300), []seg{tone(1000)}),
			want: Result{Machine, CauseLongGreeting, ms(100 + 700 + 300 + 700 + 300 + 100)},
		},
		{
			name: "5 words with short gaps is a machine",
			segs: concat([]seg{noise(300)}, words(5, 200, 160)),
			want: Result{Machine, CauseTooManyWords, ms(300 + 3*360 + 100)},
		},
		{
			name: "3 s of silence is a machine",
			segs: []seg{noise(3000)},
			want: Result{Machine, CauseInitialSilence, ms(2500)},
		},
		{
			name: "3 s of digital silence is a machine",
			segs: []seg{{'z', 3000, 0}},
			want: Result{Machine, CauseInitialSilence, ms(2500)},
		},
		{
			name: "initial silence restarts after a blip",
			segs: []seg{noise(2000), tone(60), noise(3000)},
			want: Result{Machine, CauseInitialSilence, ms(2000 + 60 + 2500)},
		},
		{
			name: "a blip is no greeting, so silence after it is not human",
			segs: []seg{noise(100), tone(60), noise(3000)},
			want: Result{Machine, CauseInitialSilence, ms(100 + 60 + 2500)},
		},
		{
			name: "intermittent words reach total analysis time",
			segs: concat([]seg{noise(2000)}, words(3, 300, 700)),
			want: Result{NotSure, CauseTotalAnalysisTime, ms(5000)},
		},
		{
			name: "intermittent blips reach total analysis time",
			segs: blips,
			want: Result{NotSure, CauseTotalAnalysisTime, ms(5000)},
		},
		{
			name: "short gaps stay inside one word",
			segs: concat([]seg{noise(100)}, stutter, []seg{noise(1000)}),
			want: Result{Human, CauseAfterGreetingSilence, ms(100 + 5*240 + 800 - 40)},
		},
		{
			name: "a word of exactly MinWordLength counts",
			segs: []seg{noise(200), tone(100), noise(900)},
			want: Result{Human, CauseAfterGreetingSilence, ms(200 + 100 + 800)},
		},
		{
			name:   "a gap of exactly BetweenWordsSilence ends the word",
			params: func(p *Params) { p.BetweenWordsSilence = ms(60); p.MaximumNumberOfWords = 1 },
			segs:   []seg{tone(200), noise(60), tone(200)},
			want:   Result{Machine, CauseTooManyWords, ms(200 + 60 + 100)},
		},
		{
			name:   "a gap just under BetweenWordsSilence does not",
			params: func(p *Params) { p.BetweenWordsSilence = ms(60); p.MaximumNumberOfWords = 1 },
			segs:   []seg{tone(200), noise(40), tone(200), noise(900)},
			want:   Result{Human, CauseAfterGreetingSilence, ms(200 + 40 + 200 + 800)},
		},
		{
			name:   "max word length",
			params: func(p *Params) { p.Greeting = 10 * time.Second; p.MaximumWordLength = 2 * time.Second },
			segs:   []seg{noise(200), tone(3000)},
			want:   Result{Machine, CauseMaxWordLength, ms(200 + 2000)},
		},
		{
			name:   "max word length counts consecutive voice only",
			params: func(p *Params) { p.Greeting = 10 * time.Second; p.MaximumWordLength = time.Second },
			segs:   []seg{noise(200), tone(900), noise(20), tone(900), noise(20), tone(1500)},
			want:   Result{Machine, CauseMaxWordLength, ms(200 + 1840 + 1000)},
		},
		{
			name:   "too many words wins over long greeting on the same frame",
			params: func(p *Params) { p.Greeting = ms(500); p.MaximumNumberOfWords = 2 },
			segs:   []seg{tone(200), noise(100), tone(200), noise(100), tone(1000)},
			want:   Result{Machine, CauseTooManyWords, ms(200 + 100 + 200 + 100 + 100)},
		},
		{
			name:   "more words allowed",
			params: func(p *Params) { p.MaximumNumberOfWords = 5 },
			segs:   concat([]seg{noise(300)}, words(5, 200, 160), []seg{noise(1000)}),
			want:   Result{Human, CauseAfterGreetingSilence, ms(300 + 5*360 - 160 + 800)},
		},
		{
			name:   "lower threshold hears the noise as voice",
			params: func(p *Params) { p.SilenceThreshold = 100 },
			segs:   []seg{noise(3000)},
			want:   Result{Machine, CauseLongGreeting, ms(1500)},
		},
		{
			name:   "parameters off the frame grid round up",
			params: func(p *Params) { p.InitialSilence = ms(2510) },
			segs:   []seg{noise(3000)},
			want:   Result{Machine, CauseInitialSilence, ms(2520)},
		},
		{
			name:   "threshold is exclusive: mean 255 is silence",
			params: func(p *Params) { p.InitialSilence = ms(100) },
			segs:   []seg{{'c', 1000, 255}},
			want:   Result{Machine, CauseInitialSilence, ms(100)},
		},
		{
			name:   "threshold is exclusive: mean 256 is voice",
			params: func(p *Params) { p.Greeting = ms(100) },
			segs:   []seg{{'c', 1000, 256}},
			want:   Result{Machine, CauseLongGreeting, ms(100)},
		},
		{
			name:   "negative samples count by magnitude",
			params: func(p *Params) { p.Greeting = ms(100) },
			segs:   []seg{{'c', 1000, -256}},
			want:   Result{Machine, CauseLongGreeting, ms(100)},
		},
		{
			name:   "full scale negative samples",
			params: func(p *Params) { p.Greeting = ms(100); p.SilenceThreshold = 32768 },
			segs:   []seg{{'c', 1000, -32768}},
			want:   Result{Machine, CauseLongGreeting, ms(100)},
		},
		{
			name:   "threshold 32768 hears full scale positive as silence",
			params: func(p *Params) { p.InitialSilence = ms(100); p.SilenceThreshold = 32768 },
			segs:   []seg{{'c', 1000, 32767}},
			want:   Result{Machine, CauseInitialSilence, ms(100)},
		},
	}
}

func (s scenario) detector(t *testing.T) *Detector {
	t.Helper()
	p := DefaultParams()
	if s.params != nil {
		s.params(&p)
	}
	return New(p)
}

func TestScenarios(t *testing.T) {
	for _, s := range scenarios() {
		t.Run(s.name, func(t *testing.T) {
			got, ok := s.detector(t).Feed(audio(s.segs...))
			if !ok || got != s.want {
				t.Errorf("Feed = %v, %v; want %v", got, ok, s.want)
			}
		})
	}
}

// TestDecidesAsSoonAsItCan feeds everything but the last sample of the
// deciding frame (no decision yet), then that sample (decision), then more
// audio of another kind (same decision).
func TestDecidesAsSoonAsItCan(t *testing.T) {
	for _, s := range scenarios() {
		t.Run(s.name, func(t *testing.T) {
			samples := audio(s.segs...)
			end := int(s.want.After / FrameDuration * FrameSamples)
			if end > len(samples) {
				t.Fatalf("scenario decides after %v but has only %d samples", s.want.After, len(samples))
			}
			d := s.detector(t)
			if got, ok := d.Feed(samples[:end-1]); ok || got != (Result{}) {
				t.Fatalf("decided %v one sample early", got)
			}
			if got, ok := d.Feed(samples[end-1 : end]); !ok || got != s.want {
				t.Fatalf("at the deciding sample: %v, %v; want %v", got, ok, s.want)
			}
			for _, more := range [][]int16{nil, samples[end:], audio(tone(3000)), audio(noise(3000))} {
				if got, ok := d.Feed(more); !ok || got != s.want {
					t.Errorf("after the decision: %v, %v; want %v", got, ok, s.want)
				}
			}
		})
	}
}

func TestChunkSizesDoNotMatter(t *testing.T) {
	sizes := []int{1, 2, 3, 7, 80, 159, 160, 161, 321, 1000, 4093}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, s := range scenarios() {
		samples := audio(s.segs...)
		for _, size := range append(sizes, -1) {
			d := s.detector(t)
			var got Result
			var ok bool
			for rest := samples; len(rest) > 0; {
				n := size
				if size < 0 { // random sizes
					n = 1 + rng.IntN(500)
				}
				n = min(n, len(rest))
				got, ok = d.Feed(rest[:n])
				rest = rest[n:]
			}
			if !ok || got != s.want {
				t.Errorf("%s in chunks of %d: %v, %v; want %v", s.name, size, got, ok, s.want)
			}
		}
	}
}

func TestUndecided(t *testing.T) {
	d := New(DefaultParams())
	for _, chunk := range [][]int16{nil, {}, audio(noise(1000)), audio(tone(300)), audio(noise(780)), make([]int16, FrameSamples-1)} {
		if got, ok := d.Feed(chunk); ok || got != (Result{}) {
			t.Fatalf("decided %v too early", got)
		}
	}
	if s := (Result{}).String(); s != "undecided" {
		t.Errorf("String() = %q", s)
	}
	if got, _ := d.Feed([]int16{0}); got.Status != Human || got.String() != "HUMAN (after greeting silence) after 2.1s" {
		t.Errorf("final frame: %v", got)
	}
}

func TestDefaultParams(t *testing.T) {
	want := Params{
		InitialSilence:       2500 * time.Millisecond,
		Greeting:             1500 * time.Millisecond,
		AfterGreetingSilence: 800 * time.Millisecond,
		TotalAnalysisTime:    5000 * time.Millisecond,
		MinWordLength:        100 * time.Millisecond,
		BetweenWordsSilence:  50 * time.Millisecond,
		MaximumNumberOfWords: 3,
		MaximumWordLength:    5000 * time.Millisecond,
		SilenceThreshold:     256,
	}
	if got := DefaultParams(); got != want {
		t.Errorf("DefaultParams() = %+v, want %+v", got, want)
	}
	if err := want.Validate(); err != nil {
		t.Errorf("Validate() = %v", err)
	}
	if FrameSamples != 160 {
		t.Errorf("FrameSamples = %d", FrameSamples)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Params)
		errs   []string // substrings, one per expected error; none: valid
	}{
		{"defaults", func(*Params) {}, nil},
		{"smallest values", func(p *Params) {
			*p = Params{1, 1, 1, 1, 1, 1, 1, 1, 1}
		}, nil},
		{"threshold at full scale", func(p *Params) { p.SilenceThreshold = 32768 }, nil},
		{"zero InitialSilence", func(p *Params) { p.InitialSilence = 0 }, []string{"InitialSilence must be positive"}},
		{"negative Greeting", func(p *Params) { p.Greeting = -time.Second }, []string{"Greeting must be positive, got -1s"}},
		{"zero AfterGreetingSilence", func(p *Params) { p.AfterGreetingSilence = 0 }, []string{"AfterGreetingSilence must be positive"}},
		{"zero TotalAnalysisTime", func(p *Params) { p.TotalAnalysisTime = 0 }, []string{"TotalAnalysisTime must be positive"}},
		{"zero MinWordLength", func(p *Params) { p.MinWordLength = 0 }, []string{"MinWordLength must be positive"}},
		{"zero BetweenWordsSilence", func(p *Params) { p.BetweenWordsSilence = 0 }, []string{"BetweenWordsSilence must be positive"}},
		{"zero MaximumWordLength", func(p *Params) { p.MaximumWordLength = 0 }, []string{"MaximumWordLength must be positive"}},
		{"zero MaximumNumberOfWords", func(p *Params) { p.MaximumNumberOfWords = 0 }, []string{"MaximumNumberOfWords must be at least 1, got 0"}},
		{"zero SilenceThreshold", func(p *Params) { p.SilenceThreshold = 0 }, []string{"SilenceThreshold must be from 1 to 32768, got 0"}},
		{"SilenceThreshold too high", func(p *Params) { p.SilenceThreshold = 32769 }, []string{"SilenceThreshold must be from 1 to 32768, got 32769"}},
		{"zero value reports everything", func(p *Params) { *p = Params{} }, []string{
			"InitialSilence", "Greeting", "AfterGreetingSilence", "TotalAnalysisTime", "MinWordLength",
			"BetweenWordsSilence", "MaximumWordLength", "MaximumNumberOfWords", "SilenceThreshold",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := DefaultParams()
			tt.change(&p)
			err := p.Validate()
			if len(tt.errs) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				New(p) // must not panic
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want %q", tt.errs)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tt.errs) {
				t.Fatalf("Validate() = %q, want %d errors", err, len(tt.errs))
			}
			for i, want := range tt.errs {
				if !strings.HasPrefix(lines[i], "amd: ") || !strings.Contains(lines[i], want) {
					t.Errorf("error %d = %q, want it to contain %q", i, lines[i], want)
				}
			}
			defer func() {
				if r := recover(); r == nil {
					t.Errorf("New did not panic")
				}
			}()
			New(p)
		})
	}
}
