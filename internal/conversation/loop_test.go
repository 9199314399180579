package conversation

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeSession is a response engine the test drives: it records requests
// and the test sends chunks.
type fakeSession struct {
	chunks   chan Chunk
	requests chan Request
	settings chan Settings
	mu       sync.Mutex
	updates  []string
	err      error
}

func newFakeSession() *fakeSession {
	return &fakeSession{chunks: make(chan Chunk, 64), requests: make(chan Request, 16), settings: make(chan Settings, 4)}
}

func (s *fakeSession) Chunks() <-chan Chunk      { return s.chunks }
func (s *fakeSession) Request(r Request)         { s.requests <- r }
func (s *fakeSession) Settings() <-chan Settings { return s.settings }
func (s *fakeSession) Err() error                { return s.err }
func (s *fakeSession) Close() error              { return nil }
func (s *fakeSession) Update(_ []Message, t string) {
	s.mu.Lock()
	s.updates = append(s.updates, t)
	s.mu.Unlock()
}

// say sends a whole response: content in pieces, the last complete.
func (s *fakeSession) say(id int, pieces ...string) {
	for i, p := range pieces {
		s.chunks <- Chunk{ResponseID: id, Content: p, Complete: i == len(pieces)-1}
	}
}

// fakeLine is a call's line the test drives. With autoPlay every piece
// plays to its end at once; without, the test ends them (finish).
type fakeLine struct {
	events   chan LineEvent
	autoPlay bool
	mu       sync.Mutex
	said     []string
	playing  []LineEvent
	cuts     int
	pressed  []string
	// transfers are the results of the next transfers, in order; asked
	// are the transfers asked for.
	transfers []TransferResult
	asked     []TransferRequest
}

func newFakeLine(autoPlay bool) *fakeLine {
	return &fakeLine{events: make(chan LineEvent, 256), autoPlay: autoPlay}
}

func (f *fakeLine) Events() <-chan LineEvent { return f.events }

func (f *fakeLine) Say(text string, tag int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.said = append(f.said, text)
	ev := LineEvent{Kind: PlayStarted, Text: text, Tag: tag, At: time.Now()}
	f.events <- ev
	if f.autoPlay {
		f.events <- LineEvent{Kind: PlayEnded, Text: text, Tag: tag, At: time.Now()}
	} else {
		f.playing = append(f.playing, ev)
	}
	return true
}

func (f *fakeLine) Cut() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cuts++
	for _, p := range f.playing {
		f.events <- LineEvent{Kind: PlayEnded, Text: p.Text, Tag: p.Tag, Cut: true, At: time.Now()}
	}
	f.playing = nil
}

// finish ends every piece playing.
func (f *fakeLine) finish() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.playing {
		f.events <- LineEvent{Kind: PlayEnded, Text: p.Text, Tag: p.Tag, At: time.Now()}
	}
	f.playing = nil
}

func (f *fakeLine) Press(_ context.Context, digits string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pressed = append(f.pressed, digits)
	return nil
}

// Transfer answers with the next scripted result, or fails.
func (f *fakeLine) Transfer(_ context.Context, req TransferRequest) TransferResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, req)
	if len(f.transfers) == 0 {
		return TransferResult{Result: "failed", Detail: "the fake line cannot transfer"}
	}
	r := f.transfers[0]
	f.transfers = f.transfers[1:]
	return r
}

func (f *fakeLine) transfersAsked() []TransferRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]TransferRequest(nil), f.asked...)
}

func (f *fakeLine) saidSoFar() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.said...)
}

// callee says text: speech starts and the utterance ends at once.
func (f *fakeLine) callee(text string) {
	now := time.Now()
	f.events <- LineEvent{Kind: SpeechStarted, At: now}
	f.events <- LineEvent{Kind: Utterance, Text: text, At: now, Recognized: now}
}

func quickTurns() Config {
	return Config{TurnTaking: TurnTaking{MinEndpointing: 10 * time.Millisecond, MaxEndpointing: 300 * time.Millisecond,
		MinInterruption: 20 * time.Millisecond, Backchannels: DefaultBackchannels, ReminderAfter: time.Hour, ReminderMax: 1},
		FallbackLine: "Sorry, goodbye."}
}

func runAsync(t *testing.T, cfg Config, s Session, line Line) <-chan Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	out := make(chan Outcome, 1)
	go func() { out <- Run(ctx, cfg, s, line) }()
	return out
}

func nextRequest(t *testing.T, s *fakeSession) Request {
	t.Helper()
	select {
	case r := <-s.requests:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("no request to the engine")
		return Request{}
	}
}

func wait(t *testing.T, out <-chan Outcome) Outcome {
	t.Helper()
	select {
	case o := <-out:
		return o
	case <-time.After(5 * time.Second):
		t.Fatal("the conversation did not end")
		return Outcome{}
	}
}

func transcriptText(o Outcome) string {
	var b strings.Builder
	for _, e := range o.Transcript {
		b.WriteString(e.Role + ": " + e.Content)
		if e.Interrupted {
			b.WriteString(" [interrupted]")
		}
		if e.Backchannel {
			b.WriteString(" [backchannel]")
		}
		b.WriteString("\n")
	}
	return b.String()
}

func TestConversationSpeaksTheAnswerSentenceBySentenceAndHangsUpOnEndCall(t *testing.T) {
	s, line := newFakeSession(), newFakeLine(true)
	out := runAsync(t, quickTurns(), s, line)
	s.say(0, "Hi Ada, this is the clinic. ", "Can you come on Friday?")
	waitFor(t, func() bool { return len(line.saidSoFar()) == 2 })
	line.callee("yes I can")
	r := nextRequest(t, s)
	if r.Kind != Respond || r.ResponseID != 1 {
		t.Fatalf("request = %+v, want response 1", r)
	}
	if got := r.Transcript; len(got) != 2 || got[0].Role != RoleAgent || got[1] != (Message{Role: RoleUser, Content: "yes I can"}) {
		t.Fatalf("transcript sent = %+v", got)
	}
	s.chunks <- Chunk{ResponseID: 1, Content: "Great. See you "}
	s.chunks <- Chunk{ResponseID: 1, Content: "on Friday. Goodbye.", Complete: true, EndCall: true}
	o := wait(t, out)
	if o.Reason != ReasonAgentHangup {
		t.Fatalf("reason = %q, want agent_hangup", o.Reason)
	}
	want := []string{"Hi Ada, this is the clinic.", "Can you come on Friday?", "Great.", "See you on Friday.", "Goodbye."}
	if got := line.saidSoFar(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("spoken pieces = %q, want %q", got, want)
	}
	wantT := "agent: Hi Ada, this is the clinic. Can you come on Friday?\nuser: yes I can\nagent: Great. See you on Friday. Goodbye.\n"
	if got := transcriptText(o); got != wantT {
		t.Fatalf("transcript:\n%s\nwant:\n%s", got, wantT)
	}
	if len(o.Latencies) != 1 || o.Latencies[0].FirstAudio.IsZero() || o.Latencies[0].FirstContent.IsZero() {
		t.Fatalf("latencies = %+v, want one with its first content and audio", o.Latencies)
	}
}

func TestConversationBargeInCutsTheAnswerAndDropsItsRest(t *testing.T) {
	s, line := newFakeSession(), newFakeLine(false)
	out := runAsync(t, quickTurns(), s, line)
	s.say(0, "")
	line.callee("what are your opening hours")
	nextRequest(t, s)
	s.chunks <- Chunk{ResponseID: 1, Content: "We open at nine. On Saturdays we open "}
	waitFor(t, func() bool { return len(line.saidSoFar()) == 1 })
	// The callee talks over the agent for longer than MinInterruption.
	line.events <- LineEvent{Kind: SpeechStarted, At: time.Now()}
	waitFor(t, func() bool { line.mu.Lock(); defer line.mu.Unlock(); return line.cuts == 1 })
	s.chunks <- Chunk{ResponseID: 1, Content: "at ten. Goodbye.", Complete: true, EndCall: true}
	line.events <- LineEvent{Kind: Utterance, Text: "sorry which days", At: time.Now()}
	r := nextRequest(t, s)
	if r.ResponseID != 2 {
		t.Fatalf("request after the barge-in = %d, want 2", r.ResponseID)
	}
	s.chunks <- Chunk{ResponseID: 2, Content: "Monday to Saturday.", Complete: true, EndCall: true}
	waitFor(t, func() bool { return len(line.saidSoFar()) == 2 })
	line.finish()
	o := wait(t, out)
	s.mu.Lock()
	told := strings.Join(s.updates, ",")
	s.mu.Unlock()
	if !strings.Contains(told, "agent_turn,user_turn") {
		t.Errorf("updates %q: the engine is told the callee took the turn", told)
	}
	if got := line.saidSoFar(); strings.Join(got, "|") != "We open at nine.|Monday to Saturday." {
		t.Fatalf("spoken = %q: the interrupted answer's rest must not be spoken", got)
	}
	want := "user: what are your opening hours\nagent: We open at nine. [interrupted]\nuser: sorry which days\nagent: Monday to Saturday.\n"
	if got := transcriptText(o); got != want {
		t.Fatalf("transcript:\n%s\nwant:\n%s", got, want)
	}
}

func TestConversationBackchannelDoesNotInterrupt(t *testing.T) {
	s, line := newFakeSession(), newFakeLine(false)
	out := runAsync(t, quickTurns(), s, line)
	s.say(0, "Your appointment is on Friday at nine. Does that work?")
	waitFor(t, func() bool { return len(line.saidSoFar()) == 2 })
	line.events <- LineEvent{Kind: Utterance, Text: "uh-huh", At: time.Now()}
	line.finish()
	line.callee("yes")
	r := nextRequest(t, s)
	if r.ResponseID != 1 || r.Transcript[len(r.Transcript)-1].Content != "yes" {
		t.Fatalf("request = %+v", r)
	}
	s.chunks <- Chunk{ResponseID: 1, Content: "Thanks, bye.", Complete: true, EndCall: true}
	waitFor(t, func() bool { return len(line.saidSoFar()) == 3 })
	line.finish()
	o := wait(t, out)
	if line.cuts != 0 {
		t.Fatalf("cuts = %d: a backchannel must not interrupt", line.cuts)
	}
	if !strings.Contains(transcriptText(o), "user: uh-huh [backchannel]") {
		t.Fatalf("transcript:\n%s", transcriptText(o))
	}
}

func TestConversationDiscardsAStaleResponse(t *testing.T) {
	s, line := newFakeSession(), newFakeLine(true)
	out := runAsync(t, quickTurns(), s, line)
	s.say(0, "")
	line.callee("hello")
	nextRequest(t, s)
	s.say(0, "A second begin message.") // stale: response 0 is over
	s.chunks <- Chunk{ResponseID: 1, Content: "Hello there.", Complete: true, EndCall: true}
	wait(t, out)
	if got := line.saidSoFar(); strings.Join(got, "|") != "Hello there." {
		t.Fatalf("spoken = %q", got)
	}
}

func TestConversationWaitsLongerAfterAnUnfinishedPhrase(t *testing.T) {
	s, line := newFakeSession(), newFakeLine(true)
	cfg := quickTurns()
	cfg.TurnTaking.MaxEndpointing = time.Hour
	out := runAsync(t, cfg, s, line)
	s.say(0, "")
	line.callee("I would like to book a table and um")
	line.callee("for four people")
	r := nextRequest(t, s)
	if got := r.Transcript[len(r.Transcript)-1].Content; got != "I would like to book a table and um for four people" {
		t.Fatalf("the turn sent = %q: one turn, both utterances", got)
	}
	s.chunks <- Chunk{ResponseID: 1, Complete: true, EndCall: true}
	wait(t, out)
}

func TestConversationRemindsThenHangsUpOnSilence(t *testing.T) {
	s, line := newFakeSession(), newFakeLine(true)
	cfg := quickTurns()
	cfg.TurnTaking.ReminderAfter, cfg.TurnTaking.ReminderMax = 20*time.Millisecond, 2
	out := runAsync(t, cfg, s, line)
	s.say(0, "Hello?")
	for i := 1; i <= 2; i++ {
		r := nextRequest(t, s)
		if r.Kind != Remind || r.ResponseID != i {
			t.Fatalf("request %d = %+v, want a reminder", i, r)
		}
		s.say(i, "Are you there?")
	}
	o := wait(t, out)
	if o.Reason != ReasonInactivity {
		t.Fatalf("reason = %q, want inactivity", o.Reason)
	}
	if got := strings.Count(transcriptText(o), "(the callee was silent: reminder"); got != 2 {
		t.Fatalf("transcript:\n%s\nwant each reminder noted", transcriptText(o))
	}
}

func TestConversationSaysTheFallbackLineWhenTheEngineFails(t *testing.T) {
	s, line := newFakeSession(), newFakeLine(true)
	out := runAsync(t, quickTurns(), s, line)
	s.say(0, "Hello.")
	line.callee("hi")
	nextRequest(t, s)
	s.err = &Error{Reason: ReasonLLM, Detail: "the model answered 500"}
	close(s.chunks)
	o := wait(t, out)
	if o.Reason != ReasonLLM || !strings.Contains(o.Detail, "500") {
		t.Fatalf("outcome = %q %q", o.Reason, o.Detail)
	}
	if got := line.saidSoFar(); got[len(got)-1] != "Sorry, goodbye." {
		t.Fatalf("spoken = %q, want the fallback line last", got)
	}
	if !strings.Contains(transcriptText(o), "the response engine failed: the model answered 500") {
		t.Fatalf("transcript:\n%s", transcriptText(o))
	}
}

func TestConversationPressesDigitsOnceSpoken(t *testing.T) {
	s, line := newFakeSession(), newFakeLine(true)
	out := runAsync(t, quickTurns(), s, line)
	s.say(0, "")
	line.callee("for appointments press one")
	nextRequest(t, s)
	s.chunks <- Chunk{ResponseID: 1, Content: "", Digits: "1", Complete: true}
	waitFor(t, func() bool { line.mu.Lock(); defer line.mu.Unlock(); return len(line.pressed) == 1 })
	close(line.events)
	o := wait(t, out)
	if line.pressed[0] != "1" || o.Reason != "" {
		t.Fatalf("pressed %q, reason %q", line.pressed, o.Reason)
	}
}

func TestConversationEndsAtMaxTurns(t *testing.T) {
	s, line := newFakeSession(), newFakeLine(true)
	cfg := quickTurns()
	cfg.MaxTurns = 1
	out := runAsync(t, cfg, s, line)
	s.say(0, "")
	line.callee("one")
	nextRequest(t, s)
	s.say(1, "First answer.")
	line.callee("two")
	if o := wait(t, out); o.Reason != ReasonMaxTurns {
		t.Fatalf("reason = %q", o.Reason)
	}
}

func TestConversationEndsWhenTheLineCloses(t *testing.T) {
	s, line := newFakeSession(), newFakeLine(true)
	out := runAsync(t, quickTurns(), s, line)
	close(line.events)
	if o := wait(t, out); o.Reason != "" {
		t.Fatalf("reason = %q, want none: the callee hung up", o.Reason)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// A long call's requests carry the most recent messages only, while the
// call's own transcript keeps every turn.
func TestConversationBoundsWhatTheEngineIsSent(t *testing.T) {
	s, line := newFakeSession(), newFakeLine(true)
	cfg := quickTurns()
	cfg.MaxEngineTranscript = 10
	out := runAsync(t, cfg, s, line)
	s.say(0, "")
	for i := 1; i <= 30; i++ {
		line.callee(fmt.Sprintf("line %d", i))
		r := nextRequest(t, s)
		if len(r.Transcript) > 10 {
			t.Fatalf("request %d carried %d messages, want at most 10", i, len(r.Transcript))
		}
		s.chunks <- Chunk{ResponseID: r.ResponseID, Content: "Okay.", Complete: true, EndCall: i == 30}
	}
	o := wait(t, out)
	if got := strings.Count(transcriptText(o), "user: line "); got != 30 {
		t.Fatalf("the call's transcript kept %d of 30 lines", got)
	}
}
