package sipdial

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
)

// wavHeaderSize is the engine's canonical 44-byte PCM WAV header.
const wavHeaderSize = 44

// repairWAV fixes the sizes in the header of a recording whose writer was
// cut off (the engine writes them when the call ends), so the audio
// written until then plays.
func repairWAV(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	if size < wavHeaderSize {
		return errors.New("recording shorter than its header")
	}
	data := size - wavHeaderSize
	data -= data % 4 // whole stereo 16-bit frames
	if data > math.MaxUint32-36 {
		return errors.New("recording too large for a WAV file")
	}
	if err := f.Truncate(wavHeaderSize + data); err != nil {
		return err
	}
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(36+data)) //nolint:gosec // bounded above
	if _, err := f.WriteAt(b[:], 4); err != nil {
		return err
	}
	binary.LittleEndian.PutUint32(b[:], uint32(data)) //nolint:gosec // bounded above
	_, err = f.WriteAt(b[:], 40)
	return err
}
