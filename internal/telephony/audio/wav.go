// Package audio reads and writes the WAV files of calls: 8 kHz 16-bit PCM,
// the narrowband audio carriers deliver, mono for speech and prompts
// (Mono, DecodeMono) and stereo for call recordings (Recorder,
// DecodeStereo).
//
// Reading uses github.com/go-audio/wav. Writing does not: its encoder
// needs an io.WriteSeeker, encodes sample by sample through reflection on
// the media path of every call, and cannot repair a file whose writer was
// cut off. A Recorder streams a call to disk with the canonical 44-byte
// header (Header) written first and rewritten when the call ends, and
// Repair completes the header of a recording a crash left behind.
package audio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/go-audio/wav"
)

// SampleRate is the rate of every WAV Switchboard reads or writes.
const SampleRate = 8000

// HeaderSize is the length of the canonical PCM WAV header that Header
// writes: the samples start right after it.
const HeaderSize = 44

const bytesPerSample = 2

// Header returns the header of a 16-bit PCM WAV of frames samples per
// channel.
func Header(channels, frames int) []byte {
	blockAlign := channels * bytesPerSample
	dataSize := uint32(frames * blockAlign) //nolint:gosec // 4 GiB is 37 h of stereo audio
	h := make([]byte, 0, HeaderSize)
	h = append(h, "RIFF"...)
	h = binary.LittleEndian.AppendUint32(h, 36+dataSize) // everything after this field
	h = append(h, "WAVEfmt "...)
	h = binary.LittleEndian.AppendUint32(h, 16)                            // fmt chunk size
	h = binary.LittleEndian.AppendUint16(h, 1)                             // PCM
	h = binary.LittleEndian.AppendUint16(h, uint16(channels))              //nolint:gosec // 1 or 2
	h = binary.LittleEndian.AppendUint32(h, SampleRate)                    //
	h = binary.LittleEndian.AppendUint32(h, uint32(SampleRate*blockAlign)) //nolint:gosec // byte rate, small
	h = binary.LittleEndian.AppendUint16(h, uint16(blockAlign))            //nolint:gosec // block align, small
	h = binary.LittleEndian.AppendUint16(h, 8*bytesPerSample)              // bits per sample
	h = append(h, "data"...)
	return binary.LittleEndian.AppendUint32(h, dataSize)
}

// Mono returns a mono WAV of pcm.
func Mono(pcm []int16) []byte {
	b := append(make([]byte, 0, HeaderSize+bytesPerSample*len(pcm)), Header(1, len(pcm))...)
	for _, s := range pcm {
		// PCM samples are two's complement: the bit pattern is what is written.
		b = binary.LittleEndian.AppendUint16(b, uint16(s)) //nolint:gosec // intended reinterpretation
	}
	return b
}

// FormatError is a WAV that is PCM but not 8 kHz 16-bit with the expected
// number of channels.
type FormatError struct {
	SampleRate, Channels, BitDepth int
	// Want is the number of channels expected.
	Want int
}

func (e *FormatError) Error() string {
	want := "mono"
	if e.Want == 2 {
		want = "stereo"
	}
	return fmt.Sprintf("wav: %d Hz, %d channels, %d bits: want 8000 Hz %s 16-bit",
		e.SampleRate, e.Channels, e.BitDepth, want)
}

// DecodeMono reads an 8 kHz mono 16-bit PCM WAV, the audio format of
// scripts, voicemail messages and text-to-speech. Any other format is an
// error (a *FormatError when it is PCM at another rate or width) rather
// than audio at the wrong speed.
func DecodeMono(r io.Reader) ([]int16, error) {
	return decode(r, 1)
}

// DecodeStereo reads back a recording Recorder wrote, split into its
// agent (left) and callee (right) channels.
func DecodeStereo(r io.Reader) (left, right []int16, err error) {
	pcm, err := decode(r, 2)
	if err != nil {
		return nil, nil, err
	}
	left, right = make([]int16, len(pcm)/2), make([]int16, len(pcm)/2)
	for i := range left {
		left[i], right[i] = pcm[2*i], pcm[2*i+1]
	}
	return left, right, nil
}

// DecodeMonoResampled reads a mono 16-bit PCM WAV at any sample rate, as
// text-to-speech engines write them (flite's 16 kHz voices), resampled to
// SampleRate (Resample).
func DecodeMonoResampled(r io.Reader) ([]int16, error) {
	pcm, rate, err := decodeAt(r, 1, 0)
	if err != nil {
		return nil, err
	}
	return Resample(pcm, rate), nil
}

// decode reads an 8 kHz 16-bit PCM WAV of channels interleaved channels.
func decode(r io.Reader, channels int) ([]int16, error) {
	pcm, _, err := decodeAt(r, channels, SampleRate)
	return pcm, err
}

// decodeAt reads a 16-bit PCM WAV of channels interleaved channels at rate
// (any rate when 0), and returns its rate.
func decodeAt(r io.Reader, channels, rate int) ([]int16, int, error) {
	rs, ok := r.(io.ReadSeeker)
	if !ok {
		// The WAV decoder seeks between chunks.
		b, err := io.ReadAll(r)
		if err != nil {
			return nil, 0, fmt.Errorf("wav: %w", err)
		}
		rs = bytes.NewReader(b)
	}
	dec := wav.NewDecoder(rs)
	if !dec.IsValidFile() || dec.WavAudioFormat != 1 {
		return nil, 0, errors.New("wav: not a PCM WAV file")
	}
	if rate != 0 && int(dec.SampleRate) != rate || dec.SampleRate == 0 || int(dec.NumChans) != channels || dec.BitDepth != 16 {
		return nil, 0, &FormatError{SampleRate: int(dec.SampleRate), Channels: int(dec.NumChans), BitDepth: int(dec.BitDepth),
			Want: channels}
	}
	buf, err := dec.FullPCMBuffer()
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, fmt.Errorf("wav: %w", err)
	}
	pcm := make([]int16, len(buf.Data))
	for i, s := range buf.Data {
		pcm[i] = int16(min(max(s, math.MinInt16), math.MaxInt16))
	}
	return pcm, int(dec.SampleRate), nil
}
