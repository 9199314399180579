package tts

import "testing"

// Converting a stream allocates nothing per piece once its buffers have
// grown to the piece's size.
func TestResamplerAllocatesNothingPerPiece(t *testing.T) {
	for _, rate := range []int{24000, 22050} {
		r := newResampler(rate, SampleRate)
		piece := make([]int16, 4096)
		r.push(piece, false)
		if n := testing.AllocsPerRun(100, func() { r.push(piece, false) }); n != 0 {
			t.Errorf("%d Hz: %v allocations per piece", rate, n)
		}
	}
}
