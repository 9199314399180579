package conversation

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Reasons a conversation ends, besides a response engine's Error.
const (
	// ReasonAgentHangup: the engine asked to end the call (end_call), or
	// closed its session normally, and its last words were spoken.
	ReasonAgentHangup = "agent_hangup"
	// ReasonInactivity: the callee stayed silent through every reminder.
	ReasonInactivity = "inactivity"
	// ReasonMaxTurns: the agent answered Config.MaxTurns times.
	ReasonMaxTurns = "max_duration"
)

// Config is how a conversation runs.
type Config struct {
	TurnTaking TurnTaking
	// FallbackLine is said before hanging up when the engine fails.
	FallbackLine string
	// MaxTurns bounds the agent's answers (0: no bound).
	MaxTurns int
	// MaxEngineTranscript bounds the messages sent to the engine with each
	// request (the most recent ones; 0: 200), so that a two-hour call's
	// requests stay bounded; the call's own transcript keeps everything.
	MaxEngineTranscript int
}

// Entry is one entry of the call's transcript.
type Entry struct {
	Message
	// At is when it happened: for an utterance, when the callee's voice
	// ended; for the agent's speech, when it started playing.
	At time.Time
	// Start and End place a callee's utterance on the call's timeline.
	Start, End time.Duration
	// Confidence and Recognizer are a recognized utterance's.
	Confidence float64
	Recognizer string
	// Interrupted: the agent's speech was cut off by the callee.
	Interrupted bool
	// Backchannel: the callee said it while the agent spoke, and it did
	// not interrupt.
	Backchannel bool
	// Note: the text is the loop's account of what happened, not words
	// anyone said.
	Note bool
	// Told: a Note the engine is sent too (a failed transfer's, so that a
	// Retell server knows why the callee is back).
	Told bool
}

// Latency is one answer's timeline: from the end of the callee's voice to
// the agent's first audio, with its parts.
type Latency struct {
	ResponseID int
	// VoiceEnded: the callee's last voiced frame; TurnEnded: endpointing
	// decided the turn was over and the request went out.
	VoiceEnded, TurnEnded time.Time
	// FirstContent: the engine's first words; FirstAudio: they started
	// playing. Zero when they never came.
	FirstContent, FirstAudio time.Time
}

// Outcome is how a conversation ended.
type Outcome struct {
	// Reason is the disconnection reason when the agent ended the call
	// (ReasonAgentHangup, ReasonInactivity, ReasonMaxTurns, an Error's);
	// "" when the line closed (the callee hung up) or ctx ended.
	Reason string
	// Detail says more about a failure.
	Detail     string
	Transcript []Entry
	Latencies  []Latency
}

const (
	// fallbackTag tags the fallback line's speech.
	fallbackTag = -1 << 30
	// noResponse is the current response id when none is awaited.
	noResponse = -1
)

// interruptTag is the response id and speech tag of a server's
// agent_interrupt id: negative, apart from responses and noResponse.
func interruptTag(id int) int { return -(1 << 20) - id }

// loop is one conversation's state; its methods run on Run's goroutine.
type loop struct {
	cfg  Config
	s    Session
	line Line
	out  Outcome

	// The agent's current response: its id (noResponse when none), the
	// speech tag, pieces queued and not yet ended, whether all its chunks
	// came, what to do once it was spoken, and its transcript entry.
	current, tag   int
	queued         int
	complete       bool
	noInterruption bool
	endCall        bool
	digits         string
	xfer           transferAsk
	agentEntry     int // index in out.Transcript, -1: none yet
	pieces         sentences
	lastResponseID int
	interruptID    int

	// The callee: speaking now (speech starts not yet ended), the utterances of the turn not yet
	// answered, and the end of their voice.
	talking       int
	pending       []string
	voiceEnded    time.Time
	reminders     int
	answers       int
	uninterrupted bool // update_agent made the agent uninterruptible

	endpoint, interrupt, reminder *time.Timer
}

// Run holds the conversation on line with session s until the agent ends
// the call, the engine fails (after the fallback line), the line closes or
// ctx ends. The session's response 0 is the begin message.
func Run(ctx context.Context, cfg Config, s Session, line Line) Outcome {
	if cfg.MaxEngineTranscript <= 0 {
		cfg.MaxEngineTranscript = 200
	}
	l := &loop{cfg: cfg, s: s, line: line, current: 0, tag: 0, agentEntry: -1,
		endpoint: stoppedTimer(), interrupt: stoppedTimer(), reminder: stoppedTimer()}
	defer l.endpoint.Stop()
	defer l.interrupt.Stop()
	defer l.reminder.Stop()
	l.run(ctx)
	return l.out
}

func stoppedTimer() *time.Timer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}

func (l *loop) run(ctx context.Context) {
	chunks, settings, events := l.s.Chunks(), l.s.Settings(), l.line.Events()
	for {
		select {
		case <-ctx.Done():
			return
		case c, ok := <-chunks:
			if l.received(ctx, c, ok) {
				return
			}
		case st := <-settings:
			l.settings(st)
		case ev, ok := <-events:
			if !ok || l.event(ctx, ev) {
				return // !ok: the callee hung up
			}
		case <-l.endpoint.C:
			if l.turnEnded() {
				return
			}
		case <-l.interrupt.C:
			if l.calleeTalking() {
				l.bargeIn()
			}
		case <-l.reminder.C:
			if l.remind() {
				return
			}
		}
	}
}

// received takes what the session sent (ok false: it ended); true when the
// call ends.
func (l *loop) received(ctx context.Context, c Chunk, ok bool) bool {
	if !ok {
		l.sessionEnded(ctx)
		return true
	}
	return l.chunk(ctx, c)
}

// chunk takes a piece of the engine's answer; true when the call ends.
func (l *loop) chunk(ctx context.Context, c Chunk) bool {
	if c.InterruptID > 0 {
		if c.InterruptID != l.interruptID {
			// A new agent_interrupt: it stops what the agent says and
			// speaks now.
			l.interruptID = c.InterruptID
			l.abandon(false)
			l.startResponse(interruptTag(c.InterruptID))
		} else if l.current != interruptTag(c.InterruptID) {
			return false // cut off by the callee
		}
	} else if c.ResponseID != l.current || l.current == noResponse {
		return false // an answer the loop no longer waits for
	}
	if c.Tool != nil {
		l.out.Transcript = append(l.out.Transcript, Entry{Message: *c.Tool, At: time.Now()})
	}
	l.noInterruption = l.noInterruption || c.NoInterruption
	l.endCall = l.endCall || c.EndCall
	l.digits += c.Digits
	if c.TransferNumber != "" {
		l.xfer = transferAsk{number: c.TransferNumber, summary: c.TransferSummary, toolCallID: c.TransferToolCallID}
	}
	if c.Content != "" {
		l.noteFirstContent()
		for _, p := range l.pieces.add(c.Content) {
			l.say(p)
		}
	}
	if !c.Complete {
		return false
	}
	if rest := l.pieces.flush(); rest != "" {
		l.say(rest)
	}
	l.complete = true
	if l.queued == 0 {
		return l.responseSpoken(ctx)
	}
	return false
}

// startResponse makes id the response the loop speaks.
func (l *loop) startResponse(id int) {
	l.current, l.tag = id, id
	l.queued, l.complete, l.noInterruption, l.endCall, l.digits, l.xfer = 0, false, false, false, "", transferAsk{}
	l.agentEntry = -1
	l.pieces.reset()
}

// say queues a piece of the current response.
func (l *loop) say(piece string) {
	if l.line.Say(piece, l.tag) {
		l.queued++
	}
}

// event takes what happened on the line; true when the call ends.
func (l *loop) event(ctx context.Context, ev LineEvent) bool {
	switch ev.Kind {
	case SpeechStarted:
		l.speechStarted()
	case Utterance:
		if !ev.Cut && l.talking > 0 {
			l.talking-- // a Cut utterance: the callee is still speaking
		}
		l.interrupt.Stop()
		l.utterance(ev)
	case Key:
		l.key(ev)
	case PlayStarted:
		if ev.Tag == l.tag {
			l.played(ev)
		}
	case PlayEnded:
		return l.playEnded(ctx, ev)
	}
	return false
}

// speechStarted: the callee speaks, over the agent perhaps.
func (l *loop) speechStarted() {
	l.talking++
	l.reminder.Stop()
	l.endpoint.Stop()
	if l.speaking() && l.interruptible() {
		l.interrupt.Reset(l.cfg.TurnTaking.MinInterruption)
	}
}

// key takes a key the callee pressed: it interrupts, and is their turn.
func (l *loop) key(ev LineEvent) {
	l.interrupt.Stop()
	l.reminder.Stop()
	if l.speaking() && l.interruptible() {
		l.bargeIn()
	}
	l.pending = append(l.pending, "(pressed "+ev.Text+")")
	l.out.Transcript = append(l.out.Transcript, Entry{Message: Message{Role: RoleUser, Content: "pressed " + ev.Text}, At: ev.At})
	l.voiceEnded = ev.At
	l.endpoint.Reset(l.cfg.TurnTaking.MinEndpointing)
}

// playEnded counts a piece of the agent's speech that ended; true when the
// call ends (the fallback line, or an answer with end_call, was spoken).
func (l *loop) playEnded(ctx context.Context, ev LineEvent) bool {
	if ev.Tag == fallbackTag {
		return true
	}
	if ev.Tag != l.tag || ev.Cut {
		return false
	}
	l.queued--
	if l.queued == 0 && l.complete {
		return l.responseSpoken(ctx)
	}
	return false
}

// utterance takes what the callee said.
func (l *loop) utterance(ev LineEvent) {
	text := strings.TrimSpace(ev.Text)
	if text == "" {
		// Noise: the turn goes on as it was.
		if len(l.pending) > 0 {
			l.endpoint.Reset(l.untilEndpoint(strings.Join(l.pending, " ")))
		} else if !l.speaking() && l.current == noResponse {
			l.armReminder()
		}
		return
	}
	entry := Entry{Message: Message{Role: RoleUser, Content: text}, At: ev.At, Start: ev.Start, End: ev.End,
		Confidence: ev.Confidence, Recognizer: ev.Recognizer}
	if l.speaking() && l.cfg.TurnTaking.backchannel(text) {
		entry.Backchannel = true
		l.out.Transcript = append(l.out.Transcript, entry)
		return
	}
	if l.speaking() && l.interruptible() {
		l.bargeIn()
	}
	l.out.Transcript = append(l.out.Transcript, entry)
	l.pending = append(l.pending, text)
	l.voiceEnded = ev.At
	l.endpoint.Reset(l.untilEndpoint(strings.Join(l.pending, " ")))
}

// untilEndpoint is how long from now the callee's turn, text so far, ends.
func (l *loop) untilEndpoint(text string) time.Duration {
	return max(time.Until(l.voiceEnded.Add(l.cfg.TurnTaking.endpointing(text))), 0)
}

// turnEnded asks the engine for the answer to the callee's turn; true when
// the call ends.
func (l *loop) turnEnded() bool {
	if l.calleeTalking() || len(l.pending) == 0 {
		return false
	}
	if l.speaking() {
		// The agent may not be interrupted: the callee's turn is answered
		// once it finished.
		return false
	}
	if l.cfg.MaxTurns > 0 && l.answers >= l.cfg.MaxTurns {
		l.out.Reason = ReasonMaxTurns
		return true
	}
	l.pending = l.pending[:0]
	l.reminders = 0
	l.request(Respond)
	return false
}

// request asks the engine for a new response.
func (l *loop) request(kind Kind) {
	l.answers++
	l.lastResponseID++
	l.startResponse(l.lastResponseID)
	l.out.Latencies = append(l.out.Latencies, Latency{ResponseID: l.current, VoiceEnded: l.voiceEnded, TurnEnded: time.Now()})
	l.s.Request(Request{Kind: kind, ResponseID: l.current, Transcript: l.engineTranscript()})
}

// remind asks for a reminder after the callee's silence, or ends the call
// after the last; true when the call ends.
func (l *loop) remind() bool {
	if l.calleeTalking() || l.speaking() || len(l.pending) > 0 {
		return false
	}
	if l.reminders >= l.cfg.TurnTaking.ReminderMax {
		l.out.Reason = ReasonInactivity
		return true
	}
	l.reminders++
	l.voiceEnded = time.Time{}
	l.note(fmt.Sprintf("(the callee was silent: reminder %d of %d)", l.reminders, l.cfg.TurnTaking.ReminderMax))
	l.request(Remind)
	return false
}

func (l *loop) armReminder() {
	if l.cfg.TurnTaking.ReminderMax > 0 && l.cfg.TurnTaking.ReminderAfter > 0 {
		l.reminder.Reset(l.cfg.TurnTaking.ReminderAfter)
	}
}

// played records a piece of the agent's speech that started playing.
func (l *loop) played(ev LineEvent) {
	if n := len(l.out.Latencies); n > 0 && l.out.Latencies[n-1].ResponseID == l.current && l.out.Latencies[n-1].FirstAudio.IsZero() {
		l.out.Latencies[n-1].FirstAudio = ev.At
	}
	if l.agentEntry < 0 {
		l.out.Transcript = append(l.out.Transcript, Entry{Message: Message{Role: RoleAgent, Content: ev.Text}, At: ev.At})
		l.agentEntry = len(l.out.Transcript) - 1
		l.s.Update(l.engineTranscript(), "agent_turn")
		return
	}
	e := &l.out.Transcript[l.agentEntry]
	e.Content += " " + ev.Text
}

func (l *loop) noteFirstContent() {
	if n := len(l.out.Latencies); n > 0 && l.out.Latencies[n-1].ResponseID == l.current && l.out.Latencies[n-1].FirstContent.IsZero() {
		l.out.Latencies[n-1].FirstContent = time.Now()
	}
}

// responseSpoken acts on a response spoken to its end; true when the call
// ends.
func (l *loop) responseSpoken(ctx context.Context) bool {
	digits, endCall, xfer := l.digits, l.endCall, l.xfer
	l.current = noResponse
	l.startResponse(noResponse)
	if digits != "" {
		if err := l.line.Press(ctx, digits); err != nil {
			l.note("(could not press " + digits + ": " + err.Error() + ")")
		} else {
			l.out.Transcript = append(l.out.Transcript, Entry{Message: Message{Role: RoleAgent, Content: "pressed " + digits}, At: time.Now(), Note: true})
		}
	}
	if xfer.number != "" {
		// A failed transfer gives the turn back to the engine at once; an
		// end_call in the same response is dropped with it, since the
		// engine hears why the callee is back and answers anew.
		return l.transfer(ctx, xfer)
	}
	if endCall {
		l.out.Reason = ReasonAgentHangup
		return true
	}
	l.s.Update(l.engineTranscript(), "user_turn")
	if len(l.pending) > 0 && !l.calleeTalking() {
		l.endpoint.Reset(l.untilEndpoint(strings.Join(l.pending, " ")))
		return false
	}
	l.armReminder()
	return false
}

// transferAsk is a response's transfer_number (or transfer_call).
type transferAsk struct {
	number, summary, toolCallID string
}

// transfer hands the callee to the person once the response that asked
// was spoken; true when the call ends (the callee reached the person, or
// the call ended meanwhile). When it failed the callee is back: the
// transcript says why (the transfer_call's result, or a note the engine
// is told) and the engine is asked for a response at once, so that the
// callee does not wait in silence.
func (l *loop) transfer(ctx context.Context, x transferAsk) bool {
	res := l.line.Transfer(ctx, TransferRequest{Number: x.number, Summary: x.summary})
	if res.Connected {
		l.transferEntry(x, true, fmt.Sprintf("Transferred to %s (%s).", x.number, res.Result))
		l.out.Reason = res.Reason
		return true
	}
	if ctx.Err() != nil {
		return true
	}
	why := fmt.Sprintf("The transfer to %s failed (%s)", x.number, res.Result)
	if res.Detail != "" {
		why += ": " + res.Detail
	}
	l.transferEntry(x, false, why+". The caller is still on the line with you.")
	l.pending = l.pending[:0]
	l.reminders = 0
	l.voiceEnded = time.Time{}
	l.request(Respond)
	return false
}

// transferEntry is a transfer's account in the transcript: the
// transfer_call's result when a tool asked, else a note the engine is
// told.
func (l *loop) transferEntry(x transferAsk, ok bool, text string) {
	if x.toolCallID != "" {
		l.out.Transcript = append(l.out.Transcript, Entry{Message: Message{Role: RoleToolCallResult,
			ToolCallID: x.toolCallID, Name: "transfer_call", Content: text, Successful: &ok}, At: time.Now()})
		return
	}
	l.out.Transcript = append(l.out.Transcript, Entry{Message: Message{Role: RoleAgent, Content: "(" + text + ")"},
		At: time.Now(), Note: true, Told: true})
}

// bargeIn cuts the agent off: what it was saying stops, the rest of its
// answer is dropped with the actions it carried (Retell discards an
// interrupted end_call).
func (l *loop) bargeIn() {
	l.abandon(true)
}

// abandon stops the current response; interrupted marks its entry as cut
// off by the callee.
func (l *loop) abandon(interrupted bool) {
	l.interrupt.Stop()
	if l.speaking() {
		l.line.Cut()
	}
	if interrupted && l.agentEntry >= 0 {
		l.out.Transcript[l.agentEntry].Interrupted = true
	}
	l.startResponse(noResponse)
	if interrupted {
		// The callee has the turn: the engine may stop the answer (a
		// model's stream), and a Retell server is told as Retell tells it.
		l.s.Update(l.engineTranscript(), "user_turn")
	}
}

func (l *loop) calleeTalking() bool { return l.talking > 0 }

// speaking reports whether the agent has speech playing or queued.
func (l *loop) speaking() bool { return l.queued > 0 }

func (l *loop) interruptible() bool { return !l.noInterruption && !l.uninterrupted }

func (l *loop) settings(st Settings) {
	if st.ReminderAfterMs != nil && *st.ReminderAfterMs > 0 {
		l.cfg.TurnTaking.ReminderAfter = time.Duration(*st.ReminderAfterMs) * time.Millisecond
	}
	if st.ReminderMaxCount != nil && *st.ReminderMaxCount >= 0 {
		l.cfg.TurnTaking.ReminderMax = *st.ReminderMaxCount
	}
	if st.InterruptionSensitivity != nil {
		l.uninterrupted = *st.InterruptionSensitivity == 0
	}
}

// sessionEnded ends the call when the engine's session ended: after the
// fallback line when it failed, after its last words when it closed
// normally.
func (l *loop) sessionEnded(ctx context.Context) {
	err := l.s.Err()
	if err == nil {
		l.out.Reason = ReasonAgentHangup
		l.drain(ctx, l.tag)
		return
	}
	l.out.Reason, l.out.Detail = ReasonLLM, err.Error()
	if e, ok := err.(*Error); ok {
		l.out.Reason, l.out.Detail = e.Reason, e.Detail
	}
	l.note("(the response engine failed: " + l.out.Detail + ")")
	l.abandon(false)
	if l.cfg.FallbackLine == "" || !l.line.Say(l.cfg.FallbackLine, fallbackTag) {
		return
	}
	l.out.Transcript = append(l.out.Transcript, Entry{Message: Message{Role: RoleAgent, Content: l.cfg.FallbackLine}, At: time.Now()})
	l.drain(ctx, fallbackTag)
}

// drain waits until the speech tagged tag ended, the line closed or ctx
// ended.
func (l *loop) drain(ctx context.Context, tag int) {
	if tag != fallbackTag && l.queued == 0 {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-l.line.Events():
			if !ok {
				return
			}
			if ev.Kind != PlayEnded || ev.Tag != tag {
				continue
			}
			if tag == fallbackTag {
				return
			}
			if l.queued--; l.queued == 0 {
				return
			}
		}
	}
}

// note appends the loop's account of what happened, in the agent's name.
func (l *loop) note(text string) {
	l.out.Transcript = append(l.out.Transcript, Entry{Message: Message{Role: RoleAgent, Content: text}, At: time.Now(), Note: true})
}

// engineTranscript is what the engine is sent: the most recent messages,
// said (not the loop's notes or backchannels), consecutive utterances of
// the callee joined.
func (l *loop) engineTranscript() []Message {
	var out []Message
	for _, e := range l.out.Transcript {
		if e.Note && !e.Told || e.Backchannel {
			continue
		}
		if n := len(out); n > 0 && e.Role == RoleUser && out[n-1].Role == RoleUser {
			out[n-1].Content += " " + e.Content
			continue
		}
		out = append(out, e.Message)
	}
	if len(out) > l.cfg.MaxEngineTranscript {
		out = out[len(out)-l.cfg.MaxEngineTranscript:]
	}
	return out
}
