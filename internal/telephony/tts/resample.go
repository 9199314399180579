package tts

import (
	"math"
	"sync"
)

// The voice servers speak at 24 kHz (Kokoro, OpenAI's pcm) or at whatever
// rate their WAV says (22.05 kHz for Piper voices); calls want SampleRate.
// No maintained pure-Go resampler is among the project's dependencies (the
// soxr binding needs cgo, which the operator's image is built without), and
// speech.Upsample16k only doubles. So this is a rational polyphase
// resampler of our own: the rate ratio reduced to L/M, a Kaiser-windowed
// sinc low-pass at 0.45 of the lower rate (3.6 kHz for 8 kHz output: the
// telephone band, with the band that would alias above 4 kHz cut by about
// 80 dB), computed per output sample from the one phase of the filter it
// needs. It streams: state between pieces is the last taps of input.

// resampleCutoff is the low-pass edge as a fraction of the lower rate.
const resampleCutoff = 0.45

// tapsPerOutputRate is the filter's length in input samples per unit of
// the input/output ratio: 64 at 8 kHz in, 192 at 24 kHz in.
const tapsPerOutputRate = 64

// kaiserBeta gives about 80 dB of stop-band attenuation.
const kaiserBeta = 8.0

// polyphase is a filter bank for one rate pair, shared by all resamplers
// of that pair.
type polyphase struct {
	l, m, k int       // up, down, taps per phase
	delay   int       // the filter's centre, in upsampled samples
	h       []float32 // phase p's taps at h[p*k : (p+1)*k]
}

var banks sync.Map // "in/out" rates → *polyphase

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func bankFor(in, out int) *polyphase {
	key := [2]int{in, out}
	if b, ok := banks.Load(key); ok {
		return b.(*polyphase)
	}
	g := gcd(in, out)
	l, m := out/g, in/g
	k := int(math.Ceil(tapsPerOutputRate*float64(max(in, out))/float64(out))) | 1
	n := l * k
	fs := float64(in) * float64(l) // the upsampled rate
	fc := resampleCutoff * float64(min(in, out)) / fs
	centre := float64(n-1) / 2
	proto := make([]float64, n)
	var sum float64
	for i := range proto {
		x := float64(i) - centre
		v := 2 * fc
		if x != 0 {
			v = math.Sin(2*math.Pi*fc*x) / (math.Pi * x)
		}
		r := 2*float64(i)/float64(n-1) - 1
		v *= bessel0(kaiserBeta*math.Sqrt(max(0, 1-r*r))) / bessel0(kaiserBeta)
		proto[i] = v
		sum += v
	}
	b := &polyphase{l: l, m: m, k: k, delay: n / 2, h: make([]float32, n)}
	for p := range l {
		for j := range k {
			b.h[p*k+j] = float32(proto[p+j*l] * float64(l) / sum)
		}
	}
	banks.Store(key, b)
	return b
}

// bessel0 is the modified Bessel function of the first kind, order 0.
func bessel0(x float64) float64 {
	sum, term := 1.0, 1.0
	for i := 1; i < 50; i++ {
		term *= (x / (2 * float64(i))) * (x / (2 * float64(i)))
		sum += term
		if term < 1e-12*sum {
			break
		}
	}
	return sum
}

// resampler converts one stream. Its buffers grow to the largest piece
// pushed and are reused: no allocation per piece after the first.
type resampler struct {
	b     *polyphase
	buf   []float32 // input from absolute index off on
	off   int       // absolute index of buf[0] (negative: the zeros before the start)
	total int       // input samples pushed
	n     int       // next output sample
	out   []int16
}

func newResampler(in, out int) *resampler {
	b := bankFor(in, out)
	r := &resampler{b: b, off: -(b.k - 1)}
	r.buf = make([]float32, b.k-1, 4096)
	return r
}

// push converts the next piece of input; final flushes the filter's tail.
// The result is valid until the next push.
func (r *resampler) push(in []int16, final bool) []int16 {
	for _, s := range in {
		r.buf = append(r.buf, float32(s))
	}
	r.total += len(in)
	if final {
		for range r.b.k {
			r.buf = append(r.buf, 0)
		}
	}
	b := r.b
	r.out = r.out[:0]
	end := r.off + len(r.buf)
	for !final || r.n*b.m < r.total*b.l {
		p := r.n*b.m + b.delay
		base, phase := p/b.l, p%b.l
		if base >= end {
			break
		}
		taps := b.h[phase*b.k : (phase+1)*b.k]
		x := r.buf[base-r.off-b.k+1 : base-r.off+1] // x[base-k+1 .. base]
		var acc float32
		for j, t := range taps {
			acc += t * x[len(x)-1-j]
		}
		r.out = append(r.out, clip16(acc))
		r.n++
	}
	// Keep the taps the next output needs.
	next := (r.n*b.m+b.delay)/b.l - b.k + 1
	if drop := next - r.off; drop > 0 {
		drop = min(drop, len(r.buf))
		r.buf = r.buf[:copy(r.buf, r.buf[drop:])]
		r.off += drop
	}
	return r.out
}

func clip16(v float32) int16 {
	switch {
	case v >= math.MaxInt16:
		return math.MaxInt16
	case v <= math.MinInt16:
		return math.MinInt16
	}
	return int16(math.Round(float64(v)))
}
