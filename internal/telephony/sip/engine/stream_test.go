package engine

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/zaf/g711"
	"go.uber.org/goleak"

	"github.com/switchboard-dev/switchboard/internal/egress"
	"github.com/switchboard-dev/switchboard/internal/telephony/stream"
)

// These tests bridge real SIP calls (sipp callees) to a bot on a real
// WebSocket speaking Twilio's Media Streams protocol.

// noLeaks fails the test if a goroutine it started outlives it: called
// first, its check runs after every other cleanup (the engine's Close, the
// bot's server), so a bridge that leaves a stream reader or writer behind
// fails here.
func noLeaks(t *testing.T) {
	t.Helper()
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) })
}

// testBot serves one stream with run, on the test's own goroutine's behalf.
func testBot(t *testing.T, run func(c *websocket.Conn)) *stream.Config {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer func() { _ = c.CloseNow() }()
		c.SetReadLimit(-1)
		run(c)
	}))
	t.Cleanup(srv.Close)
	return &stream.Config{URL: "ws" + strings.TrimPrefix(srv.URL, "http"), Namespace: "demo", CallID: "call-stream",
		Policy: egress.URLPolicy{AllowInsecure: true}}
}

type botMsg struct {
	Event string `json:"event"`
	Media struct {
		Payload string `json:"payload"`
	} `json:"media"`
	DTMF struct {
		Digit string `json:"digit"`
	} `json:"dtmf"`
	Mark struct {
		Name string `json:"name"`
	} `json:"mark"`
}

func readMsg(c *websocket.Conn) (botMsg, []byte, error) {
	var m botMsg
	_, data, err := c.Read(context.Background())
	if err != nil {
		return m, nil, err
	}
	err = json.Unmarshal(data, &m)
	var payload []byte
	if m.Event == "media" {
		payload, _ = base64.StdEncoding.DecodeString(m.Media.Payload)
	}
	return m, payload, err
}

func sendJSON(c *websocket.Conn, v any) {
	data, _ := json.Marshal(v)
	_ = c.Write(context.Background(), websocket.MessageText, data)
}

func mulaw(pcm []int16) []byte {
	out := make([]byte, len(pcm))
	for i, v := range pcm {
		out[i] = g711.EncodeUlawFrame(v)
	}
	return out
}

func loudMulaw(b []byte) bool {
	var sum int
	for _, v := range b {
		sum += abs(int(g711.DecodeUlawFrame(v)))
	}
	return sum > 1000*len(b)
}

// sipp echoes what it hears: the bot's tone is played to the callee,
// recorded on our channel, and comes back to the bot as the callee's
// audio, intact; its mark comes back once the tone played; the bot
// closing the stream hangs up.
func TestStreamBridgesAudioBothWays(t *testing.T) {
	noLeaks(t)
	e := newEngine(t, EngineConfig{})
	s := startSipp(t, "udp", append(scenario(t, "uas.xml"), "-rtp_echo")...)
	sent := mulaw(tone(time.Second))
	type seen struct {
		echoed       []byte
		echoedAtMark int
		marked       bool
	}
	got := make(chan seen, 1)
	cfg := testBot(t, func(c *websocket.Conn) {
		var v seen
		defer func() { got <- v }()
		for i := 0; i < 2; i++ { // connected, start
			if _, _, err := readMsg(c); err != nil {
				return
			}
		}
		sendJSON(c, map[string]any{"event": "media", "media": map[string]any{"payload": base64.StdEncoding.EncodeToString(sent)}})
		sendJSON(c, map[string]any{"event": "mark", "mark": map[string]any{"name": "tone-end"}})
		for !v.marked {
			m, payload, err := readMsg(c)
			if err != nil {
				return
			}
			switch {
			case m.Event == "media" && loudMulaw(payload):
				v.echoed = append(v.echoed, payload...)
			case m.Event == "mark" && m.Mark.Name == "tone-end":
				v.marked, v.echoedAtMark = true, len(v.echoed)
			}
		}
		_ = c.Close(websocket.StatusNormalClosure, "done")
	})
	rec := filepath.Join(t.TempDir(), "call.wav")
	res := place(t, e, Trunk{Address: "sip:" + s.addr}, CallSpec{Stream: cfg, RecordPath: rec})
	s.wait(t)
	v := <-got
	if !res.Answered || res.HangupBy != HangupByAgent || res.DisconnectionReason() != "agent_hangup" {
		t.Fatalf("result %+v: want answered, the bot's hangup (agent_hangup)", res)
	}
	if !v.marked {
		t.Fatal("the mark never came back")
	}
	// The echo lags the playing by a few frames: most of the tone must
	// have come back before the mark did, or the mark came early.
	if v.echoedAtMark < len(sent)*7/10 {
		t.Errorf("the mark came back after %d bytes of the echoed tone, want it after the tone played (%d)", v.echoedAtMark, len(sent))
	}
	if !bytes.Contains(v.echoed, sent[frameSamples:4*frameSamples]) {
		t.Error("the tone that reached the bot is not the tone played")
	}
	left, right := readRecording(t, rec)
	if m := meanAbs(left[sampleRate/5 : sampleRate*9/10]); m < 4000 {
		t.Errorf("our channel: mean amplitude %.0f, want the bot's tone", m)
	}
	if m := meanAbs(right[sampleRate/5 : sampleRate*9/10]); m < 4000 {
		t.Errorf("the callee's channel: mean amplitude %.0f, want the echoed tone", m)
	}
	var marks []string
	for _, ev := range res.Events {
		if ev.Mark != "" {
			marks = append(marks, ev.Mark)
		}
	}
	if len(marks) != 1 || marks[0] != "tone-end" || !strings.Contains(res.Events[0].Text, "MZ") {
		t.Errorf("transcript %+v: want the stream's ids and the mark", res.Events)
	}
}

// The callee hangs up: the bot gets stop, then the socket closes.
func TestStreamCalleeHangupSendsStop(t *testing.T) {
	noLeaks(t)
	e := newEngine(t, EngineConfig{})
	s := startSipp(t, "udp", scenario(t, "callee_bye.xml", "talk_ms", "1500")...)
	events := make(chan []string, 1)
	cfg := testBot(t, func(c *websocket.Conn) {
		var evs []string
		defer func() { events <- evs }()
		for {
			m, _, err := readMsg(c)
			if err != nil {
				evs = append(evs, "closed:"+websocket.CloseStatus(err).String())
				return
			}
			if m.Event != "media" && (len(evs) == 0 || evs[len(evs)-1] != m.Event) {
				evs = append(evs, m.Event)
			}
		}
	})
	res := place(t, e, Trunk{Address: "sip:" + s.addr}, CallSpec{Stream: cfg})
	s.wait(t)
	if res.HangupBy != HangupByCallee {
		t.Errorf("hangup by %q, want callee", res.HangupBy)
	}
	if got, want := strings.Join(<-events, " "), "connected start stop closed:StatusNormalClosure"; got != want {
		t.Errorf("the bot saw %q, want %q", got, want)
	}
}

// clear cuts the bot's queued audio at once: in the recording, the tone
// stops within 100 ms of the clear.
func TestStreamClearCutsQueuedAudio(t *testing.T) {
	noLeaks(t)
	e := newEngine(t, EngineConfig{})
	s := startSipp(t, "udp", scenario(t, "uas.xml")...)
	cleared := make(chan time.Time, 1)
	cfg := testBot(t, func(c *websocket.Conn) {
		for i := 0; i < 2; i++ {
			if _, _, err := readMsg(c); err != nil {
				return
			}
		}
		sendJSON(c, map[string]any{"event": "media", "media": map[string]any{"payload": base64.StdEncoding.EncodeToString(mulaw(tone(3 * time.Second)))}})
		time.Sleep(time.Second) // the callee speaks: the bot barges in a second into its answer
		sendJSON(c, map[string]any{"event": "clear"})
		cleared <- time.Now()
		time.Sleep(500 * time.Millisecond)
		_ = c.Close(websocket.StatusNormalClosure, "")
	})
	rec := filepath.Join(t.TempDir(), "call.wav")
	res := place(t, e, Trunk{Address: "sip:" + s.addr}, CallSpec{Stream: cfg, RecordPath: rec})
	s.wait(t)
	clearAt := <-cleared
	left, _ := readRecording(t, rec)
	last := -1
	for i, v := range left {
		if v > 1000 || v < -1000 {
			last = i
		}
	}
	if last < 0 {
		t.Fatal("the tone is not in the recording")
	}
	toneEnd := res.AnsweredAt.Add(samplesDuration(last))
	cut := toneEnd.Sub(clearAt)
	t.Logf("the tone stopped %s after the clear was sent", cut)
	if cut > 100*time.Millisecond || cut < -100*time.Millisecond {
		t.Errorf("the tone stopped %s after the clear, want within 100 ms", cut)
	}
}

// The callee's keys reach the bot as dtmf messages.
func TestStreamForwardsDTMF(t *testing.T) {
	noLeaks(t)
	e := newEngine(t, EngineConfig{})
	s := startSipp(t, "udp", editedScenario(t, "uas.xml",
		"RTP/AVP 0\n      a=rtpmap:0 PCMU/8000", "RTP/AVP 0 101\n      a=rtpmap:0 PCMU/8000\n      a=rtpmap:101 telephone-event/8000\n      a=fmtp:101 0-16",
		`<recv request="ACK"/>`, `<recv request="ACK"/><nop><action><exec play_pcap_audio="`+writeDTMFPcap(t, "42#")+`"/></action></nop>`)...)
	digits := make(chan string, 1)
	cfg := testBot(t, func(c *websocket.Conn) {
		var d string
		for len(d) < 3 {
			m, _, err := readMsg(c)
			if err != nil {
				break
			}
			if m.Event == "dtmf" {
				d += m.DTMF.Digit
			}
		}
		digits <- d
		_ = c.Close(websocket.StatusNormalClosure, "")
	})
	res := place(t, e, Trunk{Address: "sip:" + s.addr}, CallSpec{Stream: cfg})
	s.wait(t)
	if d := <-digits; d != "42#" {
		t.Errorf("the bot got keys %q, want 42#", d)
	}
	if res.HangupBy != HangupByAgent {
		t.Errorf("hangup by %q, want agent (the bot closed)", res.HangupBy)
	}
}

// A bot that refuses the upgrade ends the call with stream_connect_failed
// and says why in the transcript.
func TestStreamConnectFailedEndsTheCall(t *testing.T) {
	noLeaks(t)
	e := newEngine(t, EngineConfig{})
	s := startSipp(t, "udp", scenario(t, "uas.xml")...)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "who are you", http.StatusUnauthorized)
	}))
	defer srv.Close()
	cfg := &stream.Config{URL: "ws" + strings.TrimPrefix(srv.URL, "http"), CallID: "call-401", Policy: egress.URLPolicy{AllowInsecure: true}}
	res := place(t, e, Trunk{Address: "sip:" + s.addr}, CallSpec{Stream: cfg})
	s.wait(t)
	if res.DisconnectionReason() != "stream_connect_failed" {
		t.Errorf("disconnection reason %q, want stream_connect_failed", res.DisconnectionReason())
	}
	if !strings.Contains(res.Failure, "HTTP 401") || len(res.Events) == 0 || !strings.Contains(res.Events[len(res.Events)-1].Text, "HTTP 401") {
		t.Errorf("transcript %+v: want the failure's reason", res.Events)
	}
}

// The API's stop (the bot's POST /v1/calls/{id}/stop, or anyone's) hangs
// up a streamed call: the bot gets stop, the reason is api_hangup.
func TestStreamStoppedByAPI(t *testing.T) {
	noLeaks(t)
	e := newEngine(t, EngineConfig{})
	s := startSipp(t, "udp", scenario(t, "uas.xml")...)
	stop := make(chan struct{})
	last := make(chan string, 1)
	cfg := testBot(t, func(c *websocket.Conn) {
		ev := ""
		for {
			m, _, err := readMsg(c)
			if err != nil {
				break
			}
			if m.Event == "start" {
				close(stop) // the bot asks for the stop once the stream is up
			}
			ev = m.Event
		}
		last <- ev
	})
	res := place(t, e, Trunk{Address: "sip:" + s.addr}, CallSpec{Stream: cfg, Stop: stop})
	s.wait(t)
	if res.HangupBy != HangupByAPI || res.DisconnectionReason() != "api_hangup" {
		t.Errorf("result %+v: want the API's hangup", res)
	}
	if ev := <-last; ev != "stop" {
		t.Errorf("the bot's last message was %q, want stop", ev)
	}
}
