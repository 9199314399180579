package sim

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/analysis"
	"github.com/switchboard-dev/switchboard/internal/conversation"
	"github.com/switchboard-dev/switchboard/internal/conversation/chat"
	"github.com/switchboard-dev/switchboard/internal/conversation/llmtest"
	"github.com/switchboard-dev/switchboard/internal/conversation/retell"
	"github.com/switchboard-dev/switchboard/internal/conversation/retell/retelltest"
	"github.com/switchboard-dev/switchboard/internal/egress"
	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/audio"
)

// quickLine paces the simulated line four times faster than the default.
func quickLine() lineTiming {
	return lineTiming{perWord: 10 * time.Millisecond, least: 40 * time.Millisecond,
		idle: 75 * time.Millisecond, opening: 250 * time.Millisecond}
}

// quickTurns is turn-taking fast enough for tests.
func quickTurns() conversation.Config {
	return conversation.Config{TurnTaking: conversation.TurnTaking{MinEndpointing: 30 * time.Millisecond,
		MaxEndpointing: 100 * time.Millisecond, MinInterruption: 100 * time.Millisecond,
		Backchannels: conversation.DefaultBackchannels, ReminderAfter: 300 * time.Millisecond, ReminderMax: 1},
		FallbackLine: "Sorry, we will call you back. Goodbye.", MaxTurns: 50}
}

// reservation is the demo's request: a restaurant booking with two fields.
func reservation(to string, conv *switchboardv1.Conversation) telephony.Request {
	return telephony.Request{CallID: "call_c0" + to[len(to)-4:], Namespace: "demo", From: "+14155550100", To: to,
		Variables: map[string]any{"reservation_time": "7 pm"},
		Fields: []telephony.Field{
			{Name: "party_size", Type: "number", Description: "How many people"},
			{Name: "reservation_time", Type: "string", Description: "What time"},
		},
		Agent: &switchboardv1.Agent{Spec: switchboardv1.AgentSpec{Conversation: conv}}}
}

// chatCarrier is a carrier whose conversations go to the stand-in model
// at url.
func chatCarrier(url string) *Carrier { return chatCarrierWith(url, quickTurns()) }

// chatCarrierWith is chatCarrier with the loop's configuration loop.
func chatCarrierWith(url string, loop conversation.Config) *Carrier {
	c := New(Timings{Ring: 10 * time.Millisecond})
	c.EnableConversations(func(_ context.Context, req telephony.Request) (conversation.Opener, conversation.Config, conversation.CallDetails, error) {
		spec := req.Agent.Spec.Conversation
		cfg := chat.Config{URL: url, Model: "standin", BeginMessage: spec.BeginMessage, SystemPrompt: spec.SystemPrompt,
			BuiltIn: []string{switchboardv1.ToolEndCall}, FirstTokenTimeout: 2 * time.Second,
			Policy: egress.URLPolicy{AllowInsecure: true}}
		open := func(ctx context.Context, call conversation.CallDetails) (conversation.Session, error) {
			return chat.Open(ctx, cfg, call)
		}
		return open, loop, conversation.CallDetails{CallID: req.CallID, From: req.From, To: req.To}, nil
	})
	c.convs.timing = quickLine()
	return c
}

func chatConversation(begin string) *switchboardv1.Conversation {
	return &switchboardv1.Conversation{LLM: &switchboardv1.ConversationLLM{URL: "http://llm", Model: "standin"},
		BeginMessage: begin}
}

func texts(turns []telephony.Turn) string {
	var b strings.Builder
	for _, t := range turns {
		b.WriteString(t.Speaker + ": " + t.Text + "\n")
	}
	return b.String()
}

// The demo dialogue: the agent's begin message, the callee's planned
// answers, the goodbye; the analysis reads the fields from the transcript,
// and the recording is the call's length with tones where the turns are.
func TestSimConversationChatDemo(t *testing.T) {
	c := chatCarrier(llmtest.Start(t, llmtest.Demo()))
	req := reservation("+14155551234", chatConversation("Hello, this is Chez Ada. Would you like to book a table?"))
	t.Cleanup(func() { c.Release(context.Background(), req) })
	p := untilEnded(t, c, req, time.Now())
	turns, err := c.Transcript(context.Background(), req, p)
	if err != nil {
		t.Fatal(err)
	}
	got := texts(turns)
	for _, want := range []string{
		"agent: Hello, this is Chez Ada. Would you like to book a table?\ncallee: That's right.\n",
		"agent: Lovely. For how many people should I book the table?\ncallee: Um, four people.\n",
		"agent: Thank you. And at what time would you like to come?\ncallee: Um, 7 pm.\n",
		"agent: Perfect, I have noted your reservation. We look forward to seeing you. Goodbye!\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("transcript lacks %q:\n%s", want, got)
		}
	}
	if !strings.HasSuffix(got, "Goodbye!\n") {
		t.Errorf("the callee spoke after the goodbye:\n%s", got)
	}
	if p.DisconnectionReason != "agent_hangup" || p.Disposition != telephony.Answered || p.Detail != "" {
		t.Errorf("progress %+v: want answered, agent_hangup", p)
	}
	var last time.Duration
	for _, tr := range turns {
		if tr.Note {
			continue
		}
		if tr.End <= tr.Start || tr.Start < last || tr.End > p.Duration {
			t.Errorf("turn %q at %v-%v (after %v, call %v): want placed one after the other within the call", tr.Text, tr.Start, tr.End, last, p.Duration)
		}
		last = tr.End
		if tr.Speaker == callee && (tr.Confidence != 1 || tr.Recognizer != simRecognizer) {
			t.Errorf("callee turn %+v: want recognizer simulated, confidence 1", tr)
		}
	}
	data := analysis.Analyze(req, p, turns).ExtractedData
	if data["party_size"] != 4 && data["party_size"] != 4.0 || data["reservation_time"] != "19:00" {
		t.Errorf("extracted %v: want party_size 4, reservation_time 19:00", data)
	}
	checkRecording(t, c, req, p, turns)
}

// checkRecording: mono, exactly the call's length, loud where the turns
// are and silent between.
func checkRecording(t *testing.T, c *Carrier, req telephony.Request, p telephony.Progress, turns []telephony.Turn) {
	t.Helper()
	rc, err := c.Recording(context.Background(), req, p)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	wav, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	if want := audio.HeaderSize + 2*samples(p.Duration); len(wav) != want {
		t.Fatalf("recording of %d bytes, want %d (%v mono)", len(wav), want, p.Duration)
	}
	pcm := wav[audio.HeaderSize:]
	loud := func(at time.Duration) bool {
		i := samples(at)
		for k := max(i-40, 0); k < min(i+40, len(pcm)/2); k++ {
			if v := int16(uint16(pcm[2*k]) | uint16(pcm[2*k+1])<<8); v > 1000 || v < -1000 {
				return true
			}
		}
		return false
	}
	for _, tr := range turns {
		if !tr.Note && tr.End-tr.Start > 20*time.Millisecond && !loud((tr.Start+tr.End)/2) {
			t.Errorf("the recording is silent in the middle of %q (%v-%v)", tr.Text, tr.Start, tr.End)
		}
	}
}

// A Retell server (the Python demo's order) that echoes the callee: the
// callee answers six times, then says goodbye and hangs up.
func TestSimConversationRetellCalleeHangsUp(t *testing.T) {
	srv := retelltest.New(t, retelltest.Options{Order: retelltest.OrderPython, Begin: "How can I help you today?"})
	c := New(Timings{Ring: 10 * time.Millisecond})
	c.EnableConversations(func(_ context.Context, req telephony.Request) (conversation.Opener, conversation.Config, conversation.CallDetails, error) {
		cfg := retell.Config{URL: req.Agent.Spec.Conversation.LLMWebSocket.URL, ConnectTimeout: 2 * time.Second,
			Policy: egress.URLPolicy{AllowInsecure: true}}
		open := func(ctx context.Context, call conversation.CallDetails) (conversation.Session, error) {
			return retell.Open(ctx, cfg, call)
		}
		return open, quickTurns(), conversation.CallDetails{CallID: req.CallID, To: req.To}, nil
	})
	c.convs.timing = quickLine()
	req := reservation("+14155551233", &switchboardv1.Conversation{LLMWebSocket: &switchboardv1.ConversationWebSocket{URL: srv.URL}})
	t.Cleanup(func() { c.Release(context.Background(), req) })
	p := untilEnded(t, c, req, time.Now())
	turns, _ := c.Transcript(context.Background(), req, p)
	got := texts(turns)
	if p.DisconnectionReason != "user_hangup" {
		t.Fatalf("reason %q, want user_hangup:\n%s", p.DisconnectionReason, got)
	}
	if !strings.HasPrefix(got, "agent: How can I help you today?\ncallee: Alright.\nagent: I heard you say: Alright.\n") ||
		!strings.HasSuffix(got, "callee: "+calleeGoodbye+"\n") || strings.Count(got, "callee: ") != maxCalleeLines+1 {
		t.Errorf("transcript:\n%s\nwant the begin message, six acknowledgements echoed, the callee's goodbye", got)
	}
}

// The silent callee (0010): the agent reminds it, then hangs up.
func TestSimConversationSilentCallee(t *testing.T) {
	c := chatCarrier(llmtest.Start(t, llmtest.Demo()))
	req := reservation("+14155550010", chatConversation("Hello, this is Chez Ada."))
	t.Cleanup(func() { c.Release(context.Background(), req) })
	p := untilEnded(t, c, req, time.Now())
	turns, _ := c.Transcript(context.Background(), req, p)
	got := texts(turns)
	if p.DisconnectionReason != conversation.ReasonInactivity || got != "agent: Hello, this is Chez Ada.\nagent: (the callee was silent: reminder 1 of 1)\nagent: Are you still there?\n" {
		t.Errorf("reason %q, transcript:\n%s\nwant inactivity after one reminder", p.DisconnectionReason, got)
	}
}

// The engine fails (HTTP 500): the fallback line, then error_llm with
// the detail.
func TestSimConversationEngineFails(t *testing.T) {
	llm := llmtest.Demo()
	llm.SetFault(llmtest.Status500)
	c := chatCarrier(llmtest.Start(t, llm))
	req := reservation("+14155551234", chatConversation("Hello, this is Chez Ada. Would you like to book a table?"))
	t.Cleanup(func() { c.Release(context.Background(), req) })
	p := untilEnded(t, c, req, time.Now())
	turns, _ := c.Transcript(context.Background(), req, p)
	got := texts(turns)
	if p.DisconnectionReason != conversation.ReasonLLM || !strings.Contains(p.Detail, "500") {
		t.Errorf("progress %+v: want error_llm with the detail", p)
	}
	if !strings.Contains(got, "callee: That's right.\n") || !strings.HasSuffix(got, "agent: "+quickTurns().FallbackLine+"\n") ||
		!strings.Contains(got, "(the response engine failed: ") {
		t.Errorf("transcript:\n%s\nwant the callee's answer, the failure and the fallback line", got)
	}
}

// A ConversationFunc that fails (a missing Secret) ends the call with
// error_llm and its detail.
func TestSimConversationConfigFails(t *testing.T) {
	c := New(Timings{Ring: 0})
	c.EnableConversations(func(context.Context, telephony.Request) (conversation.Opener, conversation.Config, conversation.CallDetails, error) {
		return nil, conversation.Config{}, conversation.CallDetails{}, errors.New(`secret "llm-key" not found`)
	})
	req := reservation("+14155551234", chatConversation(""))
	t.Cleanup(func() { c.Release(context.Background(), req) })
	p := untilEnded(t, c, req, time.Now())
	if p.DisconnectionReason != conversation.ReasonLLM || p.Detail != `secret "llm-key" not found` {
		t.Errorf("progress %+v: want error_llm, the detail", p)
	}
}

// Stop ends a conversation as api_hangup at the stop.
func TestSimConversationStop(t *testing.T) {
	c := chatCarrier(llmtest.Start(t, llmtest.Demo()))
	req := reservation("+14155551234", chatConversation("Hello, this is Chez Ada. Would you like to book a table?"))
	t.Cleanup(func() { c.Release(context.Background(), req) })
	placedAt := time.Now()
	time.Sleep(150 * time.Millisecond)
	p, err := c.Progress(context.Background(), req, placedAt, time.Now())
	if err != nil || p.Phase != telephony.Connected {
		t.Fatalf("progress %+v, %v: want connected", p, err)
	}
	time.Sleep(100 * time.Millisecond)
	stopAt := time.Now()
	req.StopAt = &stopAt
	p, _ = c.Progress(context.Background(), req, placedAt, time.Now())
	if p.Phase != telephony.Ended || p.DisconnectionReason != telephony.APIHangup || !p.EndedAt.Equal(stopAt) {
		t.Errorf("progress %+v: want ended at the stop, api_hangup", p)
	}
	if turns, _ := c.Transcript(context.Background(), req, p); len(turns) == 0 || turns[0].Text != "Hello, this is Chez Ada. Would you like to book a table?" {
		t.Errorf("transcript %+v: want what was said before the stop", turns)
	}
}

// A conversation answered before the process started was cut off by the
// restart.
func TestSimConversationOperatorRestart(t *testing.T) {
	c := chatCarrier("http://127.0.0.1:1/v1")
	req := reservation("+14155551234", chatConversation(""))
	placedAt := time.Now().Add(-time.Minute)
	p, _ := c.Progress(context.Background(), req, placedAt, time.Now())
	if p.Phase != telephony.Ended || p.DisconnectionReason != "operator_restart" {
		t.Errorf("progress %+v: want ended, operator_restart", p)
	}
	if _, err := c.Recording(context.Background(), req, p); !errors.Is(err, telephony.ErrNoRecording) {
		t.Errorf("recording: %v, want none", err)
	}
}

// Release ends the session and leaves no goroutine behind.
func TestSimConversationReleaseLeaksNothing(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) })
	c := chatCarrier(llmtest.Start(t, llmtest.Demo()))
	req := reservation("+14155551234", chatConversation("Hello, this is Chez Ada. Would you like to book a table?"))
	placedAt := time.Now()
	time.Sleep(100 * time.Millisecond)
	if p, _ := c.Progress(context.Background(), req, placedAt, time.Now()); p.Phase != telephony.Connected {
		t.Fatalf("progress %+v: want connected", p)
	}
	time.Sleep(200 * time.Millisecond)
	c.Release(context.Background(), req)
	if _, err := c.Transcript(context.Background(), req, telephony.Progress{Phase: telephony.Ended, Disposition: telephony.Answered}); err != nil {
		t.Fatal(err)
	}
}

// The callee's plan, line by line.
func TestSimConversationCalleePlan(t *testing.T) {
	fields := reservation("+14155551200", nil).Fields
	plan := func(to string) *calleePlan {
		r := reservation(to, nil)
		r.Fields = fields
		return &calleePlan{req: r}
	}
	for _, tc := range []struct {
		to   string
		said []string
		want []string
	}{
		{"+14155551200", []string{"", "How many people are coming?", "Is that for tonight?", "Noted.", "At what time?"},
			[]string{"Hello?", "Four.", "Yes.", "Okay.", "My reservation time is 7 pm."}},
		{"+14155551201", []string{"And do you need a high chair?", "Thanks, goodbye.", "Hello?"}, []string{"Yeah, sure.", "", ""}},
		{"+14155550011", []string{"Hi.", "Hi.", "How many people?"}, []string{nonsenseSaid, "Okay, thanks.", "4."}},
		{"+14155550012", []string{"Hi.", "How many people?"}, []string{nonsenseSaid, nonsenseSaid}},
		{"+14155550010", []string{"Hi.", "How many people?"}, []string{"", ""}},
		{"+14155551233", []string{"a", "b", "c", "d", "e", "f", "g", "h"},
			[]string{"Alright.", "Alright.", "Alright.", "Alright.", "Alright.", "Alright.", calleeGoodbye, ""}},
	} {
		p := plan(tc.to)
		for i, said := range tc.said {
			got, hangup, ok := p.next(said)
			if got != tc.want[i] || ok != (tc.want[i] != "") || hangup != (got == calleeGoodbye) {
				t.Errorf("%s, agent %q: callee %q (ok %v, hangup %v), want %q", tc.to, said, got, ok, hangup, tc.want[i])
			}
		}
	}
}

// A conversation stopped while it rang is never opened: it was not
// answered.
func TestSimConversationStoppedWhileRinging(t *testing.T) {
	c := New(Timings{Ring: 50 * time.Millisecond})
	opened := false
	c.EnableConversations(func(context.Context, telephony.Request) (conversation.Opener, conversation.Config, conversation.CallDetails, error) {
		opened = true
		return nil, conversation.Config{}, conversation.CallDetails{}, errors.New("no")
	})
	req := reservation("+14155551234", chatConversation(""))
	t.Cleanup(func() { c.Release(context.Background(), req) })
	placedAt := time.Now().Add(-time.Second)
	stopAt := placedAt.Add(10 * time.Millisecond)
	req.StopAt = &stopAt
	p, _ := c.Progress(context.Background(), req, placedAt, time.Now())
	if p.Phase != telephony.Ended || p.Disposition != telephony.NoAnswer || p.DisconnectionReason != telephony.APIHangup {
		t.Errorf("progress %+v: want not answered, api_hangup", p)
	}
	c.Release(context.Background(), req)
	if opened {
		t.Error("the conversation was opened on a call stopped while it rang")
	}
}

// A callee that never speaks to an agent that never reminds: the call
// ends at maxDurationSeconds.
func TestSimConversationMaxDuration(t *testing.T) {
	loop := quickTurns()
	loop.TurnTaking.ReminderMax = 0
	c := chatCarrierWith(llmtest.Start(t, llmtest.Demo()), loop)
	req := reservation("+14155550010", chatConversation("Hello, this is Chez Ada."))
	req.Agent.Spec.MaxDurationSeconds = 1
	t.Cleanup(func() { c.Release(context.Background(), req) })
	p := untilEnded(t, c, req, time.Now())
	if p.DisconnectionReason != maxDuration || p.Duration < time.Second || p.Duration > 1500*time.Millisecond {
		t.Errorf("progress %+v: want max_duration after a second", p)
	}
}
