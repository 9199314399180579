package audio

import "math"

// resampleHalfWidth is how many input samples on either side of an output
// sample Resample weighs.
const resampleHalfWidth = 32

// Resample converts mono pcm at rate to SampleRate through a windowed-sinc
// low-pass at 3.6 kHz (below the new Nyquist frequency, as the telephone
// band is), evaluated at each output sample's place in the input. pcm at
// SampleRate is returned as it is. When rate is a multiple of SampleRate
// (flite's 16 kHz voices) every output sample sits on an input sample and
// the filter's taps are computed once.
func Resample(pcm []int16, rate int) []int16 {
	if rate == SampleRate || rate <= 0 {
		return pcm
	}
	cutoff := min(3600, 0.45*float64(rate)) / float64(rate) // cycles per input sample
	tap := func(d float64) float64 {
		h := 2 * cutoff
		if d != 0 {
			h = math.Sin(2*math.Pi*cutoff*d) / (math.Pi * d)
		}
		// Blackman window over ±resampleHalfWidth.
		return h * (0.42 + 0.5*math.Cos(math.Pi*d/resampleHalfWidth) + 0.08*math.Cos(2*math.Pi*d/resampleHalfWidth))
	}
	var taps []float64 // for whole steps: taps[k+halfWidth] weighs input centre+k
	if rate%SampleRate == 0 {
		taps = make([]float64, 2*resampleHalfWidth+1)
		for k := range taps {
			taps[k] = tap(float64(resampleHalfWidth - k))
		}
	}
	out := make([]int16, int(int64(len(pcm))*SampleRate/int64(rate)))
	for i := range out {
		x := float64(i) * float64(rate) / SampleRate
		centre := int(x)
		if taps != nil {
			centre = i * (rate / SampleRate)
		}
		var acc float64
		for k := max(centre-resampleHalfWidth, 0); k <= min(centre+resampleHalfWidth, len(pcm)-1); k++ {
			if taps != nil {
				acc += float64(pcm[k]) * taps[k-centre+resampleHalfWidth]
			} else {
				acc += float64(pcm[k]) * tap(x-float64(k))
			}
		}
		out[i] = int16(max(math.MinInt16, min(math.MaxInt16, math.Round(acc))))
	}
	return out
}
