package speech

import "math"

// upsampleTaps is the half-band low-pass filter that removes the image
// above 4 kHz when 8 kHz audio is doubled to 16 kHz (a Hann-windowed sinc;
// the odd taps of a half-band filter are zero except the centre).
var upsampleTaps = func() []float64 {
	const n = 31 // taps, centre at 15
	taps := make([]float64, n)
	for i := range taps {
		x := float64(i - n/2)
		sinc := 1.0
		if x != 0 {
			sinc = math.Sin(math.Pi*x/2) / (math.Pi * x / 2)
		}
		window := 0.5 - 0.5*math.Cos(2*math.Pi*float64(i)/float64(n-1))
		taps[i] = sinc * window
	}
	return taps
}()

// Upsample16k doubles the sample rate of 8 kHz audio for an acoustic model
// trained on 16 kHz speech: zeros between the samples, then the low-pass
// filter. The band above 4 kHz stays empty, as it is on a telephone line.
func Upsample16k(pcm []int16) []int16 {
	out := make([]int16, 2*len(pcm))
	half := len(upsampleTaps) / 2
	for i := range out {
		var acc float64
		for k, tap := range upsampleTaps {
			j := i + k - half // index in the zero-stuffed signal
			if j < 0 || j >= len(out) || j%2 != 0 {
				continue
			}
			acc += tap * float64(pcm[j/2])
		}
		out[i] = clip16(acc)
	}
	return out
}

func clip16(v float64) int16 {
	switch {
	case v > math.MaxInt16:
		return math.MaxInt16
	case v < math.MinInt16:
		return math.MinInt16
	}
	return int16(math.Round(v))
}
