package speech

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/sync/errgroup"
)

// voskChunk is how much audio goes in one WebSocket message: 0.2 s, as
// Vosk's own clients send it, so partial results come at that pace.
const voskChunk = SampleRate / 5

// voskServer streams each utterance to a Vosk server over its WebSocket
// protocol (github.com/alphacep/vosk-server, websocket/asr_server.py): a
// text message {"config": {...}}, binary messages of 16-bit little-endian
// PCM each answered by {"partial": "..."} or, at a pause the server
// detects, a final {"text": "...", "result": [{"word", "conf"}...]}, and
// {"eof": 1} answered by the last final result.
type voskServer struct {
	url       string
	client    *http.Client
	header    http.Header
	onPartial func(string)
}

func newVoskServer(opts ServerOptions, client *http.Client) *voskServer {
	header := http.Header{}
	if opts.APIKey != "" {
		header.Set("Authorization", "Bearer "+opts.APIKey)
	}
	return &voskServer{url: opts.URL, client: client, header: header, onPartial: opts.OnPartial}
}

func (v *voskServer) Name() string { return ServerName }

// voskConfig is the session's configuration message.
type voskConfig struct {
	Config struct {
		SampleRate int  `json:"sample_rate"`
		Words      bool `json:"words"`
		// PhraseList restricts recognition to the hints; "[unk]" lets
		// anything else through as unknown rather than forcing a phrase.
		PhraseList []string `json:"phrase_list,omitempty"`
	} `json:"config"`
}

// voskAnswer is one answer: a partial or a final result.
type voskAnswer struct {
	Partial *string `json:"partial"`
	Text    *string `json:"text"`
	// Result is the words, with their offsets in seconds from the start of
	// the session's audio (the utterance).
	Result []struct {
		Conf  float64 `json:"conf"`
		Word  string  `json:"word"`
		Start float64 `json:"start"`
		End   float64 `json:"end"`
	} `json:"result"`
}

func (v *voskServer) Recognize(ctx context.Context, pcm []int16, hints []string) (Result, error) {
	//nolint:bodyclose // Dial's documentation: "You never need to close resp.Body yourself."
	conn, resp, err := websocket.Dial(ctx, v.url, &websocket.DialOptions{HTTPClient: v.client, HTTPHeader: v.header})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			return Result{}, &serverError{reason: fmt.Sprintf("HTTP %d", resp.StatusCode), err: errors.New(http.StatusText(resp.StatusCode))}
		}
		return Result{}, err
	}
	defer func() { _ = conn.CloseNow() }()
	conn.SetReadLimit(1 << 20) // a final result of a long utterance with every word's timing

	var cfg voskConfig
	cfg.Config.SampleRate = SampleRate
	cfg.Config.Words = true
	if len(hints) > 0 {
		cfg.Config.PhraseList = append(normalizedHints(hints), "[unk]")
	}
	msg, _ := json.Marshal(cfg) //nolint:errchkjson // plain struct
	if err := conn.Write(ctx, websocket.MessageText, msg); err != nil {
		return Result{}, err
	}
	// The audio goes out without waiting for each answer (a round trip per
	// 0.2 s chunk would add up to seconds over a long utterance); the
	// server answers every message in order, one answer per chunk and the
	// final result to eof.
	chunks := (len(pcm) + voskChunk - 1) / voskChunk
	var final finalResult
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		for i := 0; i <= chunks; i++ {
			if err := v.readAnswer(gctx, conn, &final, i == chunks); err != nil {
				return err
			}
		}
		return nil
	})
	g.Go(func() error {
		for start := 0; start < len(pcm); start += voskChunk {
			if err := conn.Write(gctx, websocket.MessageBinary, pcmBytes(pcm[start:min(start+voskChunk, len(pcm))])); err != nil {
				return err
			}
		}
		return conn.Write(gctx, websocket.MessageText, []byte(`{"eof" : 1}`))
	})
	if err := g.Wait(); err != nil {
		return Result{}, err
	}
	_ = conn.Close(websocket.StatusNormalClosure, "")
	return final.result(), nil
}

// readAnswer reads the server's answer to one message into final (a final
// result: the server cuts long audio into several) or to OnPartial.
func (v *voskServer) readAnswer(ctx context.Context, conn *websocket.Conn, final *finalResult, last bool) error {
	typ, data, err := conn.Read(ctx)
	if err != nil {
		return err
	}
	var a voskAnswer
	if typ != websocket.MessageText || json.Unmarshal(data, &a) != nil || (a.Partial == nil && a.Text == nil) {
		return &serverError{reason: "malformed answer", err: fmt.Errorf("not a Vosk result: %.64q", data)}
	}
	if last && a.Text == nil {
		return &serverError{reason: "malformed answer", err: errors.New("no final result after eof")}
	}
	if a.Partial != nil {
		if v.onPartial != nil && *a.Partial != "" {
			v.onPartial(*a.Partial)
		}
		return nil
	}
	final.add(a)
	return nil
}

// finalResult joins the final results of one utterance.
type finalResult struct {
	text    []string
	words   []Word
	confSum float64
	scored  int
}

func (f *finalResult) add(a voskAnswer) {
	if *a.Text == "" {
		return
	}
	f.text = append(f.text, *a.Text)
	for _, w := range a.Result {
		f.confSum += w.Conf
		f.scored++
		f.words = append(f.words, Word{Text: w.Word, Start: seconds(w.Start), End: seconds(w.End)})
	}
}

func (f *finalResult) result() Result {
	if len(f.text) == 0 {
		return Result{}
	}
	conf := 1.0
	if f.scored > 0 {
		conf = f.confSum / float64(f.scored)
	}
	text := f.text[0]
	for _, t := range f.text[1:] {
		text += " " + t
	}
	return Result{Text: text, Confidence: conf, Words: f.words}
}

// seconds is s seconds as a Duration.
func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func normalizedHints(hints []string) []string {
	out := make([]string, 0, len(hints))
	for _, h := range hints {
		if p := normalizePhrase(h); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func pcmBytes(pcm []int16) []byte {
	b := make([]byte, 0, 2*len(pcm))
	for _, s := range pcm {
		b = binary.LittleEndian.AppendUint16(b, uint16(s)) //nolint:gosec // two's complement bits, as WAV
	}
	return b
}
