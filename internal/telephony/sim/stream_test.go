package sim

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/zaf/g711"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/egress"
	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/audio"
	"github.com/switchboard-dev/switchboard/internal/telephony/stream"
)

// streamBot is a real WebSocket bot; run serves each connection.
func streamBot(t *testing.T, run func(c *websocket.Conn)) (*Carrier, telephony.Request, chan struct{}) {
	t.Helper()
	connected := make(chan struct{}, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer func() { _ = c.CloseNow() }()
		connected <- struct{}{}
		run(c)
	}))
	t.Cleanup(srv.Close)
	c := New(Timings{Ring: 0, Talk: 2 * time.Second})
	c.EnableStreams(func(_ context.Context, req telephony.Request) (*stream.Config, error) {
		return &stream.Config{URL: req.Agent.Spec.Stream.URL, CallID: req.CallID, Namespace: req.Namespace,
			Policy: egress.URLPolicy{AllowInsecure: true}}, nil
	})
	req := telephony.Request{CallID: "call_5151", Namespace: "demo", To: "+14155551234",
		Agent: &switchboardv1.Agent{Spec: switchboardv1.AgentSpec{Stream: &switchboardv1.StreamSpec{URL: "ws" + strings.TrimPrefix(srv.URL, "http")}}}}
	t.Cleanup(func() { c.Release(context.Background(), req) })
	return c, req, connected
}

// untilEnded polls Progress until the call ended.
func untilEnded(t *testing.T, c *Carrier, req telephony.Request, placedAt time.Time) telephony.Progress {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		p, err := c.Progress(context.Background(), req, placedAt, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if p.Phase == telephony.Ended {
			return p
		}
		time.Sleep(10 * time.Millisecond) // polling, as the reconciler's requeue does
	}
	t.Fatal("the call never ended")
	return telephony.Progress{}
}

// The simulated callee speaks into the stream; the bot hanging up ends
// the call (agent_hangup).
func TestSimStreamCalleeSpeaksAndBotHangsUp(t *testing.T) {
	heard := make(chan bool, 1)
	c, req, _ := streamBot(t, func(c *websocket.Conn) {
		loud := false
		for !loud {
			_, data, err := c.Read(context.Background())
			if err != nil {
				break
			}
			var m struct {
				Event string `json:"event"`
				Media struct {
					Payload string `json:"payload"`
				} `json:"media"`
			}
			_ = json.Unmarshal(data, &m)
			if m.Event == "media" {
				b, _ := base64.StdEncoding.DecodeString(m.Media.Payload)
				for _, v := range b {
					loud = loud || v < 0x40 // mu-law: low codes are loud
				}
			}
		}
		heard <- loud
		_ = c.Close(websocket.StatusNormalClosure, "bye")
	})
	placedAt := time.Now()
	p := untilEnded(t, c, req, placedAt)
	if !<-heard {
		t.Error("the bot never heard the simulated callee")
	}
	if p.Disposition != telephony.Answered || p.DisconnectionReason != "agent_hangup" || p.Duration >= 2*time.Second {
		t.Errorf("progress %+v: want answered, agent_hangup before the callee's 2 s", p)
	}
}

// The callee hangs up at the end of Talk: the bot gets stop.
func TestSimStreamCalleeHangsUp(t *testing.T) {
	events := make(chan string, 1)
	c, req, _ := streamBot(t, func(c *websocket.Conn) {
		last := ""
		for {
			_, data, err := c.Read(context.Background())
			if err != nil {
				break
			}
			var m struct {
				Event string `json:"event"`
			}
			_ = json.Unmarshal(data, &m)
			last = m.Event
		}
		events <- last
	})
	p := untilEnded(t, c, req, time.Now())
	if p.DisconnectionReason != "user_hangup" || p.Duration < 2*time.Second {
		t.Errorf("progress %+v: want user_hangup after 2 s", p)
	}
	if last := <-events; last != "stop" {
		t.Errorf("the bot's last message was %q, want stop", last)
	}
}

// After an operator restart the stream is not reopened: the call ends as
// operator_restart when the process started.
func TestSimStreamCutByRestart(t *testing.T) {
	c, req, connected := streamBot(t, func(*websocket.Conn) {})
	placedAt := time.Now().Add(-time.Second) // answered before this carrier started
	p, err := c.Progress(context.Background(), req, placedAt, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if p.Phase != telephony.Ended || p.DisconnectionReason != "operator_restart" || p.Disposition != telephony.Answered {
		t.Errorf("progress %+v: want ended, answered, operator_restart", p)
	}
	select {
	case <-connected:
		t.Error("the stream was reopened after the restart")
	default:
	}
}

// A bot that cannot be reached ends the call with stream_connect_failed.
func TestSimStreamConnectFailed(t *testing.T) {
	c, req, _ := streamBot(t, func(*websocket.Conn) {})
	req.Agent.Spec.Stream.URL = "ws://127.0.0.1:1/nobody"
	p := untilEnded(t, c, req, time.Now())
	if p.DisconnectionReason != stream.ReasonConnectFailed || !strings.Contains(p.Detail, "could not connect") {
		t.Errorf("progress %+v: want stream_connect_failed, saying why", p)
	}
	// Nothing was heard: no recording rather than an empty WAV.
	if rc, err := c.Recording(context.Background(), req, p); !errors.Is(err, telephony.ErrNoRecording) {
		if rc != nil {
			_ = rc.Close()
		}
		t.Errorf("the call has a recording (%v), want none", err)
	}
}

// The bot's audio is recorded as played (left), the simulated callee as
// spoken (right), and the transcript says only what happened: no word of
// the bot's is invented. The recording goes at Release.
func TestSimStreamRecordsTheRealStreams(t *testing.T) {
	const botHz = 1000
	c, req, _ := streamBot(t, func(c *websocket.Conn) {
		pcm := make([]int16, SampleRate) // a second of the bot's tone
		for i := range pcm {
			pcm[i] = int16(8000 * math.Sin(2*math.Pi*botHz*float64(i)/SampleRate))
		}
		ctx := context.Background()
		payload, _ := json.Marshal(map[string]any{"event": "media", "media": map[string]any{
			"payload": base64.StdEncoding.EncodeToString(mulaw(pcm))}})
		mark, _ := json.Marshal(map[string]any{"event": "mark", "mark": map[string]any{"name": "tone-end"}})
		if c.Write(ctx, websocket.MessageText, payload) != nil || c.Write(ctx, websocket.MessageText, mark) != nil {
			return
		}
		for {
			if _, _, err := c.Read(ctx); err != nil {
				return
			}
		}
	})
	p := untilEnded(t, c, req, time.Now())
	rc, err := c.Recording(context.Background(), req, p)
	if err != nil {
		t.Fatal(err)
	}
	bot, heard, err := audio.DecodeStereo(rc)
	_ = rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got := toneSamples(bot, botHz); got < SampleRate*9/10 || got > SampleRate*11/10 {
		t.Errorf("the bot's 1 s tone fills %v of the left channel, want about 1 s", time.Duration(got)*time.Second/SampleRate)
	}
	if got := toneSamples(heard, botHz); got != 0 {
		t.Errorf("the bot's tone is on the callee's channel for %d samples", got)
	}
	if got := toneSamples(heard, calleeHz); got < SampleRate {
		t.Errorf("the simulated callee's tone fills %d samples of the right channel, want its speech", got)
	}

	turns, err := c.Transcript(context.Background(), req, p)
	if err != nil {
		t.Fatal(err)
	}
	var marks, spoken int
	for i, turn := range turns {
		switch {
		case i == 0:
			if !strings.HasPrefix(turn.Text, "(streaming to the bot: stream MZ") {
				t.Errorf("first turn %q, want the stream's identifiers", turn.Text)
			}
		case turn.Mark == "tone-end" && turn.Speaker == agent:
			marks++
		case turn.Speaker == callee && turn.Text == calleeUtterance && turn.End > turn.Start:
			spoken++
		default:
			t.Errorf("turn %d: %+v: want only the stream, its marks and the callee's utterances", i, turn)
		}
	}
	if marks != 1 || spoken < 1 {
		t.Errorf("%d marks, %d callee utterances in %+v; want the mark and the callee's speech", marks, spoken, turns)
	}

	path := c.streams.ended(req.CallID).recPath
	c.Release(context.Background(), req)
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the recording %s is still there after Release: %v", path, err)
	}
}

// toneSamples counts the samples of pcm in 20 ms frames where hz carries
// most of the frame's energy (Goertzel's algorithm).
func toneSamples(pcm []int16, hz float64) int {
	n := 0
	for i := 0; i+frameSamples <= len(pcm); i += frameSamples {
		frame := pcm[i : i+frameSamples]
		var energy float64
		for _, v := range frame {
			energy += float64(v) * float64(v)
		}
		if energy > 0 && goertzel(frame, hz) > 0.5*energy {
			n += frameSamples
		}
	}
	return n
}

// goertzel is the power of pcm at hz, scaled to compare with the sum of
// squares (a pure tone at hz gives about that sum).
func goertzel(pcm []int16, hz float64) float64 {
	coeff := 2 * math.Cos(2*math.Pi*hz/SampleRate)
	var s1, s2 float64
	for _, v := range pcm {
		s1, s2 = float64(v)+coeff*s1-s2, s1
	}
	return 2 * (s1*s1 + s2*s2 - coeff*s1*s2) / float64(len(pcm))
}

func mulaw(pcm []int16) []byte {
	out := make([]byte, len(pcm))
	for i, v := range pcm {
		out[i] = g711.EncodeUlawFrame(v)
	}
	return out
}
