package tts

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/egress"
)

// ServerRate is the rate of a voice server's raw pcm: OpenAI's and
// Kokoro-FastAPI's 16-bit little-endian mono at 24 kHz.
const ServerRate = 24000

// DefaultFirstByteTimeout bounds the wait for a line's first audio when
// the VoiceServer sets no firstByteTimeoutMs (the CRD defaults it too).
const DefaultFirstByteTimeout = 2 * time.Second

// MaxLineAudio is the most audio one line may take: MaxTextLength
// characters are about four minutes of speech at a normal pace. A server
// that sends more is cut off and the line said in the embedded voice.
const MaxLineAudio = 5 * time.Minute

// DefaultLineTimeout bounds one line's request, from asking to the last
// byte, when Server.LineTimeout is zero.
const DefaultLineTimeout = 6 * time.Minute

// Reasons a line fell back to the embedded voice (FallbackError.Reason,
// the label of FallbacksTotal).
const (
	ReasonUnreachable = "unreachable" // refused by the address policy, or no connection
	ReasonSlow        = "slow"        // no audio within the first-byte timeout, or the line's bound
	ReasonStatus      = "status"      // an HTTP error, or a redirect (never followed)
	ReasonFormat      = "format"      // not pcm nor PCM16 mono WAV
	ReasonStream      = "stream"      // broken or odd-length stream, or too long
)

// FallbacksTotal counts the lines said in the embedded voice because the
// agent's voice server failed them, by reason. internal/app registers it.
var FallbacksTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "switchboard_voice_server_fallbacks_total",
	Help: "Lines said in the embedded voice because the agent's voice server failed them, by reason.",
}, []string{"reason"})

// FallbackError is why a line was said in the embedded voice rather than
// the server's. It is not returned as an error by Speak or Stream (the line
// was said): Server.OnFallback and SpeakNoting hand it over.
type FallbackError struct {
	Reason string // one of the Reason constants
	Err    error
}

func (e *FallbackError) Error() string { return "the voice server " + e.Err.Error() }
func (e *FallbackError) Unwrap() error { return e.Err }

// Server speaks with an OpenAI-compatible text-to-speech server (POST
// <url>/audio/speech; Kokoro-FastAPI, Speaches, openedai-speech): it asks
// for pcm (24 kHz), accepts a PCM16 mono WAV at any rate, and resamples to
// SampleRate as the audio arrives.
//
// A line the server fails (no audio within the first-byte timeout, an HTTP
// error or redirect, a body that is not pcm nor a PCM16 mono WAV, a stream
// that breaks, has an odd length, or runs over MaxLineAudio) is said whole
// in Fallback, the embedded voice; OnFallback is told and FallbacksTotal
// counted. Audio the server had sent for a failed line is dropped by Speak
// (nothing of it was played). Stream has already handed it over: the line
// then starts again, whole, in the embedded voice, as a repeated beginning
// is better than a cut sentence. Only a line the fallback cannot say
// either, or a canceled ctx, is an error.
type Server struct {
	Config switchboardv1.VoiceServer
	// APIKey is sent as the bearer token when set (the caller reads the
	// Secret).
	APIKey string
	// Policy guards the URL: https and public addresses unless
	// AllowInsecure or a trusted host (--allow-private-model-hosts).
	Policy egress.URLPolicy
	// Transport carries the requests; nil: egress.GuardedTransport(Policy).
	// Redirects are never followed.
	Transport http.RoundTripper
	// Fallback says the lines the server fails; nil makes them errors.
	Fallback Speaker
	// OnFallback, when set, is told of each line said in Fallback.
	OnFallback func(text string, why *FallbackError)
	// LineTimeout bounds one request; DefaultLineTimeout when zero.
	LineTimeout time.Duration

	once      sync.Once
	transport http.RoundTripper // Transport, or the guarded one made once
}

var _ Streamer = (*Server)(nil)

// SpeakNoting is Speak that also says whether the line fell back to the
// embedded voice, and why (nil when the server said it), for a caller
// that notes it in the transcript. Other Speakers never fall back.
func SpeakNoting(ctx context.Context, s Speaker, text string) ([]int16, *FallbackError, error) {
	if n, ok := s.(notingSpeaker); ok {
		return n.speakNoting(ctx, text)
	}
	pcm, err := s.Speak(ctx, text)
	return pcm, nil, err
}

// notingSpeaker is a Speaker that can say whether a line fell back (the
// Server, and a Cache's voice of one).
type notingSpeaker interface {
	speakNoting(ctx context.Context, text string) ([]int16, *FallbackError, error)
}

// StreamNoting is st.Stream that also says whether the line fell back to
// the embedded voice, and why (nil when the server said it all), for a
// caller that notes it in the transcript. Other Streamers never fall back.
func StreamNoting(ctx context.Context, st Streamer, text string, write func(pcm []int16) error) (*FallbackError, error) {
	srv, ok := st.(*Server)
	if !ok {
		return nil, st.Stream(ctx, text, write)
	}
	return srv.streamNoting(ctx, text, write)
}

func (s *Server) speakNoting(ctx context.Context, text string) ([]int16, *FallbackError, error) {
	return s.speak(ctx, text)
}

// Speak implements Speaker: the whole line, once the server has sent it.
func (s *Server) Speak(ctx context.Context, text string) ([]int16, error) {
	pcm, _, err := s.speak(ctx, text)
	return pcm, err
}

func (s *Server) speak(ctx context.Context, text string) ([]int16, *FallbackError, error) {
	var pcm []int16
	fb, err := s.stream(ctx, text, func(p []int16) error {
		pcm = append(pcm, p...)
		return nil
	}, func() { pcm = pcm[:0] })
	if fb != nil {
		pcm = nil
		if err == nil {
			pcm, err = s.Fallback.Speak(ctx, text)
		}
	}
	return pcm, fb, err
}

// Stream implements Streamer: write gets the audio as it arrives.
func (s *Server) Stream(ctx context.Context, text string, write func(pcm []int16) error) error {
	_, err := s.streamNoting(ctx, text, write)
	return err
}

func (s *Server) streamNoting(ctx context.Context, text string, write func(pcm []int16) error) (*FallbackError, error) {
	fb, err := s.stream(ctx, text, write, nil)
	if fb == nil || err != nil {
		return fb, err
	}
	pcm, err := s.Fallback.Speak(ctx, text)
	if err != nil {
		return fb, err
	}
	return fb, write(pcm)
}

// errWrite marks an error of the caller's write: it stops the line and is
// no fault of the server's.
type errWrite struct{ err error }

func (e errWrite) Error() string { return e.err.Error() }

// stream asks the server for text and hands its audio to write. A failure
// of the server's is returned as fb (counted and reported), err being nil
// when the fallback may speak; err alone is the caller's (ctx, write).
func (s *Server) stream(ctx context.Context, text string, write func([]int16) error, discard func()) (fb *FallbackError, err error) {
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	if n := utf8.RuneCountInString(text); n > MaxTextLength {
		return nil, fmt.Errorf("a text of %d characters is over the %d text-to-speech says at once", n, MaxTextLength)
	}
	err = s.request(ctx, text, write)
	var we errWrite
	switch {
	case err == nil:
		return nil, nil
	case errors.As(err, &we):
		return nil, we.err
	case ctx.Err() != nil:
		return nil, ctx.Err()
	}
	if discard != nil {
		discard()
	}
	fb = classify(err)
	FallbacksTotal.WithLabelValues(fb.Reason).Inc()
	if s.OnFallback != nil {
		s.OnFallback(text, fb)
	}
	if s.Fallback == nil {
		return fb, fmt.Errorf("text-to-speech: %w", fb)
	}
	return fb, nil
}

var (
	errFirstByte = errors.New("sent no audio in time")
	errLineTime  = errors.New("did not finish the line in time")
)

// failure is a server failure of a known reason.
type failure struct {
	reason string
	msg    string
}

func (f *failure) Error() string { return f.msg }

func fail(reason, format string, args ...any) error {
	return &failure{reason: reason, msg: fmt.Sprintf(format, args...)}
}

func classify(err error) *FallbackError {
	var f *failure
	var refused *egress.RefusedAddrError
	switch {
	case errors.As(err, &f):
		return &FallbackError{Reason: f.reason, Err: err}
	case errors.Is(err, errFirstByte), errors.Is(err, errLineTime):
		return &FallbackError{Reason: ReasonSlow, Err: err}
	case errors.As(err, &refused):
		return &FallbackError{Reason: ReasonUnreachable, Err: fmt.Errorf("is refused: %w", err)}
	}
	return &FallbackError{Reason: ReasonUnreachable, Err: fmt.Errorf("could not be reached: %w", err)}
}

type speechRequest struct {
	Model          string   `json:"model"`
	Input          string   `json:"input"`
	Voice          string   `json:"voice"`
	ResponseFormat string   `json:"response_format"`
	Speed          *float64 `json:"speed,omitempty"`
}

func (s *Server) request(ctx context.Context, text string, write func([]int16) error) error {
	cfg := s.Config
	if reason := s.Policy.Refusal(cfg.URL); reason != "" {
		return fail(ReasonUnreachable, "URL is refused: %s", strings.Replace(reason, "webhook URLs", "voice server URLs", 1))
	}
	body := speechRequest{Model: cfg.Model, Input: text, Voice: cfg.Voice, ResponseFormat: "pcm"}
	if body.Model == "" {
		body.Model = "tts-1"
	}
	if cfg.Speed != "" {
		if v, err := strconv.ParseFloat(cfg.Speed, 64); err == nil {
			body.Speed = &v
		}
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	lineCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	lineTimer := time.AfterFunc(cmpDuration(s.LineTimeout, DefaultLineTimeout), func() { cancel(errLineTime) })
	defer lineTimer.Stop()
	firstByte := time.Duration(cfg.FirstByteTimeoutMs) * time.Millisecond
	firstTimer := time.AfterFunc(cmpDuration(firstByte, DefaultFirstByteTimeout), func() { cancel(errFirstByte) })
	defer firstTimer.Stop()

	req, err := http.NewRequestWithContext(lineCtx, http.MethodPost, strings.TrimRight(cfg.URL, "/")+"/audio/speech", bytes.NewReader(raw))
	if err != nil {
		return fail(ReasonUnreachable, "URL is not valid: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "audio/pcm, audio/wav;q=0.9")
	if s.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+s.APIKey)
	}
	s.once.Do(func() {
		if s.transport = s.Transport; s.transport == nil {
			s.transport = egress.GuardedTransport(s.Policy)
		}
	})
	transport := s.transport
	client := &http.Client{Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return causeOf(lineCtx, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fail(ReasonStatus, "answered %s: %s", resp.Status, strings.TrimSpace(string(msg)))
	}
	d := decoder{body: resp.Body, write: write, started: firstTimer.Stop}
	if err := d.decode(resp.Header.Get("Content-Type")); err != nil {
		return causeOf(lineCtx, err)
	}
	return nil
}

// causeOf prefers the timers' reason to the context's bare error.
func causeOf(ctx context.Context, err error) error {
	if c := context.Cause(ctx); c != nil && (errors.Is(c, errFirstByte) || errors.Is(c, errLineTime)) {
		return c
	}
	return err
}

func cmpDuration(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// decoder reads a response body in bounded pieces and writes it resampled.
type decoder struct {
	body    io.Reader
	write   func([]int16) error
	started func() bool // called once the first audio byte is read
	buf     [8192]byte
	pcm     []int16
}

func (d *decoder) decode(contentType string) error {
	mt, _, _ := mime.ParseMediaType(contentType)
	mt = strings.ToLower(mt)
	// The first bytes tell a WAV or a compressed format from raw pcm.
	n, err := io.ReadAtLeast(d.body, d.buf[:12], 12)
	if n > 0 {
		d.started()
	}
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return err
	}
	head := d.buf[:n]
	switch {
	case mt == "audio/wav", mt == "audio/x-wav", mt == "audio/wave", mt == "audio/vnd.wave", bytes.HasPrefix(head, []byte("RIFF")):
		return d.wav(head)
	case mt == "audio/pcm", mt == "audio/l16", mt == "audio/raw":
	case mt != "" && mt != "application/octet-stream" && mt != "binary/octet-stream":
		return fail(ReasonFormat, "sent %s, not the pcm asked for", mt)
	case bytes.HasPrefix(head, []byte("ID3")), bytes.HasPrefix(head, []byte("OggS")), bytes.HasPrefix(head, []byte("fLaC")):
		return fail(ReasonFormat, "sent compressed audio, not the pcm asked for")
	}
	if n == 0 {
		return fail(ReasonStream, "sent no audio")
	}
	return d.pcmStream(head, ServerRate)
}

// pcmStream converts 16-bit little-endian mono at rate from the body (after
// the bytes already read, carry) to the end.
func (d *decoder) pcmStream(carry []byte, rate int) error {
	limit := int64(MaxLineAudio/time.Second) * int64(rate) * 2
	r := newResampler(rate, SampleRate)
	var total int64
	pending := copy(d.buf[:], carry)
	for {
		n, err := d.body.Read(d.buf[pending:])
		if n > 0 && total == 0 && pending == 0 {
			d.started()
		}
		pending += n
		total += int64(n)
		if total > limit {
			return fail(ReasonStream, "sent more than %s of audio", MaxLineAudio)
		}
		whole := pending &^ 1
		d.pcm = d.pcm[:0]
		for i := 0; i < whole; i += 2 {
			d.pcm = append(d.pcm, int16(binary.LittleEndian.Uint16(d.buf[i:]))) //nolint:gosec // PCM samples
		}
		final := errors.Is(err, io.EOF)
		if final && pending != whole {
			return fail(ReasonStream, "sent an odd number of bytes: not 16-bit audio")
		}
		if out := r.push(d.pcm, final); len(out) > 0 {
			if werr := d.write(out); werr != nil {
				return errWrite{werr}
			}
		}
		pending = copy(d.buf[:], d.buf[whole:pending])
		if final {
			if total == 0 && len(carry) == 0 {
				return fail(ReasonStream, "sent no audio")
			}
			return nil
		}
		if err != nil {
			return fail(ReasonStream, "broke off: %v", err)
		}
	}
}

// wav reads a WAV's header (head is its first bytes) and streams its data:
// PCM16 mono at any rate. The data chunk's size is not trusted (streamed
// WAVs leave it 0 or ~0): the data runs to the end of the body.
func (d *decoder) wav(head []byte) error {
	hdr := append(make([]byte, 0, 256), head...)
	var err error
	if hdr, err = d.header(hdr, 12); err != nil {
		return err
	}
	if string(hdr[:4]) != "RIFF" || string(hdr[8:12]) != "WAVE" {
		return fail(ReasonFormat, "sent something that is not a WAV")
	}
	rate := 0
	for at := 12; ; {
		if hdr, err = d.header(hdr, at+8); err != nil {
			return err
		}
		id, size := string(hdr[at:at+4]), int(binary.LittleEndian.Uint32(hdr[at+4:]))
		at += 8
		switch {
		case id == "data" && rate == 0:
			return fail(ReasonFormat, "sent a WAV without its format before the audio")
		case id == "data":
			return d.pcmStream(hdr[at:], rate)
		case size > 64<<10:
			return fail(ReasonFormat, "sent a WAV with a %d-byte %q chunk", size, id)
		}
		if hdr, err = d.header(hdr, at+size+size&1); err != nil {
			return err
		}
		if id == "fmt " {
			if rate, err = wavFormat(hdr[at : at+size]); err != nil {
				return err
			}
		}
		at += size + size&1
	}
}

// header reads the body into hdr until it holds n bytes (at most 64 KiB).
func (d *decoder) header(hdr []byte, n int) ([]byte, error) {
	if n > 64<<10 {
		return hdr, fail(ReasonFormat, "sent a WAV header over 64 KiB")
	}
	for len(hdr) < n {
		m, err := d.body.Read(d.buf[:min(len(d.buf), n-len(hdr))])
		hdr = append(hdr, d.buf[:m]...)
		if err != nil && len(hdr) < n {
			return hdr, fail(ReasonFormat, "sent a WAV that ends in its header")
		}
	}
	return hdr, nil
}

// wavFormat checks a WAV's fmt chunk: 16-bit PCM mono at a rate from 4 to
// 192 kHz, which it returns.
func wavFormat(f []byte) (int, error) {
	if len(f) < 16 {
		return 0, fail(ReasonFormat, "sent a WAV with a short format chunk")
	}
	format, channels := binary.LittleEndian.Uint16(f), binary.LittleEndian.Uint16(f[2:])
	rate := int(binary.LittleEndian.Uint32(f[4:]))
	bits := binary.LittleEndian.Uint16(f[14:])
	if format == 0xFFFE && len(f) >= 26 {
		format = binary.LittleEndian.Uint16(f[24:]) // WAVE_FORMAT_EXTENSIBLE's subformat
	}
	if format != 1 || channels != 1 || bits != 16 || rate < 4000 || rate > 192000 {
		return 0, fail(ReasonFormat, "sent a WAV of format %d, %d channels, %d bits at %d Hz, not 16-bit PCM mono", format, channels, bits, rate)
	}
	return rate, nil
}
