// Package ttstest is a stand-in for a TTS server, speaking OpenAI's
// /v1/audio/speech (as Kokoro-FastAPI, Speaches and openedai-speech do):
// a POST of {model, input, voice, response_format, speed} answered with
// the audio's bytes. Its speech is a tone whose pitch and length are
// known, streamed as raw pcm (16-bit little-endian mono at 24 kHz, in
// pieces, as Kokoro streams), or as a WAV at any rate; it can also be
// slow, fail mid-stream, redirect, answer an error or the wrong format.
// It records the requests.
package ttstest

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Mode is how the stand-in answers.
type Mode string

const (
	PCM         Mode = "pcm"         // raw 24 kHz pcm, streamed in pieces
	WAV         Mode = "wav"         // a PCM16 mono WAV at Behaviour.WAVRate
	FailMidway  Mode = "fail-midway" // half the pcm, then the connection drops
	WrongFormat Mode = "mp3"         // audio/mpeg bytes
	Odd         Mode = "odd"         // pcm with one byte too many
	Stereo      Mode = "stereo"      // a 2-channel WAV
	Status      Mode = "status"      // 500 with a JSON error
	Redirect    Mode = "redirect"    // 307 to the same path
)

// Behaviour is what the stand-in does on each request.
type Behaviour struct {
	Mode Mode
	// Tone is the pitch in Hz; 440 when zero.
	Tone float64
	// Length is each line's audio; one second when zero.
	Length time.Duration
	// WAVRate is the rate of WAV mode; 24000 when zero.
	WAVRate uint32
	// Delay comes before the first byte (a slow server).
	Delay time.Duration
	// Piece is the bytes per write, flushed each; 1001 (odd, so samples
	// straddle pieces) when zero.
	Piece int
}

// Request is one request the stand-in received.
type Request struct {
	Path          string
	Authorization string
	Model         string   `json:"model"`
	Input         string   `json:"input"`
	Voice         string   `json:"voice"`
	Format        string   `json:"response_format"`
	Speed         *float64 `json:"speed"`
}

// Server is the running stand-in; URL is its API base (…/v1).
type Server struct {
	*httptest.Server
	URL string

	mu       sync.Mutex
	b        Behaviour
	requests []Request
}

// New starts a stand-in behaving as b, closed when the test ends.
func New(t testing.TB, b Behaviour) *Server {
	s := &Server{b: b}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.Server.URL + "/v1"
	t.Cleanup(s.Close)
	return s
}

// Set changes the behaviour for the next requests.
func (s *Server) Set(b Behaviour) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = b
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Tone is the stand-in's speech: a sine of hz at rate for d, at a third of
// full scale.
func Tone(hz float64, rate int, d time.Duration) []int16 {
	n := int(d.Seconds() * float64(rate))
	out := make([]int16, n)
	for i := range out {
		out[i] = int16(10000 * math.Sin(2*math.Pi*hz*float64(i)/float64(rate)))
	}
	return out
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	var req Request
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/audio/speech") {
		http.NotFound(w, r)
		return
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":"bad json"}`, http.StatusBadRequest)
		return
	}
	req.Path, req.Authorization = r.URL.Path, r.Header.Get("Authorization")
	s.mu.Lock()
	s.requests = append(s.requests, req)
	b := s.b
	s.mu.Unlock()
	b = b.withDefaults()
	if b.Delay > 0 {
		select {
		case <-time.After(b.Delay):
		case <-r.Context().Done():
			return
		}
	}
	body, ok := b.body(w)
	if !ok {
		return
	}
	end := len(body)
	if b.Mode == FailMidway {
		end = len(body) / 2
	}
	flusher, _ := w.(http.Flusher)
	for at := 0; at < end; at += b.Piece {
		if _, err := w.Write(body[at:min(at+b.Piece, end)]); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
	if b.Mode == FailMidway {
		panic(http.ErrAbortHandler) // drops the connection: the chunked body never ends
	}
}

func (b Behaviour) withDefaults() Behaviour {
	if b.Tone == 0 {
		b.Tone = 440
	}
	if b.Length == 0 {
		b.Length = time.Second
	}
	if b.WAVRate == 0 {
		b.WAVRate = 24000
	}
	if b.Piece == 0 {
		b.Piece = 1001
	}
	return b
}

// body is what the mode answers, its Content-Type set; false when the
// answer is already written (an error, a redirect).
func (b Behaviour) body(w http.ResponseWriter) ([]byte, bool) {
	switch b.Mode {
	case Status:
		http.Error(w, `{"detail":"the model is not loaded"}`, http.StatusInternalServerError)
		return nil, false
	case Redirect:
		w.Header().Set("Location", "/v1/audio/speech")
		w.WriteHeader(http.StatusTemporaryRedirect)
		return nil, false
	case WrongFormat:
		w.Header().Set("Content-Type", "audio/mpeg")
		return append([]byte("ID3\x04\x00\x00\x00\x00\x00\x00"), make([]byte, 4000)...), true
	case WAV, Stereo:
		w.Header().Set("Content-Type", "audio/wav")
		channels := uint16(1)
		if b.Mode == Stereo {
			channels = 2
		}
		return wavBytes(Tone(b.Tone, int(b.WAVRate), b.Length), b.WAVRate, channels), true
	}
	w.Header().Set("Content-Type", "audio/pcm")
	body := pcmBytes(Tone(b.Tone, 24000, b.Length))
	if b.Mode == Odd {
		body = append(body, 0)
	}
	return body, true
}

func pcmBytes(pcm []int16) []byte {
	out := make([]byte, 2*len(pcm))
	for i, v := range pcm {
		binary.LittleEndian.PutUint16(out[2*i:], uint16(v)) //nolint:gosec // PCM samples
	}
	return out
}

// wavBytes is a streamed WAV: its sizes say "unknown" (0xFFFFFFFF), as a
// server that writes the header before the audio exists does.
func wavBytes(pcm []int16, rate uint32, channels uint16) []byte {
	hdr := make([]byte, 44)
	copy(hdr, "RIFF")
	binary.LittleEndian.PutUint32(hdr[4:], 0xFFFFFFFF)
	copy(hdr[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(hdr[16:], 16)
	binary.LittleEndian.PutUint16(hdr[20:], 1)
	binary.LittleEndian.PutUint16(hdr[22:], channels)
	binary.LittleEndian.PutUint32(hdr[24:], rate)
	binary.LittleEndian.PutUint32(hdr[28:], rate*2*uint32(channels))
	binary.LittleEndian.PutUint16(hdr[32:], 2*channels)
	binary.LittleEndian.PutUint16(hdr[34:], 16)
	copy(hdr[36:], "data")
	binary.LittleEndian.PutUint32(hdr[40:], 0xFFFFFFFF)
	data := pcm
	if channels == 2 {
		data = make([]int16, 2*len(pcm))
		for i, v := range pcm {
			data[2*i], data[2*i+1] = v, v
		}
	}
	return append(hdr, pcmBytes(data)...)
}
