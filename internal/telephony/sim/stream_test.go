package sim

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/stream"
	"github.com/switchboard-dev/switchboard/internal/webhook"
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
			Policy: webhook.URLPolicy{AllowInsecure: true}}, nil
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
}
