package engine

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/conversation"
	"github.com/switchboard-dev/switchboard/internal/egress"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts/ttstest"
)

// answerScript is a stand-in response engine (a model the tests cannot
// run here): it begins with begin and answers request n with answers[n-1],
// streamed a few words at a time, its first words after firstToken.
type answerScript struct {
	begin      string
	answers    []conversation.Chunk
	firstToken time.Duration
	// repeat answers the requests after the last with the last answer.
	repeat bool

	chunks   chan conversation.Chunk
	mu       sync.Mutex
	requests []conversation.Request
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

func (a *answerScript) open(ctx context.Context, _ conversation.CallDetails) (conversation.Session, error) {
	a.chunks = make(chan conversation.Chunk, 64)
	a.ctx, a.cancel = context.WithCancel(context.WithoutCancel(ctx))
	a.chunks <- conversation.Chunk{ResponseID: 0, Content: a.begin, Complete: true}
	return a, nil
}

func (a *answerScript) Chunks() <-chan conversation.Chunk      { return a.chunks }
func (a *answerScript) Settings() <-chan conversation.Settings { return nil }
func (a *answerScript) Update([]conversation.Message, string)  {}
func (a *answerScript) Err() error                             { return nil }
func (a *answerScript) Close() error                           { a.cancel(); a.wg.Wait(); return nil }
func (a *answerScript) sent() []conversation.Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]conversation.Request(nil), a.requests...)
}

func (a *answerScript) Request(req conversation.Request) {
	a.mu.Lock()
	a.requests = append(a.requests, req)
	a.mu.Unlock()
	n := req.ResponseID
	if n > len(a.answers) && a.repeat {
		n = len(a.answers)
	}
	if n > len(a.answers) || n < 1 {
		return
	}
	answer := a.answers[n-1]
	a.wg.Go(func() {
		if !sleep(a.ctx, a.firstToken) {
			return
		}
		words := strings.SplitAfter(answer.Content, " ")
		for i, w := range words {
			c := conversation.Chunk{ResponseID: req.ResponseID, Content: w}
			if i == len(words)-1 {
				c.Complete, c.EndCall, c.Digits = true, answer.EndCall, answer.Digits
			}
			select {
			case a.chunks <- c:
			case <-a.ctx.Done():
				return
			}
			if !sleep(a.ctx, 20*time.Millisecond) {
				return
			}
		}
	})
}

// conversationCall places a call to baresip speaking answers, held by
// script's conversation, heard by a scripted recognizer.
func conversationCall(t *testing.T, script *answerScript, cfg conversation.Config, total time.Duration, answers ...said) Result {
	t.Helper()
	return conversationCallIn(t, &tts.Flite{}, script, cfg, total, answers...)
}

// conversationCallIn is conversationCall with the answers spoken in agentVoice.
func conversationCallIn(t *testing.T, agentVoice tts.Speaker, script *answerScript, cfg conversation.Config, total time.Duration, answers ...said) Result {
	t.Helper()
	voice, lengths := spoken(t, total, answers...)
	r := &scriptedRecognizer{lengths: lengths, confidence: map[string]float64{}}
	for _, a := range answers {
		r.texts = append(r.texts, a.text)
	}
	e := newEngine(t, EngineConfig{})
	b := startBaresip(t, voice)
	return place(t, e, Trunk{Address: "sip:" + b.addr}, CallSpec{Recognizer: r, RecordPath: filepath.Join(t.TempDir(), "call.wav"),
		MaxDuration: total + 5*time.Second,
		Conversation: &Conversation{Open: script.open, Config: cfg, Voice: agentVoice,
			Call: conversation.CallDetails{CallID: "call_test"}}})
}

func quickConversation() conversation.Config {
	cfg := conversation.Config{TurnTaking: conversation.DefaultTurnTaking(), FallbackLine: "Sorry, goodbye."}
	cfg.TurnTaking.MinEndpointing = 500 * time.Millisecond
	return cfg
}

// A real call: the agent greets, the callee asks, the model's streamed
// answer is spoken, the callee confirms, and the model ends the call. The
// transcript holds every turn in order, the engine was sent the callee's
// words, and each answer's voice-to-voice latency is measured.
func TestConversationOnARealCall(t *testing.T) {
	script := &answerScript{begin: "Hello, this is the restaurant.", firstToken: 200 * time.Millisecond, answers: []conversation.Chunk{
		{Content: "We have a table at seven. Shall I book it?"},
		{Content: "Booked. Goodbye.", EndCall: true},
	}}
	res := conversationCall(t, script, quickConversation(), 14*time.Second,
		said{at: 2500 * time.Millisecond, text: "a table for four please"},
		said{at: 8 * time.Second, text: "yes please"})
	if !res.Answered || res.HangupBy != HangupByAgent {
		t.Fatalf("result %+v:%s\nwant the agent to hang up after end_call", res, describe(res.Events))
	}
	assertEvents(t, res, []wantEvent{
		{speaker: SpeakerAgent, text: "Hello, this is the restaurant."},
		{speaker: SpeakerCallee, text: "a table for four please"},
		{speaker: SpeakerAgent, text: "We have a table at seven. Shall I book it?"},
		{speaker: SpeakerCallee, text: "yes please"},
		{speaker: SpeakerAgent, text: "Booked. Goodbye."},
	})
	reqs := script.sent()
	if len(reqs) != 2 || reqs[0].Transcript[len(reqs[0].Transcript)-1].Content != "a table for four please" {
		t.Fatalf("requests = %+v", reqs)
	}
	if len(res.Latencies) != 2 {
		t.Fatalf("latencies = %+v, want one per answer", res.Latencies)
	}
	for _, l := range res.Latencies {
		if l.FirstAudio.Before(l.FirstContent) || l.FirstContent.Before(l.TurnEnded) || l.TurnEnded.Before(l.VoiceEnded) {
			t.Errorf("latency %+v: want voice end, turn end, first words, first audio in that order", l)
		}
		t.Logf("voice to voice %s (endpointing %s, model %s, voice %s)", l.FirstAudio.Sub(l.VoiceEnded),
			l.TurnEnded.Sub(l.VoiceEnded), l.FirstContent.Sub(l.TurnEnded), l.FirstAudio.Sub(l.FirstContent))
	}
}

// The callee talks over a long answer: the agent stops within the
// interruption time, the rest of the answer is never spoken, and the
// callee's words get the next answer.
func TestConversationBargeInOnARealCall(t *testing.T) {
	long := "Our menu has many dishes. There are starters, soups and salads. There are mains of fish and meat. " +
		"There are desserts. There are wines from three countries. Goodbye."
	script := &answerScript{begin: "", firstToken: 100 * time.Millisecond, answers: []conversation.Chunk{
		{Content: long, EndCall: true},
		{Content: "Sorry. Yes, we do. Goodbye.", EndCall: true},
	}}
	res := conversationCall(t, script, quickConversation(), 14*time.Second,
		said{at: 500 * time.Millisecond, text: "what is on the menu"},
		said{at: 5500 * time.Millisecond, text: "do you have vegetarian dishes"})
	if res.HangupBy != HangupByAgent {
		t.Fatalf("hangup by %q:%s", res.HangupBy, describe(res.Events))
	}
	var interrupted, second bool
	for _, e := range res.Events {
		interrupted = interrupted || e.Text == "(interrupted the agent)"
		second = second || e.Text == "Sorry. Yes, we do. Goodbye."
		if strings.Contains(e.Text, "wines from three countries") {
			t.Errorf("the interrupted answer's end was spoken:%s", describe(res.Events))
		}
	}
	if !interrupted || !second {
		t.Fatalf("transcript:%s\nwant the first answer interrupted and the second spoken", describe(res.Events))
	}
}

// The agent's voice server fails its lines: they are said in the embedded
// voice (streamed, as the Server is a tts.Streamer) and each answer is
// followed in the transcript by the engine's note of it, as a script's
// lines are.
func TestConversationNotesFallbackVoice(t *testing.T) {
	server := ttstest.New(t, ttstest.Behaviour{Mode: ttstest.Status})
	voice := &tts.Server{Config: switchboardv1.VoiceServer{URL: server.URL, Voice: "af_heart"},
		Policy: egress.URLPolicy{AllowInsecure: true}, Fallback: &tts.Flite{}}
	script := &answerScript{begin: "Hello, this is the restaurant.", firstToken: 200 * time.Millisecond, answers: []conversation.Chunk{
		{Content: "Booked. Goodbye.", EndCall: true},
	}}
	res := conversationCallIn(t, voice, script, quickConversation(), 9*time.Second,
		said{at: 3 * time.Second, text: "a table for four please"})
	if !res.Answered || res.HangupBy != HangupByAgent {
		t.Fatalf("result %+v:%s\nwant the agent to hang up after end_call", res, describe(res.Events))
	}
	note := "(said in the embedded voice: the voice server answered 500"
	var got []string
	for _, e := range res.Events {
		switch {
		case e.Note && strings.HasPrefix(e.Text, note):
			got = append(got, "note")
		case !e.Note:
			got = append(got, e.Speaker+": "+e.Text)
		}
	}
	want := []string{SpeakerAgent + ": Hello, this is the restaurant.", "note", SpeakerCallee + ": a table for four please",
		SpeakerAgent + ": Booked. Goodbye.", "note"}
	if !slices.Equal(got, want) {
		t.Errorf("transcript:%s\nwant %q", describe(res.Events), want)
	}
	if n := len(server.Requests()); n < 2 {
		t.Errorf("%d requests to the voice server, want one per piece", n)
	}
}
