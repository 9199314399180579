package stream

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/zaf/g711"
	"go.uber.org/goleak"

	"github.com/switchboard-dev/switchboard/internal/egress"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// bot is a real WebSocket server standing in for the organization's bot.
type bot struct {
	srv   *httptest.Server
	conns chan *websocket.Conn
	reqs  chan *http.Request
	// handle, when set, answers the upgrade instead of accepting it.
	handle func(w http.ResponseWriter, r *http.Request) bool
}

func newBot(t *testing.T, handle func(w http.ResponseWriter, r *http.Request) bool) *bot {
	t.Helper()
	b := &bot{conns: make(chan *websocket.Conn, 1), reqs: make(chan *http.Request, 1), handle: handle}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.reqs <- r
		if b.handle != nil && b.handle(w, r) {
			return
		}
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		c.SetReadLimit(-1)
		b.conns <- c
	}))
	t.Cleanup(b.srv.Close)
	return b
}

func (b *bot) url() string { return "ws" + strings.TrimPrefix(b.srv.URL, "http") + "/bot" }

func (b *bot) config() Config {
	return Config{URL: b.url(), Token: "bot-token", SigningSecret: testSecret, Namespace: "demo",
		CallID: "call_00ff", From: "+14155550100", To: "+14155551234",
		Parameters: map[string]string{"customer": "Ada"}, Policy: egress.URLPolicy{AllowInsecure: true},
		ConnectTimeout: 2 * time.Second}
}

func (b *bot) accept(t *testing.T) *websocket.Conn {
	t.Helper()
	select {
	case c := <-b.conns:
		t.Cleanup(func() { _ = c.CloseNow() })
		return c
	case <-time.After(5 * time.Second):
		t.Fatal("the bot was never connected")
		return nil
	}
}

func dial(t *testing.T, cfg Config) *Session {
	t.Helper()
	s, err := Dial(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// next reads the bot's next message.
func next(t *testing.T, c *websocket.Conn) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, data, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("bot read: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("not JSON: %s", data)
	}
	return m
}

// nextEvent skips media until a message of event ev.
func nextEvent(t *testing.T, c *websocket.Conn, ev string) map[string]any {
	t.Helper()
	for {
		if m := next(t, c); m["event"] == ev {
			return m
		}
	}
}

func send(t *testing.T, c *websocket.Conn, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Write(context.Background(), websocket.MessageText, data); err != nil {
		t.Fatalf("bot write: %v", err)
	}
}

func botMedia(mulaw []byte) map[string]any {
	return map[string]any{"event": "media", "streamSid": "x", "media": map[string]any{"payload": base64.StdEncoding.EncodeToString(mulaw)}}
}

func tone(n int, hz float64) []int16 {
	pcm := make([]int16, n)
	for i := range pcm {
		pcm[i] = int16(8000 * math.Sin(2*math.Pi*hz*float64(i)/sampleRate))
	}
	return pcm
}

func ulaw(pcm []int16) []byte {
	out := make([]byte, len(pcm))
	for i, v := range pcm {
		out[i] = g711.EncodeUlawFrame(v)
	}
	return out
}

// play pulls frames until one carries audio, at most limit frames; it
// returns the audible frame's samples.
func play(s *Session, limit int) []int16 {
	frame := make([]int16, frameSamples)
	for range limit {
		s.NextFrame(frame)
		for _, v := range frame {
			if v != 0 {
				return frame
			}
		}
	}
	return nil
}

func TestStreamSpeaksTwilioProtocol(t *testing.T) {
	b := newBot(t, nil)
	s := dial(t, b.config())
	c := b.accept(t)

	r := <-b.reqs
	if got := r.Header.Get("Authorization"); got != "Bearer bot-token" {
		t.Errorf("Authorization = %q, want the bearer token", got)
	}
	wh, err := standardwebhooks.NewWebhook(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(nil, r.Header); err != nil {
		t.Errorf("the upgrade's Standard Webhooks signature does not verify: %v", err)
	}
	if r.Header.Get("webhook-id") != "call_00ff" {
		t.Errorf("webhook-id = %q, want the call id", r.Header.Get("webhook-id"))
	}

	if m := next(t, c); m["event"] != "connected" || m["protocol"] != "Call" || m["version"] != "1.0.0" {
		t.Errorf("first message %v, want connected", m)
	}
	start := next(t, c)
	info, _ := start["start"].(map[string]any)
	params, _ := info["customParameters"].(map[string]any)
	ids := s.IDs()
	if start["event"] != "start" || start["sequenceNumber"] != "1" || info["streamSid"] != ids.StreamSid ||
		info["callSid"] != ids.CallSid || info["accountSid"] != ids.AccountSid || start["streamSid"] != ids.StreamSid {
		t.Errorf("start = %v, want sequence 1 and the ids %+v", start, ids)
	}
	if params["customer"] != "Ada" || params["from_number"] != "+14155550100" || params["to_number"] != "+14155551234" || params["call_id"] != "call_00ff" {
		t.Errorf("customParameters = %v", params)
	}

	// The callee's tone reaches the bot intact (mu-law), in 20 ms frames.
	in := tone(800, 440)
	s.Inbound(in, time.Now())
	for i := range 5 {
		m := next(t, c)
		media, _ := m["media"].(map[string]any)
		payload, _ := base64.StdEncoding.DecodeString(media["payload"].(string))
		if m["event"] != "media" || media["track"] != "inbound" || media["chunk"] != strconv.Itoa(i+1) || m["sequenceNumber"] != strconv.Itoa(i+2) || len(payload) != frameSamples {
			t.Fatalf("media %d = %v (payload %d bytes)", i, m, len(payload))
		}
		if want := ulaw(in[i*frameSamples : (i+1)*frameSamples]); string(payload) != string(want) {
			t.Fatalf("media %d: the callee's audio changed on the way", i)
		}
	}

	s.DTMF('7')
	if m := next(t, c); m["event"] != "dtmf" || m["dtmf"].(map[string]any)["digit"] != "7" || m["dtmf"].(map[string]any)["track"] != "inbound_track" {
		t.Errorf("dtmf = %v", m)
	}

	// The bot's audio plays, then its mark comes back.
	out := tone(frameSamples*3, 1000)
	send(t, c, botMedia(ulaw(out)))
	send(t, c, map[string]any{"event": "mark", "streamSid": ids.StreamSid, "mark": map[string]any{"name": "greeting"}})
	waitQueued(t, s, 60*time.Millisecond)
	first := play(s, 10)
	if first == nil {
		t.Fatal("the bot's audio never played")
	}
	if want := ulaw(out[:frameSamples]); string(ulaw(first)) != string(want) {
		t.Error("the bot's first frame played is not what it sent")
	}
	frame := make([]int16, frameSamples)
	s.NextFrame(frame)
	s.NextFrame(frame) // the last of the three frames: the mark is due
	if m := next(t, c); m["event"] != "mark" || m["mark"].(map[string]any)["name"] != "greeting" {
		t.Errorf("after the audio, got %v, want the mark echoed", m)
	}

	// Close sends stop and closes.
	go s.Close()
	stop := nextEvent(t, c, "stop")
	if st := stop["stop"].(map[string]any); st["callSid"] != ids.CallSid || st["accountSid"] != ids.AccountSid {
		t.Errorf("stop = %v", stop)
	}
	_, _, err = c.Read(context.Background())
	if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Errorf("after stop: %v, want a normal close", err)
	}
	if err := s.Err(); err != nil {
		t.Errorf("Err after Close = %v, want nil", err)
	}
}

func waitQueued(t *testing.T, s *Session, want time.Duration) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for s.Stats().Queued < want {
		if time.Now().After(deadline) {
			t.Fatalf("queued %v, want %v", s.Stats().Queued, want)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestClearDropsQueuedAudioAndEchoesMarks(t *testing.T) {
	b := newBot(t, nil)
	s := dial(t, b.config())
	c := b.accept(t)
	nextEvent(t, c, "start")
	send(t, c, botMedia(ulaw(tone(8000, 500)))) // 1 s
	send(t, c, map[string]any{"event": "mark", "mark": map[string]any{"name": "long"}})
	waitQueued(t, s, time.Second)
	if play(s, 5) == nil {
		t.Fatal("nothing played")
	}
	send(t, c, map[string]any{"event": "clear", "streamSid": s.IDs().StreamSid})
	if m := nextEvent(t, c, "mark"); m["mark"].(map[string]any)["name"] != "long" {
		t.Errorf("after clear: %v, want the pending mark echoed", m)
	}
	if q := s.Stats().Queued; q != 0 {
		t.Errorf("after clear %v still queued", q)
	}
	if play(s, 3) != nil {
		t.Error("audio played after clear")
	}
}

func TestBotClosingIsAHangup(t *testing.T) {
	b := newBot(t, nil)
	s := dial(t, b.config())
	c := b.accept(t)
	nextEvent(t, c, "start")
	_ = c.Close(websocket.StatusNormalClosure, "bye")
	<-s.Done()
	if err := s.Err(); !errors.Is(err, ErrBotHangup) {
		t.Errorf("Err = %v, want ErrBotHangup", err)
	}
}

func TestBotCrashingIsADisconnection(t *testing.T) {
	b := newBot(t, nil)
	s := dial(t, b.config())
	c := b.accept(t)
	nextEvent(t, c, "start")
	_ = c.CloseNow() // status 1001 would be a hangup: drop the TCP connection instead
	<-s.Done()
	assertFailure(t, s.Err(), ReasonDisconnected, "")
}

func assertFailure(t *testing.T, err error, reason, detail string) {
	t.Helper()
	var f *Failure
	if !errors.As(err, &f) || f.Reason != reason || !strings.Contains(f.Detail, detail) {
		t.Errorf("error %v, want a %s failure saying %q", err, reason, detail)
	}
}

func TestConnectFaults(t *testing.T) {
	t.Run("401", func(t *testing.T) {
		b := newBot(t, func(w http.ResponseWriter, r *http.Request) bool {
			http.Error(w, "no", http.StatusUnauthorized)
			return true
		})
		_, err := Dial(context.Background(), b.config())
		assertFailure(t, err, ReasonConnectFailed, "HTTP 401")
	})
	t.Run("never answers", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		cfg := newBot(t, nil).config()
		cfg.URL, cfg.ConnectTimeout = "ws://"+ln.Addr().String()+"/bot", 300*time.Millisecond
		_, err = Dial(context.Background(), cfg)
		assertFailure(t, err, ReasonConnectFailed, "within 300ms")
	})
	t.Run("answers slowly but in time", func(t *testing.T) {
		b := newBot(t, func(http.ResponseWriter, *http.Request) bool {
			time.Sleep(300 * time.Millisecond) // a slow bot, not synchronization
			return false
		})
		s := dial(t, b.config())
		b.accept(t)
		s.Close()
	})
	t.Run("ws without dev", func(t *testing.T) {
		cfg := newBot(t, nil).config()
		cfg.Policy.AllowInsecure = false
		_, err := Dial(context.Background(), cfg)
		assertFailure(t, err, ReasonConnectFailed, "only in development")
	})
	t.Run("private address", func(t *testing.T) {
		cfg := newBot(t, nil).config()
		cfg.URL, cfg.Policy.AllowInsecure = "wss://127.0.0.1:1/bot", false
		_, err := Dial(context.Background(), cfg)
		assertFailure(t, err, ReasonConnectFailed, "loopback")
	})
}

func TestMalformedMessagesAreIgnored(t *testing.T) {
	b := newBot(t, nil)
	s := dial(t, b.config())
	c := b.accept(t)
	nextEvent(t, c, "start")
	for _, bad := range []string{"{not json", `{"event":"media","media":{"payload":"!!!"}}`, `{"event":"dance"}`} {
		if err := c.Write(context.Background(), websocket.MessageText, []byte(bad)); err != nil {
			t.Fatal(err)
		}
	}
	send(t, c, botMedia(ulaw(tone(frameSamples*2, 700))))
	waitQueued(t, s, 40*time.Millisecond)
	if got := s.Stats().Malformed; got != 2 {
		t.Errorf("malformed = %d, want 2 (bad JSON, bad base64; unknown events are ignored)", got)
	}
	if play(s, 5) == nil {
		t.Error("audio after malformed messages did not play")
	}
	select {
	case <-s.Done():
		t.Errorf("the stream ended: %v", s.Err())
	default:
	}
}

func TestOversizeMessageClosesTheStream(t *testing.T) {
	b := newBot(t, nil)
	s := dial(t, b.config())
	c := b.accept(t)
	nextEvent(t, c, "start")
	huge := `{"event":"media","media":{"payload":"` + strings.Repeat("A", 10<<20) + `"}}`
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		_ = c.Write(context.Background(), websocket.MessageText, []byte(huge))
	}()
	<-s.Done()
	assertFailure(t, s.Err(), ReasonDisconnected, "over the 1048576-byte limit")
	s.Close() // drops the connection: the bot's write ends
	<-wrote
}

// A bot sending a minute of audio at once fills the ring and waits; the
// queue never exceeds MaxQueued, and the rest arrives as audio plays.
func TestTooFastAudioIsBounded(t *testing.T) {
	b := newBot(t, nil)
	cfg := b.config()
	cfg.MaxQueued = time.Second
	s := dial(t, cfg)
	c := b.accept(t)
	nextEvent(t, c, "start")
	chunk := ulaw(tone(8000, 300))
	sent := make(chan error, 1)
	go func() {
		var err error
		for range 60 {
			data, _ := json.Marshal(botMedia(chunk))
			if err = c.Write(context.Background(), websocket.MessageText, data); err != nil {
				break
			}
		}
		sent <- err
	}()
	waitQueued(t, s, time.Second)
	for s.Stats().Waits == 0 {
		time.Sleep(time.Millisecond)
	}
	frame := make([]int16, frameSamples)
	for range 50 * 62 { // play everything: a minute of audio and the prebuffer
		s.NextFrame(frame)
		if q := s.Stats().Queued; q > time.Second {
			t.Fatalf("queued %v, over the 1 s bound", q)
		}
	}
	if err := <-sent; err != nil {
		t.Fatalf("bot send: %v", err)
	}
}
