package engine

import (
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/amd"
	"github.com/switchboard-dev/switchboard/internal/telephony/audio"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/siptest"
)

// These tests place real calls over loopback to sipp (Debian package
// sip-tester) playing the callee.

// sipp is a sipp callee (siptest.Sipp) for one call (-m 1), under the
// names these tests use.
type sipp struct {
	*siptest.Sipp
	addr string
}

// startSipp starts a sipp callee for one call on a free loopback port.
// transport is "udp" or "tcp"; args pick the scenario (-sn uas, or the -sf
// of scenario(...)).
func startSipp(t *testing.T, transport string, args ...string) *sipp {
	t.Helper()
	s := siptest.StartSipp(t, transport, append([]string{"-m", "1", "-timeout", "30s"}, args...)...)
	return &sipp{Sipp: s, addr: s.Addr}
}

// startSippOn is startSipp on a given port.
func startSippOn(t *testing.T, transport string, port int, args ...string) *sipp {
	t.Helper()
	s := siptest.StartSippOn(t, transport, port, append([]string{"-m", "1", "-timeout", "30s"}, args...)...)
	return &sipp{Sipp: s, addr: s.Addr}
}

// wait waits for sipp to end its call and fails the test if it failed.
func (s *sipp) wait(t *testing.T) { s.Wait(t, 10*time.Second) }

func freePort(t *testing.T, transport string) int { return siptest.FreePort(t, transport) }

// scenario returns sipp's -sf argument for testdata/name with each [key]
// of the key-value pairs kv replaced by its value.
func scenario(t *testing.T, name string, kv ...string) []string {
	t.Helper()
	return siptest.Scenario(t, filepath.Join("testdata", name), kv...)
}

// editedScenario returns sipp's -sf argument for testdata/name with each
// old string of the old-new pairs replaced by the new one.
func editedScenario(t *testing.T, name string, oldnew ...string) []string {
	t.Helper()
	return siptest.EditedScenario(t, filepath.Join("testdata", name), oldnew...)
}

func newEngine(t testing.TB, cfg EngineConfig) *Engine {
	t.Helper()
	e, err := NewEngine(t.Context(), cfg)
	if err != nil {
		t.Fatalf("NewEngine: %v", err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// place places a call through e to the trunk at addr and fails the test on
// an error.
func place(t *testing.T, e *Engine, trunk Trunk, c CallSpec) Result {
	t.Helper()
	if c.From == "" {
		c.From = "+14155550100"
	}
	if c.To == "" {
		c.To = "+14155550123"
	}
	if c.MaxDuration == 0 {
		c.MaxDuration = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
	defer cancel()
	start := time.Now()
	res, err := e.Place(ctx, trunk, c)
	t.Logf("Place took %s: %+v", time.Since(start).Round(time.Millisecond), res)
	if err != nil {
		t.Fatalf("Place: %v (result %+v)", err, res)
	}
	return res
}

func TestRejected(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	for _, tc := range []struct {
		name   string
		args   []string
		status int
		want   telephony.Disposition
	}{
		{"busy 486", scenario(t, "reject.xml", "status", "486", "reason", "Busy Here"), 486, telephony.Busy},
		{"480", scenario(t, "reject.xml", "status", "480", "reason", "Temporarily Unavailable"), 480, telephony.NoAnswer},
		{"603", scenario(t, "reject.xml", "status", "603", "reason", "Decline"), 603, telephony.Rejected},
		{"404", scenario(t, "reject.xml", "status", "404", "reason", "Not Found"), 404, telephony.InvalidNumber},
		{"503 without Reason", scenario(t, "reject.xml", "status", "503", "reason", "Service Unavailable"), 503, telephony.CarrierFailure},
		{"486 with Q.850 cause 17", scenario(t, "reject_reason.xml", "status", "486", "reason", "Busy Here", "cause", "17"), 486, telephony.Busy},
		{"603 with Q.850 cause 21", scenario(t, "reject_reason.xml", "status", "603", "reason", "Decline", "cause", "21"), 603, telephony.Rejected},
		// The cause wins over the status.
		{"503 with Q.850 cause 17", scenario(t, "reject_reason.xml", "status", "503", "reason", "Service Unavailable", "cause", "17"), 503, telephony.Busy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startSipp(t, "udp", tc.args...)
			res := place(t, e, Trunk{Address: "sip:" + s.addr}, CallSpec{})
			s.wait(t)
			if res.Answered || res.Outcome.StatusCode != tc.status {
				t.Errorf("result %+v: want status %d, not answered", res, tc.status)
			}
			if got := res.Disposition(); got != tc.want {
				t.Errorf("disposition %q, want %q (outcome %+v)", got, tc.want, res.Outcome)
			}
		})
	}
}

func TestRejectedOverTCP(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	s := startSipp(t, "tcp", scenario(t, "reject.xml", "status", "486", "reason", "Busy Here")...)
	rec := filepath.Join(t.TempDir(), "call.wav")
	res := place(t, e, Trunk{Address: "sip:" + s.addr, Transport: "tcp"}, CallSpec{RecordPath: rec})
	s.wait(t)
	if got := res.Disposition(); got != telephony.Busy || res.Outcome.StatusCode != 486 {
		t.Errorf("result %+v: want 486 busy", res)
	}
	if _, err := os.Stat(rec); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a call that was not answered left a recording (%v)", err)
	}
}

func TestRingTimeout(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	s := startSipp(t, "udp", scenario(t, "ring_forever.xml")...)
	start := time.Now()
	res := place(t, e, Trunk{Address: "sip:" + s.addr, RingTimeout: 1500 * time.Millisecond}, CallSpec{})
	took := time.Since(start)
	s.wait(t)
	if !res.Outcome.RingTimeout || res.Outcome.StatusCode != 487 || res.Answered {
		t.Errorf("outcome %+v: want ring timeout with 487, not answered", res.Outcome)
	}
	if got := res.Disposition(); got != telephony.NoAnswer {
		t.Errorf("disposition %q, want no_answer", got)
	}
	if took < 1500*time.Millisecond || took > 5*time.Second {
		t.Errorf("call took %s, want about the 1.5 s ring timeout", took)
	}
}

// A 200 that crosses our CANCEL answered the call: we ACK and BYE it,
// and it counts as answered (the callee did pick up).
func TestAnswerCrossingCancel(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	s := startSipp(t, "udp", scenario(t, "answer_crossing_cancel.xml")...)
	res := place(t, e, Trunk{Address: "sip:" + s.addr, RingTimeout: 500 * time.Millisecond}, CallSpec{})
	s.wait(t)
	if !res.Answered || res.Outcome.StatusCode != 200 || !res.Outcome.RingTimeout || res.HangupBy != HangupByAgent {
		t.Errorf("result %+v: want answered by a 200 after the ring timeout, hung up by us", res)
	}
	if got := res.Disposition(); got != telephony.Answered {
		t.Errorf("disposition %q, want answered", got)
	}
}

// Ending the context while ringing CANCELs the call; ending it while
// connected hangs up. Place reports the context's error either way.
func TestContextEnds(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	t.Run("ringing", func(t *testing.T) {
		s := startSipp(t, "udp", scenario(t, "ring_forever.xml")...)
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		res, err := e.Place(ctx, Trunk{Address: "sip:" + s.addr}, CallSpec{From: "+14155550100", To: "+14155550123"})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Place: %v, want the context's deadline", err)
		}
		s.wait(t) // sipp got the CANCEL
		if res.Answered || res.Outcome.StatusCode != 487 {
			t.Errorf("result %+v: want 487, not answered", res)
		}
	})
	t.Run("before any response", func(t *testing.T) {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t, "udp")))
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		start := time.Now()
		res, err := e.Place(ctx, Trunk{Address: "sip:" + addr}, CallSpec{From: "+14155550100", To: "+14155550123"})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Place: %v, want the context's deadline", err)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("Place took %s, want it to return when the context ends", took)
		}
		if !res.Outcome.TransportError {
			t.Errorf("outcome %+v: want a transport error", res.Outcome)
		}
	})
	t.Run("connected", func(t *testing.T) {
		s := startSipp(t, "udp", scenario(t, "uas.xml")...)
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		res, err := e.Place(ctx, Trunk{Address: "sip:" + s.addr}, CallSpec{From: "+14155550100", To: "+14155550123", Script: sayTone(3 * time.Second)})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Place: %v, want the context's deadline", err)
		}
		s.wait(t) // sipp got the BYE
		if !res.Answered || res.HangupBy != HangupByAgent {
			t.Errorf("result %+v: want answered, hung up by us", res)
		}
	})
}

// One engine places several calls at once.
func TestConcurrentCalls(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	busy := startSipp(t, "udp", scenario(t, "reject.xml", "status", "486", "reason", "Busy Here")...)
	answered := startSipp(t, "udp", scenario(t, "uas.xml")...)
	overTCP := startSipp(t, "tcp", scenario(t, "uas.xml")...)
	dir := t.TempDir()
	var wg sync.WaitGroup
	results := make([]Result, 3)
	for i, tc := range []struct {
		trunk Trunk
		rec   string
	}{
		{Trunk{Address: "sip:" + busy.addr}, ""},
		{Trunk{Address: "sip:" + answered.addr}, filepath.Join(dir, "1.wav")},
		{Trunk{Address: "sip:" + overTCP.addr, Transport: "tcp"}, filepath.Join(dir, "2.wav")},
	} {
		wg.Go(func() {
			res, err := e.Place(t.Context(), tc.trunk, CallSpec{From: "+14155550100", To: "+14155550123",
				Script: sayTone(time.Second), RecordPath: tc.rec})
			if err != nil {
				t.Errorf("call %d: %v", i, err)
			}
			results[i] = res
		})
	}
	wg.Wait()
	for _, s := range []*sipp{busy, answered, overTCP} {
		s.wait(t)
	}
	if got := results[0].Disposition(); got != telephony.Busy {
		t.Errorf("call 0: %q, want busy", got)
	}
	for i := 1; i < 3; i++ {
		if !results[i].Answered || results[i].HangupBy != HangupByAgent {
			t.Errorf("call %d: %+v, want answered, hung up by us", i, results[i])
		}
		left, _ := readRecording(t, filepath.Join(dir, strconv.Itoa(i)+".wav"))
		if m := meanAbs(left[200 : sampleRate-200]); m < 4000 {
			t.Errorf("call %d: left channel during the prompt: mean amplitude %.0f, want the tone", i, m)
		}
	}
}

func TestUnreachable(t *testing.T) {
	e := newEngine(t, EngineConfig{NoResponseTimeout: 2 * time.Second})
	for _, tc := range []struct {
		name, transport string
		ringTimeout     time.Duration
		within          time.Duration
	}{
		{"udp", "udp", 20 * time.Second, 3 * time.Second},
		{"tcp", "tcp", 20 * time.Second, time.Second},
		// Nothing to CANCEL: the ring timeout gives up on the INVITE.
		{"udp ring timeout first", "udp", time.Second, 1800 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t, tc.transport)))
			start := time.Now()
			res := place(t, e, Trunk{Address: "sip:" + addr, Transport: tc.transport, RingTimeout: tc.ringTimeout}, CallSpec{})
			if !res.Outcome.TransportError || res.Answered {
				t.Errorf("outcome %+v: want a transport error", res.Outcome)
			}
			if got := res.Disposition(); got != telephony.Unreachable {
				t.Errorf("disposition %q, want unreachable", got)
			}
			if took := time.Since(start); took > tc.within {
				t.Errorf("took %s, want at most %s", took, tc.within)
			}
		})
	}
}

// tone is d of a 440 Hz tone of amplitude 8000 (mean absolute ~5100).
func tone(d time.Duration) []int16 {
	pcm := make([]int16, int(d.Seconds()*sampleRate))
	for i := range pcm {
		pcm[i] = int16(8000 * math.Sin(2*math.Pi*440*float64(i)/sampleRate))
	}
	return pcm
}

// sayTone is a script of one step playing a tone for d.
func sayTone(d time.Duration) []Step {
	return []Step{{Text: "a tone", Audio: tone(d)}}
}

// readRecording reads a stereo recording into its two channels.
func readRecording(t testing.TB, path string) (left, right []int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	l, r, err := audio.DecodeStereo(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for i := range l {
		left, right = append(left, int(l[i])), append(right, int(r[i]))
	}
	return left, right
}

// meanAbs is the mean absolute amplitude of pcm.
func meanAbs(pcm []int) float64 {
	if len(pcm) == 0 {
		return 0
	}
	var sum float64
	for _, s := range pcm {
		sum += math.Abs(float64(s))
	}
	return sum / float64(len(pcm))
}

func TestAnsweredPlaysPromptAndRecords(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	s := startSipp(t, "udp", "-sn", "uas")
	rec := filepath.Join(t.TempDir(), "call.wav")
	var answers []time.Time
	res := place(t, e, Trunk{Address: "sip:" + s.addr}, CallSpec{CallID: "call-1", Script: sayTone(2 * time.Second), RecordPath: rec,
		OnAnswer: func(at time.Time) { answers = append(answers, at) }})
	s.wait(t)
	if len(answers) != 1 || !answers[0].Equal(res.AnsweredAt) {
		t.Errorf("OnAnswer called with %v, want once with the answer time %v", answers, res.AnsweredAt)
	}

	if !res.Answered || res.Outcome.StatusCode != 200 || res.Disposition() != telephony.Answered {
		t.Fatalf("result %+v: want answered", res)
	}
	if res.HangupBy != HangupByAgent {
		t.Errorf("hangup by %q, want agent", res.HangupBy)
	}
	// The script's only step (2 s), then we hang up.
	if d := res.EndedAt.Sub(res.AnsweredAt); d < 1900*time.Millisecond || d > 3500*time.Millisecond {
		t.Errorf("connected for %s, want about 2 s", d)
	}
	if len(res.Events) != 1 || res.Events[0].Speaker != SpeakerAgent || res.Events[0].Text != "a tone" {
		t.Errorf("transcript %+v, want the step's text", res.Events)
	}

	left, right := readRecording(t, rec)
	if len(left) < 2*sampleRate {
		t.Fatalf("recording has %d samples, want at least the 2 s prompt", len(left))
	}
	// The tone (amplitude 8000: mean absolute ~5100) is on the left during
	// the first two seconds, silence after it and on the right (sipp's uas
	// sends no audio).
	if m := meanAbs(left[200 : 2*sampleRate-200]); m < 4000 {
		t.Errorf("left channel during the prompt: mean amplitude %.0f, want the tone (~5100)", m)
	}
	if m := meanAbs(left[2*sampleRate+400:]); m > 50 {
		t.Errorf("left channel after the prompt: mean amplitude %.0f, want silence", m)
	}
	if m := meanAbs(right); m > 50 {
		t.Errorf("right channel: mean amplitude %.0f, want silence", m)
	}
}

// An empty script listens, without hanging up on silence, until the
// callee hangs up.
func TestEmptyScriptListensUntilCalleeHangsUp(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	s := startSipp(t, "tcp", scenario(t, "callee_bye.xml", "talk_ms", "2500")...)
	res := place(t, e, Trunk{Address: "sip:" + s.addr, Transport: "tcp"}, CallSpec{})
	s.wait(t)
	if !res.Answered || res.HangupBy != HangupByCallee {
		t.Fatalf("result %+v: want answered, callee hangup", res)
	}
	if d := res.EndedAt.Sub(res.AnsweredAt); d < 2400*time.Millisecond || d > 5*time.Second {
		t.Errorf("connected for %s, want about 2.5 s", d)
	}
}

// A script whose steps play nothing ends the call at once.
func TestScriptWithoutAudioHangsUp(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	s := startSipp(t, "udp", scenario(t, "uas.xml")...)
	res := place(t, e, Trunk{Address: "sip:" + s.addr}, CallSpec{Script: []Step{{Text: "bye", Hangup: true}, {Text: "never said"}}})
	s.wait(t)
	if !res.Answered || res.HangupBy != HangupByAgent {
		t.Fatalf("result %+v: want answered, agent hangup", res)
	}
	if d := res.EndedAt.Sub(res.AnsweredAt); d > 2*time.Second {
		t.Errorf("connected for %s, want a hangup at once", d)
	}
	if len(res.Events) != 1 || res.Events[0].Text != "bye" {
		t.Errorf("transcript %+v, want only the hangup step", res.Events)
	}
}

// A 183 Session Progress with SDP (early media, as carriers send for
// ringback) before the 200 changes nothing.
func TestEarlyMedia(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	sdp := "Content-Type: application/sdp\n      Content-Length: [len]\n\n" +
		"      v=0\n      o=callee 1 1 IN IP[local_ip_type] [local_ip]\n      s=-\n" +
		"      c=IN IP[media_ip_type] [media_ip]\n      t=0 0\n" +
		"      m=audio [media_port] RTP/AVP 0\n      a=rtpmap:0 PCMU/8000\n"
	s := startSipp(t, "udp", editedScenario(t, "uas.xml",
		"SIP/2.0 180 Ringing", "SIP/2.0 183 Session Progress",
		"Content-Length: 0\n\n    ]]>\n  </send>\n  <send retrans", sdp+"\n    ]]>\n  </send>\n  <send retrans")...)
	rec := filepath.Join(t.TempDir(), "call.wav")
	res := place(t, e, Trunk{Address: "sip:" + s.addr}, CallSpec{Script: sayTone(time.Second), RecordPath: rec})
	s.wait(t)
	if !res.Answered || res.HangupBy != HangupByAgent {
		t.Fatalf("result %+v: want answered, hung up by us", res)
	}
	left, _ := readRecording(t, rec)
	if m := meanAbs(left[200 : sampleRate-200]); m < 4000 {
		t.Errorf("left channel during the prompt: mean amplitude %.0f, want the tone", m)
	}
}

// A 200 whose SDP has no codec we speak: diago ACKs and BYEs it, and Place
// says why.
func TestAnswerWithoutCommonCodec(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	s := startSipp(t, "udp", editedScenario(t, "uas.xml", "RTP/AVP 0\n      a=rtpmap:0 PCMU/8000", "RTP/AVP 18\n      a=rtpmap:18 G729/8000")...)
	res, err := e.Place(t.Context(), Trunk{Address: "sip:" + s.addr}, CallSpec{From: "+14155550100", To: "+14155550123"})
	s.wait(t) // sipp got ACK and BYE
	if err == nil {
		t.Error("Place succeeded, want an error about the SDP")
	}
	if !res.Answered || res.Outcome.StatusCode != 200 || res.EndedAt != res.AnsweredAt {
		t.Errorf("result %+v: want answered and ended at once", res)
	}
}

// Carriers refresh long calls (RFC 4028 session timers) with UPDATE or
// re-INVITE; the call and its audio go on.
func TestSessionRefresh(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	s := startSipp(t, "udp", scenario(t, "session_refresh.xml")...)
	rec := filepath.Join(t.TempDir(), "call.wav")
	res := place(t, e, Trunk{Address: "sip:" + s.addr}, CallSpec{Script: sayTone(2 * time.Second), RecordPath: rec})
	s.wait(t)
	if !res.Answered || res.HangupBy != HangupByAgent {
		t.Fatalf("result %+v: want answered, hung up by us", res)
	}
	if d := res.EndedAt.Sub(res.AnsweredAt); d < 1900*time.Millisecond {
		t.Errorf("connected for %s, want about 2 s", d)
	}
	left, _ := readRecording(t, rec)
	if m := meanAbs(left[200 : 2*sampleRate-200]); m < 4000 {
		t.Errorf("left channel during the prompt: mean amplitude %.0f, want the tone", m)
	}
}

// sipp echoes our RTP back (-rtp_echo): the echo lands on the right
// channel at the time the prompt is on the left.
func TestRecordingChannelsAligned(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	s := startSipp(t, "udp", append(scenario(t, "uas.xml"), "-rtp_echo")...)
	rec := filepath.Join(t.TempDir(), "call.wav")
	res := place(t, e, Trunk{Address: "sip:" + s.addr}, CallSpec{Script: sayTone(time.Second), RecordPath: rec})
	s.wait(t)
	if !res.Answered || res.HangupBy != HangupByAgent {
		t.Fatalf("result %+v: want answered, hung up by us", res)
	}
	left, right := readRecording(t, rec)
	onset := func(pcm []int) int {
		for i, v := range pcm {
			if v > 1000 || v < -1000 {
				return i
			}
		}
		return -1
	}
	l, r := onset(left), onset(right)
	if l < 0 || r < 0 {
		t.Fatalf("tone onset: left %d, right %d: want the tone on both", l, r)
	}
	lag := r - l
	t.Logf("the echo lags the prompt by %d samples", lag)
	if lag < 0 || lag > sampleRate/10 {
		t.Errorf("the echo starts %d samples after the prompt, want 0 to 100 ms (800)", lag)
	}
	if m := meanAbs(right[r : r+sampleRate-400]); m < 4000 {
		t.Errorf("right channel during the echo: mean amplitude %.0f, want the tone", m)
	}
}

// The callee hangs up 1 s into a 5 s prompt.
func TestCalleeHangsUp(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	s := startSipp(t, "udp", scenario(t, "callee_bye.xml", "talk_ms", "1000")...)
	rec := filepath.Join(t.TempDir(), "call.wav")
	res := place(t, e, Trunk{Address: "sip:" + s.addr}, CallSpec{Script: sayTone(5 * time.Second), RecordPath: rec})
	s.wait(t)
	if !res.Answered || res.HangupBy != HangupByCallee {
		t.Fatalf("result %+v: want answered, callee hangup", res)
	}
	if d := res.EndedAt.Sub(res.AnsweredAt); d < 900*time.Millisecond || d > 3*time.Second {
		t.Errorf("connected for %s, want about 1 s", d)
	}
	left, _ := readRecording(t, rec)
	if n := len(left); n < sampleRate*8/10 || n > 3*sampleRate {
		t.Fatalf("recording has %d samples, want about 1 s", n)
	}
	// The BYE came mid-prompt: the recording has the prompt to the end.
	if m := meanAbs(left[200 : sampleRate*8/10]); m < 4000 {
		t.Errorf("left channel: mean amplitude %.0f, want the prompt until the BYE", m)
	}
	assertTranscript(t, res, []Event{{Turn: telephony.Turn{Speaker: SpeakerAgent, Text: "a tone"}}})
}

func TestMaxDuration(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	s := startSipp(t, "udp", scenario(t, "uas.xml")...)
	res := place(t, e, Trunk{Address: "sip:" + s.addr}, CallSpec{Script: sayTone(5 * time.Second), MaxDuration: 1500 * time.Millisecond})
	s.wait(t)
	if !res.Answered || res.HangupBy != HangupByMaxDuration {
		t.Fatalf("result %+v: want answered, max_duration hangup", res)
	}
	if d := res.EndedAt.Sub(res.AnsweredAt); d < 1400*time.Millisecond || d > 2500*time.Millisecond {
		t.Errorf("connected for %s, want about 1.5 s", d)
	}
}

func TestDigestAuth(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	t.Run("right password", func(t *testing.T) {
		s := startSipp(t, "udp", scenario(t, "auth.xml", "user", "trunkuser", "pass", "s3cret")...)
		res := place(t, e, Trunk{Address: "sip:" + s.addr, Username: "trunkuser", Password: "s3cret"}, CallSpec{Script: sayTone(200 * time.Millisecond)})
		s.wait(t)
		if !res.Answered || res.Outcome.StatusCode != 200 || res.HangupBy != HangupByAgent {
			t.Errorf("result %+v: want answered after the 401 challenge", res)
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		s := startSipp(t, "udp", scenario(t, "auth.xml", "user", "trunkuser", "pass", "s3cret")...)
		res := place(t, e, Trunk{Address: "sip:" + s.addr, Username: "trunkuser", Password: "wrong"}, CallSpec{})
		<-s.Done()
		if res.Answered || res.Outcome.StatusCode != 403 || res.Disposition() != telephony.CarrierFailure {
			t.Errorf("result %+v: want 403 carrier_failure", res)
		}
	})
}

func TestProxyDigestAuth(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	port := freePort(t, "udp")
	// RFC 2617 digest without qop, as the challenge offers none.
	md5hex := func(s string) string { return fmt.Sprintf("%x", md5.Sum([]byte(s))) } //nolint:gosec // SIP digest is MD5
	uri := fmt.Sprintf("sip:+14155550123@127.0.0.1:%d", port)
	response := md5hex(md5hex("trunkuser:trunk.test:s3cret") + ":47ebe028cda119c35d4877b383027d28da013815:" + md5hex("INVITE:"+uri))
	s := startSippOn(t, "udp", port, scenario(t, "auth_proxy.xml", "response", response)...)
	res := place(t, e, Trunk{Address: "sip:" + s.addr, Username: "trunkuser", Password: "s3cret"}, CallSpec{To: "+14155550123", Script: sayTone(200 * time.Millisecond)})
	s.wait(t)
	if !res.Answered || res.Outcome.StatusCode != 200 || res.HangupBy != HangupByAgent {
		t.Errorf("result %+v: want answered after the 407 challenge", res)
	}
}

func TestPlaceRejectsBadInput(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	for _, tc := range []struct {
		name  string
		trunk Trunk
		call  CallSpec
	}{
		{"no address", Trunk{}, CallSpec{To: "+14155550123"}},
		{"bad transport", Trunk{Address: "sip:127.0.0.1:5060", Transport: "sctp"}, CallSpec{To: "+14155550123"}},
		{"no number", Trunk{Address: "sip:127.0.0.1:5060"}, CallSpec{}},
		{"gather without field", Trunk{Address: "sip:127.0.0.1:5060"}, CallSpec{To: "+14155550123", Script: []Step{{Gather: &Gather{NumDigits: 1}}}}},
		{"two finish keys", Trunk{Address: "sip:127.0.0.1:5060"}, CallSpec{To: "+14155550123", Script: []Step{{Gather: &Gather{Field: "pin", FinishOnKey: "#*"}}}}},
		{"finish key not a key", Trunk{Address: "sip:127.0.0.1:5060"}, CallSpec{To: "+14155550123", Script: []Step{{Gather: &Gather{Field: "pin", FinishOnKey: "x"}}}}},
		{"negative digits", Trunk{Address: "sip:127.0.0.1:5060"}, CallSpec{To: "+14155550123", Script: []Step{{Gather: &Gather{Field: "pin", NumDigits: -1}}}}},
		{"AMD parameters", Trunk{Address: "sip:127.0.0.1:5060"}, CallSpec{To: "+14155550123", AMD: &amd.Params{}}},
		{"recording not writable", Trunk{Address: "sip:127.0.0.1:5060"}, CallSpec{To: "+14155550123", RecordPath: "/nonexistent/dir/call.wav"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := e.Place(t.Context(), tc.trunk, tc.call); err == nil {
				t.Error("Place succeeded, want an error")
			} else if errors.Is(err, context.Canceled) {
				t.Errorf("Place: %v, want an input error", err)
			}
		})
	}
}

// The callee talks for 7 s (sipp plays its g711a.pcap recording, PCMA)
// and never hangs up: with an empty script we listen, record it on the
// right, and only MaxDuration ends the call.
func TestEmptyScriptRecordsCalleeUntilMaxDuration(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	s := startSipp(t, "udp", scenario(t, "callee_talks.xml")...)
	rec := filepath.Join(t.TempDir(), "call.wav")
	res := place(t, e, Trunk{Address: "sip:" + s.addr}, CallSpec{RecordPath: rec, MaxDuration: 8 * time.Second})
	s.wait(t)
	if !res.Answered || res.HangupBy != HangupByMaxDuration {
		t.Fatalf("result %+v: want answered, max_duration hangup", res)
	}
	if d := res.EndedAt.Sub(res.AnsweredAt); d < 7900*time.Millisecond || d > 10*time.Second {
		t.Errorf("connected for %s, want 8 s", d)
	}
	left, right := readRecording(t, rec)
	if len(right) < 7*sampleRate {
		t.Fatalf("recording has %d samples, want at least 7 s", len(right))
	}
	if m := meanAbs(left); m > 50 {
		t.Errorf("left channel: mean amplitude %.0f, want silence", m)
	}
	if m := meanAbs(right[3*sampleRate/2 : 6*sampleRate]); m < 500 {
		t.Errorf("right channel from 1.5 s to 6 s: mean amplitude %.0f, want the callee's speech", m)
	}
	if m := meanAbs(right[:sampleRate/4]); m > 50 {
		t.Errorf("right channel in the first 250 ms: mean amplitude %.0f, want silence", m)
	}
}
