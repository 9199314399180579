package sim

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-dev/switchboard/internal/conversation"
	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/audio"
	"github.com/switchboard-dev/switchboard/internal/understand"
)

// ConversationFunc opens what a call whose agent has spec.conversation
// needs (the SIP renderer's reading of the agent, so both carriers read it
// alike): the response engine's opener, the loop's configuration and what
// the engine is told of the call. An error (a missing Secret) ends the
// call with error_llm.
type ConversationFunc func(ctx context.Context, req telephony.Request) (conversation.Opener, conversation.Config, conversation.CallDetails, error)

// Conversations: calls held with the organization's language model.
//
// When an answered call's agent has spec.conversation (and a
// ConversationFunc is set), Progress opens its response engine at the
// answer and a goroutine runs the conversation loop (package
// conversation) on a simulated line whose callee follows the plan of the
// package comment. The call ends when the loop does: the agent hangs up
// (agent_hangup), the engine fails (its reason, error_llm..., and
// Progress.Detail says why), the callee stays silent through the
// reminders (inactivity), the agent's maxDurationSeconds or the loop's
// maxTurns pass (max_duration), the simulated callee hangs up
// (user_hangup), the API stops it (api_hangup).
//
// A restart loses the live sessions, so a conversation answered before
// this process started is reported ended when it started, with
// operator_restart, as streamed calls are, with neither transcript nor
// recording.
type conversations struct {
	fn      ConversationFunc
	started time.Time
	timing  lineTiming

	mu    sync.Mutex
	calls map[string]*simConversation
}

// simConversation is one conversation's session.
type simConversation struct {
	liveEnd
	// Set before done is closed.
	turns []telephony.Turn
}

// lineTiming is how the simulated line paces the conversation.
type lineTiming struct {
	// perWord and least: a piece of speech lasts perWord a word, at least
	// least (the agent's and the callee's alike).
	perWord, least time.Duration
	// idle is the silence after the agent's speech before the callee
	// answers; opening the wait for the agent's first words before the
	// callee speaks first.
	idle, opening time.Duration
}

// defaultLineTiming is quick, so that demos are.
func defaultLineTiming() lineTiming {
	return lineTiming{perWord: 40 * time.Millisecond, least: 150 * time.Millisecond,
		idle: 300 * time.Millisecond, opening: time.Second}
}

// speaking is how long text takes to say.
func (t lineTiming) speaking(text string) time.Duration {
	return max(time.Duration(len(strings.Fields(text)))*t.perWord, t.least)
}

// EnableConversations makes the carrier hold the conversations of agents
// with spec.conversation; without it those calls play the simulated
// conversation of agents without a script.
func (c *Carrier) EnableConversations(fn ConversationFunc) {
	c.convs = &conversations{fn: fn, started: time.Now(), timing: defaultLineTiming(),
		calls: map[string]*simConversation{}}
}

// defaultMaxDuration is maxDurationSeconds's default (the CRD's).
const defaultMaxDuration = 3600 * time.Second

// conversed reports whether the call is a conversation: its agent has
// one, the carrier holds them, and a person answers it.
func (c *Carrier) conversed(req telephony.Request) bool {
	return c.convs != nil && req.Agent != nil && req.Agent.Spec.Conversation != nil &&
		disposition(req.To) == telephony.Answered
}

// conversationProgress reports a conversation; ok is false for calls that
// are not one, which the timeline decides.
func (c *Carrier) conversationProgress(req telephony.Request, placedAt, now time.Time) (p telephony.Progress, ok bool) {
	if !c.conversed(req) {
		return p, false
	}
	answeredAt := placedAt.Add(c.t.Ring)
	if now.Before(answeredAt) || req.StopAt != nil && req.StopAt.Before(answeredAt) {
		return p, false // ringing, or stopped while it rang
	}
	if answeredAt.Before(c.convs.started) {
		return connectedEnd(answeredAt, c.convs.started, "operator_restart"), true
	}
	maxDur := defaultMaxDuration
	if s := req.Agent.Spec.MaxDurationSeconds; s > 0 {
		maxDur = time.Duration(s) * time.Second
	}
	maxAt := answeredAt.Add(maxDur)
	return c.convs.open(req, answeredAt, maxAt, c.transferGuard(req)).progress(req, answeredAt, maxAt, now), true
}

// open returns the call's session, starting it the first time.
func (cs *conversations) open(req telephony.Request, answeredAt, maxAt time.Time, guard telephony.TransferGuard) *simConversation {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if s := cs.calls[req.CallID]; s != nil {
		return s
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &simConversation{liveEnd: liveEnd{cancel: cancel, done: make(chan struct{})}}
	cs.calls[req.CallID] = s
	go s.run(ctx, cs.fn, cs.timing, req, answeredAt, maxAt, guard)
	return s
}

// ended returns the session of an ended conversation, or nil when this
// process has none (it never ran here, or it was released).
func (cs *conversations) ended(callID string) *simConversation {
	cs.mu.Lock()
	s := cs.calls[callID]
	cs.mu.Unlock()
	if s == nil {
		return nil
	}
	<-s.done // Progress reported the end: this does not wait
	return s
}

// release drops the call's session, ending it if it still runs.
func (cs *conversations) release(callID string) {
	cs.mu.Lock()
	s := cs.calls[callID]
	delete(cs.calls, callID)
	cs.mu.Unlock()
	if s != nil {
		s.stop()
	}
}

// stop ends the call (the API's stop) and waits for the session's end.
// run holds the conversation until the loop ends it, the callee hangs
// up, maxAt passes or ctx ends (stop, release).
func (s *simConversation) run(ctx context.Context, fn ConversationFunc, timing lineTiming, req telephony.Request,
	answeredAt, maxAt time.Time, guard telephony.TransferGuard) {
	defer close(s.done)
	defer func() { s.endedAt = time.Now() }()
	s.reason = conversation.ReasonLLM
	open, cfg, call, err := fn(ctx, req)
	if err == nil {
		var sess conversation.Session
		if sess, err = open(ctx, call); err == nil {
			defer sess.Close()
			s.converse(ctx, cfg, sess, newLine(timing, req, answeredAt, guard), maxAt)
			return
		}
	}
	if ctx.Err() != nil {
		s.reason = telephony.APIHangup
		return
	}
	var ce *conversation.Error
	if errors.As(err, &ce) {
		s.reason = ce.Reason
	}
	s.detail = err.Error()
	s.turns = append(s.turns, telephony.Turn{Speaker: agent, Text: "(the response engine failed: " + s.detail + ")", Note: true})
}

// lineSpec is what the simulated line of a conversation is made of.
type lineSpec struct {
	timing     lineTiming
	req        telephony.Request
	answeredAt time.Time
	guard      telephony.TransferGuard
}

func newLine(timing lineTiming, req telephony.Request, answeredAt time.Time, guard telephony.TransferGuard) lineSpec {
	return lineSpec{timing: timing, req: req, answeredAt: answeredAt, guard: guard}
}

// converse runs the loop on the simulated line and keeps its outcome.
func (s *simConversation) converse(ctx context.Context, cfg conversation.Config, sess conversation.Session, ls lineSpec, maxAt time.Time) {
	runCtx, cancelRun := context.WithDeadline(ctx, maxAt)
	defer cancelRun()
	lineCtx, cancelLine := context.WithCancel(ctx)
	answeredAt := ls.answeredAt
	line := newSimLine(lineCtx, ls.req, answeredAt, ls.timing, ls.guard)
	out := conversation.Run(runCtx, cfg, sess, line)
	cancelLine()
	<-line.done
	switch {
	case out.Reason != "":
		s.reason = out.Reason
		if out.Reason != conversation.ReasonAgentHangup && out.Reason != conversation.ReasonInactivity &&
			out.Reason != conversation.ReasonMaxTurns {
			s.detail = out.Detail
		}
	case line.hungUp.Load():
		s.reason = "user_hangup"
	case ctx.Err() != nil:
		s.reason = telephony.APIHangup
	default:
		s.reason = maxDuration
	}
	extra := line.extra
	for _, e := range out.Transcript {
		// The line's own turns (a transfer's) go before the loop's entries
		// that came after them.
		for len(extra) > 0 && extra[0].at.Before(e.At) {
			s.turns, extra = append(s.turns, extra[0].turn), extra[1:]
		}
		for _, t := range e.Turns(answeredAt) {
			t.Start, t.End = t.Start.Truncate(time.Millisecond), t.End.Truncate(time.Millisecond)
			s.turns = append(s.turns, t)
		}
	}
	for _, x := range extra {
		s.turns = append(s.turns, x.turn)
	}
	s.transfer = line.transfer
	placeAgent(s.turns, line.spans)
}

// placeAgent ends each of the agent's lines where its speech stopped
// playing: the last span of speech that started with it, before its next
// line.
func placeAgent(turns []telephony.Turn, spans []span) {
	var lines []int
	for i, t := range turns {
		if t.Speaker == agent && !t.Note && t.Tool == nil {
			lines = append(lines, i)
		}
	}
	for k, i := range lines {
		next := time.Duration(1<<63 - 1)
		if k+1 < len(lines) {
			next = turns[lines[k+1]].Start
		}
		for _, sp := range spans {
			if sp.start >= turns[i].Start && sp.start < next {
				turns[i].End = max(turns[i].End, sp.end)
			}
		}
	}
}

// transcript is the ended conversation's.
func (s *simConversation) transcript() []telephony.Turn { return slices.Clone(s.turns) }

// recording renders the ended conversation's turns as tones at their
// offsets, exactly length long.
func (c *Carrier) conversationRecording(req telephony.Request, length time.Duration) (io.ReadCloser, error) {
	s := c.convs.ended(req.CallID)
	if s == nil {
		return nil, telephony.ErrNoRecording
	}
	pcm := make([]int16, c.boundedSamples(samples(length)))
	for _, t := range s.turns {
		if t.Note && !personTurn(t) || t.End <= t.Start {
			continue
		}
		hz := pitch(t)
		tone(pcm[min(samples(t.Start), len(pcm)):min(samples(t.End), len(pcm))], samples(t.Start), hz)
	}
	return io.NopCloser(bytes.NewReader(audio.Mono(pcm))), nil
}

// span is a stretch of the agent's speech, as offsets from the answer.
type span struct{ start, end time.Duration }

const (
	// lineEvents bounds the events waiting for the loop; lineSays the
	// pieces of speech queued (a response's are bounded by the engines'
	// cap on an answer's length).
	lineEvents = 64
	lineSays   = 64
	// maxSpans bounds the agent's speech kept for the recording (pieces
	// played back to back are one span).
	maxSpans = 4096
)

type pieceToSay struct {
	text string
	tag  int
	gen  int64
}

// simLine is the conversation's Line on the simulated carrier: the
// agent's speech plays in a time proportional to its words, and the
// simulated callee answers by its plan. One goroutine (run) does both.
type simLine struct {
	ctx        context.Context
	answeredAt time.Time
	timing     lineTiming
	plan       calleePlan

	events chan conversation.LineEvent
	says   chan pieceToSay
	cut    chan struct{}
	// gen counts the cuts: speech queued before the last cut is dropped.
	gen atomic.Int64
	// hungUp: the callee hung up (events is closed).
	hungUp atomic.Bool
	done   chan struct{}
	// spans is the agent's speech as played; read once done is closed.
	spans []span
	// guard decides transfers; holding: a transfer is under way, the
	// callee waits silent. extra and transfer are the transfers' turns
	// and the last one's outcome (transfer.go), under xmu.
	guard    telephony.TransferGuard
	holding  atomic.Bool
	xmu      sync.Mutex
	extra    []lineTurn
	transfer *telephony.TransferOutcome

	// The rest is run's own. The agent's speech: pieces queued, the one
	// playing and since when, its words since the callee's last line.
	queue    []pieceToSay
	playing  *pieceToSay
	playedAt time.Time
	heard    strings.Builder
	// The callee's line in progress ("": none), whether it hangs up
	// after it, and when it started.
	said    string
	hangup  bool
	started time.Time
	// play ends the piece playing, answer makes the callee speak, utter
	// ends its line.
	play, answer, utter *time.Timer
}

var _ conversation.Line = (*simLine)(nil)

func newSimLine(ctx context.Context, req telephony.Request, answeredAt time.Time, timing lineTiming,
	guard telephony.TransferGuard) *simLine {
	l := &simLine{ctx: ctx, answeredAt: answeredAt, timing: timing, plan: calleePlan{req: req}, guard: guard,
		events: make(chan conversation.LineEvent, lineEvents), says: make(chan pieceToSay, lineSays),
		cut: make(chan struct{}, 1), done: make(chan struct{})}
	go l.run()
	return l
}

func (l *simLine) Events() <-chan conversation.LineEvent { return l.events }

func (l *simLine) Say(text string, tag int) bool {
	if l.hungUp.Load() {
		return false
	}
	select {
	case l.says <- pieceToSay{text: text, tag: tag, gen: l.gen.Load()}:
		return true
	default:
		return false
	}
}

func (l *simLine) Cut() {
	l.gen.Add(1)
	select {
	case l.cut <- struct{}{}:
	default:
	}
}

// Press keys digits to the simulated callee, who takes them.
func (l *simLine) Press(ctx context.Context, _ string) error { return ctx.Err() }

// emit hands ev to the loop; false when the line is closing.
func (l *simLine) emit(ev conversation.LineEvent) bool {
	select {
	case l.events <- ev:
		return true
	case <-l.ctx.Done():
		return false
	}
}

// run plays the agent's speech and the callee's until the callee hangs
// up or the line's ctx ends.
func (l *simLine) run() {
	defer close(l.done)
	l.play, l.answer, l.utter = stoppedTimer(), stoppedTimer(), stoppedTimer()
	defer l.play.Stop()
	defer l.answer.Stop()
	defer l.utter.Stop()
	l.answer.Reset(l.timing.opening)
	for l.step() {
	}
}

// step takes what happens next; false once the line is done.
func (l *simLine) step() bool {
	select {
	case <-l.ctx.Done():
		return false
	case p := <-l.says:
		if p.gen != l.gen.Load() {
			return true // cut before it was spoken
		}
		l.queue = append(l.queue, p)
		return l.playing != nil || l.next()
	case <-l.cut:
		l.queue = l.queue[:0]
		if l.playing == nil {
			return true
		}
		l.play.Stop()
		return l.ended(time.Now(), true) && l.next()
	case now := <-l.play.C:
		return l.ended(now, false) && l.next()
	case <-l.answer.C:
		return l.speak()
	case now := <-l.utter.C:
		return l.uttered(now)
	}
}

// ended reports the end of the piece playing.
func (l *simLine) ended(now time.Time, cut bool) bool {
	ok := l.emit(conversation.LineEvent{Kind: conversation.PlayEnded, Text: l.playing.text, Tag: l.playing.tag, Cut: cut, At: now})
	l.addSpan(l.playedAt, now)
	l.playing = nil
	return ok
}

// next plays the next piece queued, or lets the callee answer once the
// agent has said something and is silent.
func (l *simLine) next() bool {
	for len(l.queue) > 0 && l.queue[0].gen != l.gen.Load() {
		l.queue = l.queue[1:]
	}
	if len(l.queue) == 0 {
		if l.heard.Len() > 0 && l.said == "" {
			l.answer.Reset(l.timing.idle)
		}
		return true
	}
	p := l.queue[0]
	l.queue = l.queue[1:]
	l.playing, l.playedAt = &p, time.Now()
	l.answer.Stop()
	if l.heard.Len() > 0 {
		l.heard.WriteByte(' ')
	}
	l.heard.WriteString(p.text)
	l.play.Reset(l.timing.speaking(p.text))
	return l.emit(conversation.LineEvent{Kind: conversation.PlayStarted, Text: p.text, Tag: p.tag, At: l.playedAt})
}

// speak starts the callee's answer to what the agent said, if it has one.
func (l *simLine) speak() bool {
	if l.playing != nil || l.said != "" || l.holding.Load() {
		return true
	}
	text, hangup, ok := l.plan.next(l.heard.String())
	l.heard.Reset()
	if !ok {
		return true
	}
	l.said, l.hangup, l.started = text, hangup, time.Now()
	l.utter.Reset(l.timing.speaking(text))
	return l.emit(conversation.LineEvent{Kind: conversation.SpeechStarted, At: l.started})
}

// uttered ends the callee's line: the loop hears it, and the callee
// hangs up when it was its goodbye.
func (l *simLine) uttered(now time.Time) bool {
	if !l.emit(conversation.LineEvent{Kind: conversation.Utterance, Text: l.said, At: now, Recognized: now,
		Confidence: 1, Recognizer: simRecognizer,
		Start: offset(l.answeredAt, l.started), End: offset(l.answeredAt, now)}) {
		return false
	}
	l.said = ""
	if l.hangup {
		l.hungUp.Store(true)
		close(l.events)
		return false
	}
	if l.playing == nil && l.heard.Len() > 0 {
		l.answer.Reset(l.timing.idle) // the agent spoke over the callee
	}
	return true
}

// addSpan keeps a stretch of the agent's speech, joined to the previous
// one when it follows it at once.
func (l *simLine) addSpan(from, to time.Time) {
	sp := span{offset(l.answeredAt, from), offset(l.answeredAt, to)}
	if n := len(l.spans); n > 0 && sp.start-l.spans[n-1].end < time.Millisecond {
		l.spans[n-1].end = sp.end
		return
	}
	if len(l.spans) < maxSpans {
		l.spans = append(l.spans, sp)
	}
}

// offset is at's place on the call's timeline, to the millisecond.
func offset(answeredAt, at time.Time) time.Duration {
	return max(at.Sub(answeredAt), 0).Truncate(time.Millisecond)
}

func stoppedTimer() *time.Timer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}

// The conversation's simulated callee (see the package comment).
const (
	// maxCalleeLines is how many lines the callee says before it ends the
	// call itself with calleeGoodbye.
	maxCalleeLines = 6
	calleeGoodbye  = "Thanks, that's all. Goodbye."
	// calleeHello is its line when the agent waits for it to speak first.
	calleeHello = "Hello?"
)

// acknowledgements are the callee's answers to a line that asks nothing
// it can give, by Wording.
var acknowledgements = [...]string{"Okay.", "Alright.", "I see.", "Okay, thanks."}

// calleePlan is what the simulated callee says in a conversation.
type calleePlan struct {
	req   telephony.Request
	lines int
	// done: it heard the agent's goodbye, or said its own.
	done bool
}

// next is the callee's answer to the agent's words since its last line
// ("": the agent has said nothing yet); ok is false when it says
// nothing, hangup true when it hangs up after it.
func (p *calleePlan) next(agentSaid string) (text string, hangup, ok bool) {
	to := suffix(p.req.To)
	if p.done || to == silentCallee {
		return "", false, false
	}
	if saysGoodbye(agentSaid) {
		p.done = true
		return "", false, false
	}
	if p.lines == maxCalleeLines {
		p.done = true
		return calleeGoodbye, true, true
	}
	p.lines++
	switch {
	case to == nonsenseCallee, to == confusedCallee && p.lines == 1:
		return nonsenseSaid, false, true
	}
	return reply(p.req, agentSaid), false, true
}

// reply is the callee's answer to what the agent said: the field it asks
// for, yes to a yes/no question, else an acknowledgement.
func reply(req telephony.Request, agentSaid string) string {
	if strings.TrimSpace(agentSaid) == "" {
		return calleeHello
	}
	if f, ok := askedField(req.Fields, agentSaid); ok {
		return answer(req, f)
	}
	if yesNoQuestion(agentSaid) {
		return booleanAnswers[Wording(req.To)]
	}
	return acknowledgements[Wording(req.To)]
}

// saysGoodbye reports whether the agent's words take leave.
func saysGoodbye(said string) bool {
	for _, w := range understand.Words(said) {
		if w == "goodbye" || w == "bye" {
			return true
		}
	}
	return false
}

// askedField is the field the agent's words ask for: the one whose
// keywords they say most (the first on a tie), none when they say none.
func askedField(fields []telephony.Field, said string) (telephony.Field, bool) {
	spoken := map[string]bool{}
	for _, w := range understand.Words(said) {
		spoken[w] = true
	}
	best, most := -1, 0
	for i, f := range fields {
		n := 0
		for _, k := range keywords(f) {
			if spoken[k] {
				n++
			}
		}
		if n > most {
			best, most = i, n
		}
	}
	if best < 0 {
		return telephony.Field{}, false
	}
	return fields[best], true
}

// keywords are the words of a field's name and description that say what
// it is: three letters or more, and not a common word.
func keywords(f telephony.Field) []string {
	var out []string
	for _, w := range understand.Words(words(f.Name) + " " + f.Description) {
		if len(w) >= 3 && !commonWords[w] && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// commonWords say nothing of what a field is.
var commonWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`the and for you are how did was can our has had not any all its his her
		who why what when where which whom whose with would could should your yours their there they them this
		that these those have does from will like much many please tell about into than then some whether
		call callee caller customer person answer give value said says want wants ask asked`) {
		commonWords[w] = true
	}
}

// yesNoStarters begin a question answered yes or no.
var yesNoStarters = map[string]bool{"is": true, "are": true, "am": true, "was": true, "were": true, "do": true,
	"does": true, "did": true, "can": true, "could": true, "would": true, "will": true, "shall": true,
	"should": true, "may": true, "might": true, "have": true, "has": true, "had": true, "isnt": true,
	"arent": true, "dont": true, "doesnt": true, "didnt": true, "cant": true, "wont": true}

// leadIns may come before a question's first word.
var leadIns = map[string]bool{"and": true, "so": true, "but": true, "also": true, "then": true, "now": true,
	"okay": true, "ok": true, "well": true, "great": true, "alright": true}

// yesNoQuestion reports whether the agent's last question is a yes/no
// one: the last sentence ending in "?" starts, lead-ins such as "and" or
// "so" aside, with a verb such as is, do, can or would.
func yesNoQuestion(said string) bool {
	end := strings.LastIndex(said, "?")
	if end < 0 {
		return false
	}
	start := strings.LastIndexAny(said[:end], ".!?") + 1
	for _, w := range understand.Words(said[start:end]) {
		if leadIns[w] {
			continue
		}
		return yesNoStarters[w]
	}
	return false
}
