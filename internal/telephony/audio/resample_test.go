package audio

import (
	"math"
	"testing"
)

// Resample keeps a tone in the telephone band at its level and frequency,
// removes one above the new Nyquist frequency (it would fold back), and
// leaves 8 kHz audio as it is.
func TestResample(t *testing.T) {
	tone := func(rate int, hz float64) []int16 {
		pcm := make([]int16, rate) // a second
		for i := range pcm {
			pcm[i] = int16(10000 * math.Sin(2*math.Pi*hz*float64(i)/float64(rate)))
		}
		return pcm
	}
	rms := func(pcm []int16) float64 {
		var sum float64
		for _, s := range pcm[200 : len(pcm)-200] { // away from the edges
			sum += float64(s) * float64(s)
		}
		return math.Sqrt(sum / float64(len(pcm)-400))
	}
	for _, rate := range []int{16000, 22050} {
		in := tone(rate, 1000)
		out := Resample(in, rate)
		if len(out) != SampleRate {
			t.Errorf("%d Hz: %d samples for a second, want %d", rate, len(out), SampleRate)
		}
		if got, want := rms(out), rms(in); math.Abs(got-want) > 0.02*want {
			t.Errorf("%d Hz: 1 kHz at RMS %.0f, want %.0f", rate, got, want)
		}
		want := tone(SampleRate, 1000)
		for i := 200; i < len(out)-200; i += 97 {
			if d := math.Abs(float64(out[i]) - float64(want[i])); d > 300 {
				t.Fatalf("%d Hz: sample %d is %d, want about %d", rate, i, out[i], want[i])
			}
		}
		if got := rms(Resample(tone(rate, 5000), rate)); got > 100 {
			t.Errorf("%d Hz: 5 kHz left at RMS %.0f, want it removed", rate, got)
		}
	}
	eight := tone(SampleRate, 1000)
	if out := Resample(eight, SampleRate); &out[0] != &eight[0] {
		t.Error("8 kHz audio was copied")
	}
}
