package speech

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/switchboard-dev/switchboard/internal/egress"
	"github.com/switchboard-dev/switchboard/internal/telephony/audio"
)

// No transcription server (whisper.cpp's server, faster-whisper, vLLM) and
// no Vosk server can run on the test machine: these tests run local servers
// that speak those protocols as the real ones do (OpenAI's
// POST /v1/audio/transcriptions multipart form and JSON answer; the Vosk
// server's WebSocket messages, as in alphacep/vosk-server
// websocket/asr_server.py), and then answer slowly, fail or answer garbage.

const testKey = "sk-test-secret-key"

var dev = egress.URLPolicy{AllowInsecure: true} // http and loopback, as --dev allows

// fixed is a recognizer that always hears the same thing: the fallback,
// standing in for the embedded recognizer (whose own tests are in
// embedded_test.go).
type fixed struct {
	text  string
	calls int
	mu    sync.Mutex
}

func (f *fixed) Name() string { return EmbeddedName }
func (f *fixed) Recognize(context.Context, []int16, []string) (Result, error) {
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
	return Result{Text: f.text, Confidence: 0.5}, nil
}

func utterancePCM() []int16 {
	pcm := make([]int16, SampleRate+SampleRate/3) // 1.33 s: chunks of 0.2 s and a shorter last one
	for i := range pcm {
		pcm[i] = int16(i % 1000)
	}
	return pcm
}

// openAIFake is an OpenAI-compatible transcription endpoint. answer
// writes the response once the request has been checked.
func openAIFake(t *testing.T, answer func(w http.ResponseWriter, r *http.Request)) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/audio/transcriptions" {
			http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+testKey {
			http.Error(w, `{"error":{"message":"bad key"}}`, http.StatusUnauthorized)
			return
		}
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			t.Errorf("not a multipart form: %v", err)
			http.Error(w, `{"error":{"message":"bad form"}}`, http.StatusBadRequest)
			return
		}
		f, _, err := r.FormFile("file")
		if err != nil {
			t.Errorf("no file: %v", err)
			return
		}
		pcm, err := audio.DecodeMono(f)
		if err != nil || !slices.Equal(pcm, utterancePCM()) {
			t.Errorf("the file is not the utterance as an 8 kHz WAV: %v", err)
		}
		if r.FormValue("model") == "" {
			t.Errorf("no model in the form")
		}
		answer(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func newTestServer(t *testing.T, opts ServerOptions, fb Recognizer) Recognizer {
	t.Helper()
	if opts.APIKey == "" {
		opts.APIKey = testKey
	}
	if opts.Timeout == 0 {
		opts.Timeout = 10 * time.Second // generous: only the slow cases reach it
	}
	r, err := NewServer(context.Background(), opts, fb)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	return r
}

func TestOpenAIServerTranscribes(t *testing.T) {
	var prompt, model string
	srv := openAIFake(t, func(w http.ResponseWriter, r *http.Request) {
		prompt, model = r.FormValue("prompt"), r.FormValue("model")
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"text":" Yes, that's right. ","usage":{"type":"duration","seconds":1}}`)
	})
	fb := &fixed{text: "no"}
	r := newTestServer(t, ServerOptions{URL: srv.URL + "/v1", Protocol: ProtocolOpenAI, Model: "large-v3", Policy: dev}, fb)
	res, err := r.Recognize(context.Background(), utterancePCM(), []string{"yes", "that's right", "no"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "Yes, that's right." || res.Recognizer != "" || r.Name() != ServerName {
		t.Errorf("got %+v from %s, want the server's text under its own name", res, r.Name())
	}
	if prompt != "yes, that's right, no" || model != "large-v3" {
		t.Errorf("prompt %q, model %q: want the hints and the agent's model", prompt, model)
	}
	if fb.calls != 0 {
		t.Errorf("the fallback was asked %d times", fb.calls)
	}
}

// A server that gives word offsets (verbose_json with word timestamps,
// as OpenAI's API, faster-whisper servers and whisper.cpp's server
// answer) has them in the result; one that refuses verbose_json (HTTP 400,
// as older vLLM releases do) is heard by the fallback for that utterance
// and asked plain json from then on.
func TestOpenAIServerWords(t *testing.T) {
	t.Run("verbose", func(t *testing.T) {
		var format, granularity string
		srv := openAIFake(t, func(w http.ResponseWriter, r *http.Request) {
			format, granularity = r.FormValue("response_format"), r.FormValue("timestamp_granularities[]")
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"task":"transcribe","language":"english","duration":1.33,"text":" Four people.",`+
				`"words":[{"word":" Four","start":0.24,"end":0.5},{"word":" people.","start":0.5,"end":1.1}]}`)
		})
		r := newTestServer(t, ServerOptions{URL: srv.URL + "/v1", Protocol: ProtocolOpenAI, Policy: dev}, &fixed{text: "no"})
		res, err := r.Recognize(context.Background(), utterancePCM(), nil)
		if err != nil {
			t.Fatal(err)
		}
		want := []Word{{Text: "Four", Start: 240 * time.Millisecond, End: 500 * time.Millisecond}, {Text: "people.", Start: 500 * time.Millisecond, End: 1100 * time.Millisecond}}
		if res.Text != "Four people." || !slices.Equal(res.Words, want) {
			t.Errorf("got %+v, want the text and words %+v", res, want)
		}
		if format != "verbose_json" || granularity != "word" {
			t.Errorf("asked response_format %q, timestamp_granularities[] %q: want verbose_json and word", format, granularity)
		}
	})
	t.Run("refused", func(t *testing.T) {
		var formats []string
		srv := openAIFake(t, func(w http.ResponseWriter, r *http.Request) {
			formats = append(formats, r.FormValue("response_format"))
			if r.FormValue("response_format") != "json" {
				http.Error(w, `{"error":{"message":"Currently only support response_format text or json"}}`, http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"text":"four people"}`)
		})
		fb := &fixed{text: "for people"}
		r := newTestServer(t, ServerOptions{URL: srv.URL + "/v1", Protocol: ProtocolOpenAI, Policy: dev}, fb)
		first, err := r.Recognize(context.Background(), utterancePCM(), nil)
		if err != nil || first.Recognizer != "embedded (server failed: HTTP 400)" {
			t.Errorf("first utterance %+v, %v: want the fallback's", first, err)
		}
		second, err := r.Recognize(context.Background(), utterancePCM(), nil)
		if err != nil || second.Text != "four people" || second.Recognizer != "" || second.Words != nil {
			t.Errorf("second utterance %+v, %v: want the server's text, without words", second, err)
		}
		if !slices.Equal(formats, []string{"verbose_json", "json"}) {
			t.Errorf("formats asked %q, want verbose_json then json", formats)
		}
	})
}

// TestOpenAIServerFallsBack: whatever goes wrong with the server, the
// utterance is heard by the fallback and the transcript says why, without
// the key or the server's words.
func TestOpenAIServerFallsBack(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	cases := []struct {
		name    string
		answer  func(w http.ResponseWriter, r *http.Request)
		timeout time.Duration
		want    string
	}{
		{"slow", func(w http.ResponseWriter, r *http.Request) {
			select { // answers only after the client gave up
			case <-r.Context().Done():
			case <-release:
			}
		}, 200 * time.Millisecond, "timeout"},
		{"failing", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, `{"error":{"message":"model overloaded `+testKey+`"}}`, http.StatusServiceUnavailable)
		}, 0, "HTTP 503"},
		{"not-json", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `<html>gateway</html>`)
		}, 0, "malformed answer"},
		{"no-text", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"transcript":"yes"}`)
		}, 0, "malformed answer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := openAIFake(t, tc.answer)
			fb := &fixed{text: "yes"}
			r := newTestServer(t, ServerOptions{URL: srv.URL + "/v1", Protocol: ProtocolOpenAI, Timeout: tc.timeout, Policy: dev}, fb)
			res, err := r.Recognize(context.Background(), utterancePCM(), nil)
			if err != nil {
				t.Fatal(err)
			}
			want := "embedded (server failed: " + tc.want + ")"
			if res.Text != "yes" || res.Recognizer != want {
				t.Errorf("got %+v, want the fallback's text and recognizer %q", res, want)
			}
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		srv := openAIFake(t, nil)
		srv.Close()
		r := newTestServer(t, ServerOptions{URL: srv.URL + "/v1", Protocol: ProtocolOpenAI, Policy: dev}, &fixed{text: "yes"})
		res, err := r.Recognize(context.Background(), utterancePCM(), nil)
		if err != nil || res.Recognizer != "embedded (server failed: unreachable)" {
			t.Errorf("got %+v, %v; want the fallback, server unreachable", res, err)
		}
	})
	t.Run("no-fallback", func(t *testing.T) {
		srv := openAIFake(t, func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "{}", http.StatusInternalServerError)
		})
		r := newTestServer(t, ServerOptions{URL: srv.URL + "/v1", Protocol: ProtocolOpenAI, Policy: dev}, nil)
		_, err := r.Recognize(context.Background(), utterancePCM(), nil)
		if err == nil || !strings.Contains(err.Error(), "HTTP 500") || strings.Contains(err.Error(), testKey) {
			t.Errorf("err %v, want the server's failure without the key", err)
		}
	})
}

// TestServerCallEnded: when the call itself ends, Recognize returns at
// once with the call's error, and does not ask the fallback.
func TestServerCallEnded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	srv := openAIFake(t, func(w http.ResponseWriter, r *http.Request) {
		cancel() // the callee hangs up while the server works
		<-r.Context().Done()
	})
	fb := &fixed{text: "yes"}
	r := newTestServer(t, ServerOptions{URL: srv.URL + "/v1", Protocol: ProtocolOpenAI, Policy: dev}, fb)
	if _, err := r.Recognize(ctx, utterancePCM(), nil); !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
	if fb.calls != 0 {
		t.Errorf("the fallback was asked after the call ended")
	}
}

// TestServerURLPolicy: the webhooks' guard applies to speech servers:
// https (wss) and public addresses only, outside development mode.
func TestServerURLPolicy(t *testing.T) {
	for _, tc := range []struct{ url, protocol, want string }{
		{"http://asr.example.com/v1", ProtocolOpenAI, "must use https"},
		{"https://127.0.0.1:9000/v1", ProtocolOpenAI, "loopback"},
		{"wss://10.0.0.7:2700", ProtocolVosk, "private"},
		{"ws://asr.example.com", ProtocolVosk, "must use https"},
		{"https://asr.example.com", ProtocolVosk, "must start with wss://"},
		{"wss://asr.example.com", ProtocolOpenAI, "must start with https://"},
		{"https://asr.example.com", "grpc", "unknown server protocol"},
	} {
		_, err := NewServer(context.Background(), ServerOptions{URL: tc.url, Protocol: tc.protocol, APIKey: testKey}, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: err %v, want %q", tc.protocol, tc.url, err, tc.want)
		}
	}
}

// voskFake is a Vosk server: it answers every audio message with a partial
// result and eof with the final result, as asr_server.py does. misbehave,
// when set, answers the n-th audio message instead (true: answered).
func voskFake(t *testing.T, final string, misbehave func(ctx context.Context, c *websocket.Conn, n int) bool) (*httptest.Server, *voskSession) {
	t.Helper()
	session := &voskSession{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+testKey {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			t.Errorf("accept: %v", err)
			return
		}
		defer func() { _ = c.CloseNow() }()
		ctx := r.Context()
		var heard []byte
		for n := 0; ; n++ {
			typ, msg, err := c.Read(ctx)
			if err != nil {
				return
			}
			switch {
			case typ == websocket.MessageText && strings.Contains(string(msg), "config"):
				session.setConfig(msg)
				n--
				continue
			case string(msg) == `{"eof" : 1}`:
				session.setAudio(heard)
				_ = c.Write(ctx, websocket.MessageText, []byte(final))
				_ = c.Close(websocket.StatusNormalClosure, "")
				return
			}
			heard = append(heard, msg...)
			if misbehave != nil && misbehave(ctx, c, n) {
				continue
			}
			_ = c.Write(ctx, websocket.MessageText, fmt.Appendf(nil, `{"partial" : "word%d"}`, n))
		}
	}))
	t.Cleanup(srv.Close)
	return srv, session
}

type voskSession struct {
	mu     sync.Mutex
	config map[string]any
	audio  []byte
}

func (s *voskSession) setConfig(msg []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var c struct{ Config map[string]any }
	_ = json.Unmarshal(msg, &c)
	s.config = c.Config
}

func (s *voskSession) setAudio(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.audio = b
}

func wsURL(srv *httptest.Server) string { return "ws" + strings.TrimPrefix(srv.URL, "http") }

func TestVoskServerStreams(t *testing.T) {
	srv, session := voskFake(t, `{"result" : [{"conf" : 0.8, "end" : 0.51, "start" : 0.21, "word" : "four"}, `+
		`{"conf" : 0.6, "end" : 1.02, "start" : 0.51, "word" : "people"}], "text" : "four people"}`, nil)
	var partials []string
	r := newTestServer(t, ServerOptions{URL: wsURL(srv), Protocol: ProtocolVosk, Policy: dev,
		OnPartial: func(p string) { partials = append(partials, p) }}, &fixed{text: "no"})
	res, err := r.Recognize(context.Background(), utterancePCM(), []string{"Four", "five"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "four people" || res.Confidence < 0.69 || res.Confidence > 0.71 || res.Recognizer != "" {
		t.Errorf("got %+v, want the final text with the words' mean confidence 0.7", res)
	}
	if want := []Word{{Text: "four", Start: 210 * time.Millisecond, End: 510 * time.Millisecond}, {Text: "people", Start: 510 * time.Millisecond, End: 1020 * time.Millisecond}}; !slices.Equal(res.Words, want) {
		t.Errorf("words %+v, want the result's with their offsets %+v", res.Words, want)
	}
	if want := []string{"word0", "word1", "word2", "word3", "word4", "word5", "word6"}; !slices.Equal(partials, want) {
		t.Errorf("partials %q, want one per 0.2 s chunk %q", partials, want)
	}
	if !slices.Equal(session.audio, pcmBytes(utterancePCM())) {
		t.Errorf("the server heard %d bytes, not the utterance's %d", len(session.audio), 2*len(utterancePCM()))
	}
	if session.config["sample_rate"] != float64(8000) || fmt.Sprint(session.config["phrase_list"]) != "[four five [unk]]" {
		t.Errorf("config %v, want 8 kHz and the hints as a phrase list", session.config)
	}
}

func TestVoskServerFallsBack(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	cases := []struct {
		name      string
		final     string
		misbehave func(ctx context.Context, c *websocket.Conn, n int) bool
		timeout   time.Duration
		want      string
	}{
		{"slow", "", func(ctx context.Context, c *websocket.Conn, n int) bool {
			if n == 2 { // stops answering mid-utterance
				select {
				case <-ctx.Done():
				case <-release:
				}
			}
			return false
		}, 200 * time.Millisecond, "timeout"},
		{"garbage", "", func(ctx context.Context, c *websocket.Conn, n int) bool {
			_ = c.Write(ctx, websocket.MessageText, []byte("Internal error"))
			return true
		}, 0, "malformed answer"},
		{"binary", "", func(ctx context.Context, c *websocket.Conn, n int) bool {
			_ = c.Write(ctx, websocket.MessageBinary, []byte(`{"partial":""}`))
			return true
		}, 0, "malformed answer"},
		{"no-final", `{"partial" : ""}`, nil, 0, "malformed answer"},
		{"hangs-up", "", func(ctx context.Context, c *websocket.Conn, n int) bool {
			_ = c.Close(websocket.StatusInternalError, "model crashed")
			return true
		}, 0, "unreachable"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := voskFake(t, tc.final, tc.misbehave)
			r := newTestServer(t, ServerOptions{URL: wsURL(srv), Protocol: ProtocolVosk, Timeout: tc.timeout, Policy: dev}, &fixed{text: "yes"})
			res, err := r.Recognize(context.Background(), utterancePCM(), nil)
			want := "embedded (server failed: " + tc.want + ")"
			if err != nil || res.Text != "yes" || res.Recognizer != want {
				t.Errorf("got %+v, %v; want the fallback's text and recognizer %q", res, err, want)
			}
		})
	}
	t.Run("refused", func(t *testing.T) {
		srv, _ := voskFake(t, "", nil)
		r := newTestServer(t, ServerOptions{URL: wsURL(srv), Protocol: ProtocolVosk, APIKey: "wrong", Policy: dev}, &fixed{text: "yes"})
		res, err := r.Recognize(context.Background(), utterancePCM(), nil)
		if err != nil || res.Recognizer != "embedded (server failed: HTTP 401)" {
			t.Errorf("got %+v, %v; want the fallback, HTTP 401", res, err)
		}
	})
}
