package tts_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/egress"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts/ttstest"
)

// embedded stands for flite: a second of silence, counted.
type embedded struct{ calls int }

func (e *embedded) Speak(context.Context, string) ([]int16, error) {
	e.calls++
	return make([]int16, tts.SampleRate), nil
}

func newServer(t *testing.T, b ttstest.Behaviour) (*tts.Server, *ttstest.Server, *embedded, *[]*tts.FallbackError) {
	t.Helper()
	stand := ttstest.New(t, b)
	fb := &embedded{}
	var fallbacks []*tts.FallbackError
	s := &tts.Server{Config: switchboardv1.VoiceServer{URL: stand.URL, Model: "kokoro", Voice: "af_heart", Speed: "1.25",
		FirstByteTimeoutMs: 300}, APIKey: "sk-test", Policy: egress.URLPolicy{AllowInsecure: true}, Fallback: fb,
		OnFallback: func(_ string, why *tts.FallbackError) { fallbacks = append(fallbacks, why) }}
	return s, stand, fb, &fallbacks
}

// pitch is the frequency of a tone from its zero crossings, away from the
// edges.
func pitch(pcm []int16, rate int) float64 {
	pcm = pcm[len(pcm)/10 : len(pcm)*9/10]
	crossings := 0
	for i := 1; i < len(pcm); i++ {
		if (pcm[i-1] < 0) != (pcm[i] < 0) {
			crossings++
		}
	}
	return float64(crossings) / 2 / (float64(len(pcm)) / float64(rate))
}

func checkTone(t *testing.T, pcm []int16, hz float64, d time.Duration) {
	t.Helper()
	want := int(d.Seconds() * tts.SampleRate)
	if math.Abs(float64(len(pcm)-want)) > 2 {
		t.Errorf("%d samples, want %d", len(pcm), want)
	}
	if got := pitch(pcm, tts.SampleRate); math.Abs(got-hz) > 3 {
		t.Errorf("pitch %.1f Hz, want %.0f", got, hz)
	}
	var peak int16
	for _, v := range pcm[100 : len(pcm)-100] {
		peak = max(peak, v)
	}
	if peak < 9500 || peak > 10500 {
		t.Errorf("peak %d, want about 10000 (the tone's)", peak)
	}
}

func TestServerStreamsPCM(t *testing.T) {
	s, stand, fb, fallbacks := newServer(t, ttstest.Behaviour{Tone: 440, Length: 1500 * time.Millisecond, Piece: 777})
	var pieces int
	var pcm []int16
	err := s.Stream(context.Background(), "Hello there.", func(p []int16) error {
		pieces++
		pcm = append(pcm, p...)
		return nil
	})
	if err != nil || fb.calls != 0 || len(*fallbacks) != 0 {
		t.Fatalf("err %v, fallback %d %v", err, fb.calls, *fallbacks)
	}
	if pieces < 5 {
		t.Errorf("%d pieces: the audio was not handed over as it came", pieces)
	}
	checkTone(t, pcm, 440, 1500*time.Millisecond)
	reqs := stand.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Path != "/v1/audio/speech" || r.Model != "kokoro" || r.Voice != "af_heart" || r.Format != "pcm" ||
		r.Input != "Hello there." || r.Speed == nil || *r.Speed != 1.25 || r.Authorization != "Bearer sk-test" {
		t.Errorf("request %+v", r)
	}
}

func TestServerWAV(t *testing.T) {
	for _, rate := range []uint32{24000, 22050, 16000} {
		s, _, fb, _ := newServer(t, ttstest.Behaviour{Mode: ttstest.WAV, WAVRate: rate, Tone: 1000, Length: time.Second})
		pcm, err := s.Speak(context.Background(), "Hi.")
		if err != nil || fb.calls != 0 {
			t.Fatalf("%d Hz: err %v, fallback %d", rate, err, fb.calls)
		}
		checkTone(t, pcm, 1000, time.Second)
	}
}

// A tone above the telephone band must not fold back into it.
func TestServerAntiAlias(t *testing.T) {
	s, _, _, _ := newServer(t, ttstest.Behaviour{Tone: 5000, Length: time.Second})
	pcm, err := s.Speak(context.Background(), "Hi.")
	if err != nil {
		t.Fatal(err)
	}
	var peak int16
	for _, v := range pcm[200 : len(pcm)-200] {
		peak = max(peak, v)
	}
	if peak > 100 {
		t.Errorf("a 5 kHz tone comes out at %d (aliased to 3 kHz)", peak)
	}
}

func TestServerFallsBack(t *testing.T) {
	for _, c := range []struct {
		b      ttstest.Behaviour
		reason string
	}{
		{ttstest.Behaviour{Delay: time.Second}, tts.ReasonSlow},
		{ttstest.Behaviour{Mode: ttstest.FailMidway}, tts.ReasonStream},
		{ttstest.Behaviour{Mode: ttstest.Odd}, tts.ReasonStream},
		{ttstest.Behaviour{Mode: ttstest.WrongFormat}, tts.ReasonFormat},
		{ttstest.Behaviour{Mode: ttstest.Stereo}, tts.ReasonFormat},
		{ttstest.Behaviour{Mode: ttstest.Status}, tts.ReasonStatus},
		{ttstest.Behaviour{Mode: ttstest.Redirect}, tts.ReasonStatus},
	} {
		t.Run(string(c.b.Mode)+c.b.Delay.String(), func(t *testing.T) {
			s, stand, fb, fallbacks := newServer(t, c.b)
			start := time.Now()
			pcm, why, err := tts.SpeakNoting(context.Background(), s, "Hello.")
			if err != nil || why == nil || why.Reason != c.reason {
				t.Fatalf("err %v, fallback %v, want reason %s", err, why, c.reason)
			}
			// Speak drops what the server sent of a failed line: the
			// embedded voice says all of it.
			if len(pcm) != tts.SampleRate || fb.calls != 1 || len(*fallbacks) != 1 {
				t.Errorf("%d samples, %d fallback calls, %d reported", len(pcm), fb.calls, len(*fallbacks))
			}
			if el := time.Since(start); el > 900*time.Millisecond {
				t.Errorf("took %s", el)
			}
			if n := len(stand.Requests()); n != 1 {
				t.Errorf("%d requests (a redirect is not followed)", n)
			}
		})
	}
}

// Stream has played what came before the failure: the line then starts
// again in the embedded voice.
func TestServerStreamFailsMidway(t *testing.T) {
	s, _, fb, fallbacks := newServer(t, ttstest.Behaviour{Mode: ttstest.FailMidway, Length: time.Second})
	var pcm []int16
	err := s.Stream(context.Background(), "Hello.", func(p []int16) error { pcm = append(pcm, p...); return nil })
	if err != nil || fb.calls != 1 || len(*fallbacks) != 1 {
		t.Fatalf("err %v, %d fallback calls", err, fb.calls)
	}
	if len(pcm) < tts.SampleRate+tts.SampleRate/4 {
		t.Errorf("%d samples: want the server's part then the embedded line", len(pcm))
	}
}

func TestServerRefusesPrivateAddress(t *testing.T) {
	fb := &embedded{}
	var why *tts.FallbackError
	s := &tts.Server{Config: switchboardv1.VoiceServer{URL: "https://127.0.0.1:9/v1", Voice: "v"}, Fallback: fb,
		OnFallback: func(_ string, w *tts.FallbackError) { why = w }}
	if _, err := s.Speak(context.Background(), "Hi."); err != nil {
		t.Fatal(err)
	}
	var refused *egress.RefusedAddrError
	if why == nil || why.Reason != tts.ReasonUnreachable || !errors.As(why, &refused) || fb.calls != 1 {
		t.Errorf("fallback %v, %d calls", why, fb.calls)
	}
	s.Config.URL = "http://tts.example.com/v1"
	if _, err := s.Speak(context.Background(), "Hi."); err != nil || why.Reason != tts.ReasonUnreachable {
		t.Errorf("plain http without --dev: %v %v", err, why)
	}
}

func TestServerWithoutFallbackFails(t *testing.T) {
	s, _, _, _ := newServer(t, ttstest.Behaviour{Mode: ttstest.Status})
	s.Fallback = nil
	if _, err := s.Speak(context.Background(), "Hi."); err == nil {
		t.Error("no error")
	}
}

// StreamNoting says why a streamed line fell back, and nothing for a line
// the server said.
func TestStreamNoting(t *testing.T) {
	s, stand, _, _ := newServer(t, ttstest.Behaviour{Mode: ttstest.FailMidway, Length: time.Second})
	write := func([]int16) error { return nil }
	why, err := tts.StreamNoting(context.Background(), s, "Hello.", write)
	if err != nil || why == nil || why.Reason != tts.ReasonStream {
		t.Fatalf("err %v, fallback %v: want a stream fallback", err, why)
	}
	stand.Set(ttstest.Behaviour{Length: time.Second})
	if why, err = tts.StreamNoting(context.Background(), s, "Hello.", write); err != nil || why != nil {
		t.Fatalf("err %v, fallback %v: want neither", err, why)
	}
}

// A cache keeps a line the server said, never one said in the fallback:
// the next caller asks the server again, and is told of the fallback.
func TestCacheKeepsNoFallback(t *testing.T) {
	s, stand, _, _ := newServer(t, ttstest.Behaviour{Mode: ttstest.Status})
	var c tts.Cache
	v := c.Voice("agent@1", s)
	if _, why, err := tts.SpeakNoting(context.Background(), v, "Hello."); err != nil || why == nil {
		t.Fatalf("err %v, fallback %v: want the fallback told", err, why)
	}
	if lines, _ := c.Len(); lines != 0 {
		t.Fatalf("%d lines kept after a fallback, want none", lines)
	}
	stand.Set(ttstest.Behaviour{Length: time.Second})
	for range 2 {
		if _, why, err := tts.SpeakNoting(context.Background(), v, "Hello."); err != nil || why != nil {
			t.Fatalf("err %v, fallback %v", err, why)
		}
	}
	if n := len(stand.Requests()); n != 2 {
		t.Errorf("%d requests, want 2: the failed one, then one kept", n)
	}
}
