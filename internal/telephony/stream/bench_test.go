package stream

// BenchmarkAddedLatency measures what the bridge adds to the audio's way
// over a loopback WebSocket (no SIP: the call's media calls Inbound and
// NextFrame as the engine's RTP reader and 20 ms-paced writer do).
//
// callee->bot: from Inbound completing a frame to the bot reading its
// media message. bot->callee: from the bot writing a 20 ms media message
// to the 20 ms tick whose frame carries it, with the bot sending
//   - utterances: a frame every 300 ms, each the start of an utterance
//     that waits the jitter buffer's playout delay (the worst case);
//   - speech: a frame every 20 ms, real-time speech as it plays once the
//     utterance started;
//   - every100ms: a frame every 100 ms, the queue dry in between (the
//     pattern of the figures before the adaptive playout delay: each
//     frame now counts as late audio, played at the next tick).
//
// Reports p50 and p95 of each; each takes
// SWITCHBOARD_BENCH_STREAM_SECONDS (default 10) of real time.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/switchboard-dev/switchboard/internal/egress"
)

func BenchmarkAddedLatency(b *testing.B) {
	seconds := 10
	if v, err := strconv.Atoi(os.Getenv("SWITCHBOARD_BENCH_STREAM_SECONDS")); err == nil && v > 0 {
		seconds = v
	}
	for _, c := range []struct {
		name   string
		period time.Duration
	}{{"utterances", 300 * time.Millisecond}, {"speech", frameTime}, {"every100ms", 100 * time.Millisecond}} {
		b.Run(c.name, func(b *testing.B) { addedLatency(b, seconds, c.period) })
	}
}

// addedLatency runs the measurement for seconds with the bot sending a
// frame every period.
func addedLatency(b *testing.B, seconds int, period time.Duration) {
	loud := ulaw(tone(frameSamples, 1000))
	var mu sync.Mutex
	var botSent []time.Time
	var inLatency []time.Duration
	var inSent []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer func() { _ = c.CloseNow() }()
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		go func() { // the bot speaks a frame every period
			payload, _ := json.Marshal(botMedia(loud))
			t := time.NewTicker(period)
			defer t.Stop()
			for ctx.Err() == nil {
				<-t.C
				mu.Lock()
				botSent = append(botSent, time.Now())
				mu.Unlock()
				if c.Write(ctx, websocket.MessageText, payload) != nil {
					return
				}
			}
		}()
		n := 0
		for {
			_, data, err := c.Read(ctx)
			if err != nil {
				return
			}
			at := time.Now()
			var m struct {
				Event string `json:"event"`
				Media struct {
					Payload string `json:"payload"`
				} `json:"media"`
			}
			_ = json.Unmarshal(data, &m)
			if m.Event != "media" {
				continue
			}
			if p, _ := base64.StdEncoding.DecodeString(m.Media.Payload); string(p) == string(loud) {
				mu.Lock()
				if n < len(inSent) {
					inLatency = append(inLatency, at.Sub(inSent[n]))
				}
				mu.Unlock()
				n++
			}
		}
	}))
	defer srv.Close()
	s, err := Dial(context.Background(), Config{URL: "ws" + strings.TrimPrefix(srv.URL, "http"), CallID: "call_bench",
		Policy: egress.URLPolicy{AllowInsecure: true}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ResetTimer()
	var outLatency []time.Duration
	frame := make([]int16, frameSamples)
	in := tone(frameSamples, 1000)
	played := 0
	tick := time.NewTicker(frameTime)
	defer tick.Stop()
	for i := 0; i < seconds*50; i++ {
		<-tick.C
		at := time.Now()
		mu.Lock()
		inSent = append(inSent, at)
		mu.Unlock()
		s.Inbound(in, at)
		s.NextFrame(frame)
		if slices.ContainsFunc(frame, func(v int16) bool { return v > 4000 }) { // the bot's frame
			mu.Lock()
			if played < len(botSent) {
				outLatency = append(outLatency, time.Since(botSent[played]))
			}
			mu.Unlock()
			played++
		}
	}
	b.StopTimer()
	mu.Lock()
	defer mu.Unlock()
	report(b, "callee_to_bot", inLatency)
	report(b, "bot_to_callee", outLatency)
}

func report(b *testing.B, name string, d []time.Duration) {
	if len(d) == 0 {
		b.Errorf("%s: nothing measured", name)
		return
	}
	slices.Sort(d)
	ms := func(q float64) float64 { return float64(d[int(q*float64(len(d)-1))].Microseconds()) / 1000 }
	b.ReportMetric(ms(0.5), name+"_p50_ms")
	b.ReportMetric(ms(0.95), name+"_p95_ms")
	b.ReportMetric(float64(len(d)), name+"_samples")
}
