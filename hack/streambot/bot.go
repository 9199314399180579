// Package streambot is an example voice bot for Switchboard's agent
// streams: an echo-and-DTMF bot speaking Twilio's Media Streams protocol,
// the way a bot written for Twilio (for example with Pipecat's
// TwilioFrameSerializer) does. It plays back what the callee says, about a
// second later; a key gets a short beep and a mark named after the key,
// * clears the queued audio (barge-in) and # hangs up (closes the stream).
//
// `make run` serves it on 127.0.0.1:8090 for the sample Agent
// stream-echo; cmd/streambot runs it alone.
package streambot

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"math"
	"net/http"
	"time"

	"github.com/coder/websocket"
	"github.com/zaf/g711"
)

// Handler serves one bot stream per WebSocket connection. With a Token,
// it refuses an upgrade without "Authorization: Bearer <Token>" (401).
type Handler struct {
	Token string
	Log   *slog.Logger
}

// message is what Switchboard sends (the fields this bot reads).
type message struct {
	Event     string `json:"event"`
	StreamSid string `json:"streamSid"`
	Start     struct {
		CallSid          string            `json:"callSid"`
		CustomParameters map[string]string `json:"customParameters"`
	} `json:"start"`
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

// echoDelay is how much of the callee's audio the bot holds before
// sending it back: 50 frames of 20 ms.
const echoDelay = 50

func (h Handler) log() *slog.Logger {
	if h.Log == nil {
		return slog.Default()
	}
	return h.Log
}

func (h Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.Token != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+h.Token)) != 1 {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer func() { _ = c.CloseNow() }()
	c.SetReadLimit(1 << 20)
	h.serve(r.Context(), c)
}

func (h Handler) serve(ctx context.Context, c *websocket.Conn) {
	var streamSid string
	var held []string // base64 payloads waiting to be echoed
	for {
		var m message
		_, data, err := c.Read(ctx)
		if err != nil {
			return // stop came, or the call ended
		}
		if json.Unmarshal(data, &m) != nil {
			continue
		}
		switch m.Event {
		case "start":
			streamSid = m.StreamSid
			h.log().Info("stream started", "streamSid", streamSid, "callSid", m.Start.CallSid,
				"call_id", m.Start.CustomParameters["call_id"], "to", m.Start.CustomParameters["to_number"])
		case "media":
			held = append(held, m.Media.Payload)
			if len(held) > echoDelay {
				send(ctx, c, map[string]any{"event": "media", "streamSid": streamSid, "media": map[string]any{"payload": held[0]}})
				held = held[1:]
			}
		case "dtmf":
			if !h.key(ctx, c, streamSid, m.DTMF.Digit) {
				return
			}
			held = held[:0]
		case "mark":
			h.log().Info("mark played", "streamSid", streamSid, "name", m.Mark.Name)
		case "stop":
			h.log().Info("stream stopped", "streamSid", streamSid)
			return
		}
	}
}

// key answers a key press; false when the bot hangs up.
func (h Handler) key(ctx context.Context, c *websocket.Conn, streamSid, digit string) bool {
	switch digit {
	case "#":
		_ = c.Close(websocket.StatusNormalClosure, "goodbye")
		return false
	case "*":
		send(ctx, c, map[string]any{"event": "clear", "streamSid": streamSid})
	default:
		send(ctx, c, map[string]any{"event": "media", "streamSid": streamSid, "media": map[string]any{"payload": beep}})
		send(ctx, c, map[string]any{"event": "mark", "streamSid": streamSid, "mark": map[string]any{"name": "key-" + digit}})
	}
	return true
}

func send(ctx context.Context, c *websocket.Conn, v any) {
	data, err := json.Marshal(v)
	if err == nil {
		_ = c.Write(ctx, websocket.MessageText, data)
	}
}

// beep is 200 ms of 880 Hz, mu-law, base64.
var beep = func() string {
	b := make([]byte, 8000/5)
	for i := range b {
		b[i] = g711.EncodeUlawFrame(int16(6000 * math.Sin(2*math.Pi*880*float64(i)/8000)))
	}
	return base64.StdEncoding.EncodeToString(b)
}()

// Serve serves the bot at addr (path /stream) until ctx ends.
func Serve(ctx context.Context, addr string, h Handler) error {
	mux := http.NewServeMux()
	mux.Handle("/stream", h)
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
		return err
	}
	return nil
}
