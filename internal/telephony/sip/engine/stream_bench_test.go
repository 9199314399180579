package engine

// BenchmarkConcurrentStreamedCalls is BenchmarkConcurrentRecordedCalls
// (same environment variables, same figures) with every call streamed to
// an echo bot in this process over loopback WebSockets: the callee's tone
// goes to the bot, which sends each media message straight back, so audio
// flows both ways and both are recorded. Besides the callee channel's
// gaps, bot_gaps counts the gaps on our channel (the bot's audio as
// played: the bridge's playback, jitter buffer included), from 1 s after
// its first sound to 1 s before its end (bot_gap_ms, bot_gapcalls as
// for the callee). SWITCHBOARD_BENCH_STREAM_BOT=ahead replaces the echo
// with a bot that sends the whole call's tone at once (text-to-speech
// running ahead of real time). bot_underruns counts the times the bot's audio came
// after its time to play (the jitter buffer ran dry mid-speech);
// bot_jitter_max_ms and bot_playout_delay_max_ms are the highest of the
// calls' jitter estimates and of the playout delays they adapted to; the
// other bot gaps are stalls of our own writer (the recorder places our
// audio by when it is written), which scripted calls have too but this
// benchmark alone can see. dropped_to_bot counts the callee's frames
// dropped because the bot was not reading.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/switchboard-dev/switchboard/internal/egress"
	"github.com/switchboard-dev/switchboard/internal/telephony/audio"
	"github.com/switchboard-dev/switchboard/internal/telephony/stream"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

func BenchmarkConcurrentStreamedCalls(b *testing.B) {
	calls := testsupport.EnvPositive(b, "SWITCHBOARD_BENCH_SIP_CALLS", 200)
	rate := testsupport.EnvPositive(b, "SWITCHBOARD_BENCH_SIP_RATE", 50)
	talk := envDuration(b, "SWITCHBOARD_BENCH_SIP_TALK", 20*time.Second)
	tone := writeBenchTone(b, time.Second)
	s := startBenchSipp(b, benchMediaPort(), benchScenario(b, "bench_stream.xml",
		"tone", tone, "talk_ms", strconv.Itoa(int(talk.Milliseconds())))...)
	handler := echoBot
	if os.Getenv("SWITCHBOARD_BENCH_STREAM_BOT") == "ahead" {
		handler = aheadBot(talk)
	}
	bot := httptest.NewServer(http.HandlerFunc(handler))
	defer bot.Close()
	e, err := NewEngine(b.Context(), EngineConfig{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = e.Close() }()
	for range b.N {
		runRecordedBatch(b, e, s, calls, rate, talk, "ws"+strings.TrimPrefix(bot.URL, "http"))
	}
}

// echoBot sends every media message back as it comes (a bot's media
// message needs only event and media.payload, which Switchboard's has).
func echoBot(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer func() { _ = c.CloseNow() }()
	ctx := context.Background()
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			return
		}
		if strings.HasPrefix(string(data), `{"event":"media"`) {
			_ = c.Write(ctx, websocket.MessageText, data)
		}
	}
}

// aheadBot sends the whole call's speech at once, as a bot whose
// text-to-speech runs faster than real time does (the bench tone, for
// talk), then reads until the call ends: the bot's audio never comes late,
// so its gaps are the bridge's own.
func aheadBot(talk time.Duration) http.HandlerFunc {
	pcm := make([]int16, int(talk.Seconds()*sampleRate))
	for i := range pcm {
		pcm[i] = toneSample(i)
	}
	msg, _ := json.Marshal(map[string]any{"event": "media", "media": map[string]any{
		"payload": base64.StdEncoding.EncodeToString(mulaw(pcm))}})
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer func() { _ = c.CloseNow() }()
		c.SetReadLimit(-1)
		ctx := context.Background()
		if c.Write(ctx, websocket.MessageText, msg) != nil {
			return
		}
		for {
			if _, _, err := c.Read(ctx); err != nil {
				return
			}
		}
	}
}

func benchStream(botURL string, i int) *stream.Config {
	if botURL == "" {
		return nil
	}
	return &stream.Config{URL: botURL, Namespace: "bench", CallID: fmt.Sprintf("bench-%d", i),
		Policy: egress.URLPolicy{AllowInsecure: true}}
}

// reportBotGaps reports the gaps of our channel: the bot's echo as played.
func reportBotGaps(b *testing.B, runs []callRun) {
	var gaps, total, gapCalls int
	for _, r := range runs {
		if !r.res.Answered {
			continue
		}
		f, err := os.Open(r.rec)
		if err != nil {
			b.Error(err)
			continue
		}
		left, _, err := audio.DecodeStereo(f)
		_ = f.Close()
		if err != nil {
			b.Error(err)
			continue
		}
		found, _ := toneGaps(left)
		if len(found) > 0 {
			gapCalls++
		}
		for _, g := range found {
			gaps++
			total += g.length
		}
	}
	var underruns, dropped int64
	var jitter, delay time.Duration
	for _, r := range runs {
		st := r.res.StreamStats
		underruns += st.Underruns
		dropped += st.DroppedToBot
		jitter, delay = max(jitter, st.Jitter), max(delay, st.PlayoutDelay)
	}
	b.ReportMetric(float64(underruns), "bot_underruns")
	b.ReportMetric(float64(jitter.Microseconds())/1000, "bot_jitter_max_ms")
	b.ReportMetric(float64(delay.Microseconds())/1000, "bot_playout_delay_max_ms")
	b.ReportMetric(float64(dropped), "dropped_to_bot")
	b.ReportMetric(float64(gaps), "bot_gaps")
	b.ReportMetric(float64(total)*1000/sampleRate, "bot_gap_ms")
	b.ReportMetric(float64(gapCalls), "bot_gapcalls")
}
