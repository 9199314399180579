package engine

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emiago/diago"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/conversation"
	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts"
)

// Conversation is a call held with the organization's language model
// (CallSpec.Conversation): the conversation loop runs on the call's media,
// hearing the callee through the call's recognizer and speaking the
// model's answers in Voice as they stream.
type Conversation struct {
	// Open opens the call's response engine once it is answered.
	Open conversation.Opener
	// Call is what the engine is told of the call.
	Call conversation.CallDetails
	// Config is the loop's: turn-taking, the fallback line, bounds.
	Config conversation.Config
	// Voice speaks the answers.
	Voice tts.Speaker
	// Transfer is how transfer_call and transfer_number transfer (To is
	// the request's; a WhisperText with {{summary}} is filled with the
	// model's summary and spoken in Voice); nil refuses them.
	Transfer *Transfer
}

const (
	// conversationHangover is the silence that ends an utterance on a
	// conversation's call (the VAD's default is 400 ms): short enough for
	// the recognizer to have the words before the endpointing delay
	// (400 – 500 ms) ends the turn.
	conversationHangover = 200 * time.Millisecond
	// lineEvents bounds the events the line holds for the loop.
	lineEvents = 64
	// lineSays bounds the pieces of speech queued: a response's pieces
	// are bounded by the engines' cap on an answer's length.
	lineSays = 64
	// lineUtterances bounds the utterances waiting for the recognizer.
	lineUtterances = 4
)

// converseWithModel runs the conversation until the agent or the engine
// ends it, or callCtx ends; it returns who hangs up ("" when callCtx ended
// first), a conversation reason (error_llm..., inactivity) being its own.
func (e *Engine) converseWithModel(callCtx context.Context, c Conversation, m *callMedia, res *Result,
	transfer transferFunc) string {
	s, err := c.Open(callCtx, c.Call)
	if err != nil {
		if callCtx.Err() != nil {
			return ""
		}
		reason := conversation.ReasonLLM
		var ce *conversation.Error
		if errors.As(err, &ce) {
			reason = ce.Reason
		}
		res.Failure = err.Error()
		res.note(SpeakerAgent, "(the response engine failed: "+err.Error()+")")
		return reason
	}
	defer s.Close()
	lineCtx, cancel := context.WithCancel(callCtx)
	line := newSIPLine(lineCtx, m, c.Voice, transfer)
	line.options = c.Transfer
	before := len(res.Events)
	out := conversation.Run(callCtx, c.Config, s, line)
	cancel()
	line.wait()
	// A transfer's notes went in as it ran: they take their place among
	// the conversation's turns, which come in only now.
	transfers := slices.Clone(res.Events[before:])
	res.Events = res.Events[:before]
	res.addConversation(out, m.answeredAt)
	res.placeNotes(line.notes)
	res.placeNotes(transfers)
	transferred := out.Reason == switchboardv1.ReasonCallTransfer || out.Reason == switchboardv1.ReasonTransferBridged
	if out.Reason != "" && out.Reason != conversation.ReasonAgentHangup && out.Reason != conversation.ReasonInactivity &&
		out.Reason != conversation.ReasonMaxTurns && !transferred {
		res.Failure = out.Reason + ": " + out.Detail
	}
	if transferred {
		// The callee is with the person (or the far end took them): our
		// part of the call is over.
		return HangupByTransfer
	}
	switch out.Reason {
	case "":
		return ""
	case conversation.ReasonAgentHangup:
		if !sleep(callCtx, hangupTail) {
			return ""
		}
		return HangupByAgent
	case conversation.ReasonMaxTurns:
		return HangupByMaxDuration
	default:
		return out.Reason
	}
}

// addConversation puts the conversation's transcript and latencies in res.
func (r *Result) addConversation(out conversation.Outcome, answeredAt time.Time) {
	r.Latencies = append(r.Latencies, out.Latencies...)
	for _, e := range out.Transcript {
		r.Events = append(r.Events, conversationEvent(e, answeredAt)...)
	}
}

// conversationEvent is the transcript's account of one entry (the
// mapping every carrier shares, conversation.Entry.Turns), each turn at
// the entry's moment, a following note a millisecond after.
func conversationEvent(e conversation.Entry, answeredAt time.Time) []Event {
	turns := e.Turns(answeredAt)
	out := make([]Event, len(turns))
	for i, t := range turns {
		out[i] = Event{At: e.At.Add(time.Duration(i) * time.Millisecond), Turn: t}
	}
	return out
}

// placeNotes puts the engine's notes among res's events by their moment,
// each after the events up to it (the events before stay in order).
func (r *Result) placeNotes(notes []Event) {
	for _, n := range notes {
		i := len(r.Events)
		for i > 0 && r.Events[i-1].At.After(n.At) {
			i--
		}
		r.Events = slices.Insert(r.Events, i, n)
	}
}

// fallbackNote is the transcript's note of a line said in the embedded
// voice, as the renderer writes a script line's (Step.Note).
func fallbackNote(fb *tts.FallbackError) string {
	return "(said in the embedded voice: " + fb.Error() + ")"
}

// sipLine is the conversation's Line on a SIP call's media.
type sipLine struct {
	ctx   context.Context
	m     *callMedia
	voice tts.Speaker
	// transfer hands the callee to a person with options, the
	// conversation's transfer settings (either nil: the line cannot).
	transfer transferFunc
	options  *Transfer
	events   chan conversation.LineEvent
	says     chan pieceToSay
	ready    chan voiced
	// gen counts the cuts: speech queued before the last cut is dropped.
	gen     atomic.Int64
	playing atomic.Pointer[playback]
	// producing is the stream the voice is filling (nil: none), which a
	// cut stops even before it plays.
	producing atomic.Pointer[pcmStream]
	utters    chan speechEvent
	wg        sync.WaitGroup
	// notes are the engine's notes of the pieces played in the embedded
	// voice because the voice server failed them (play's, read once the
	// line ended): the loop knows nothing of voices.
	notes       []Event
	lastNoteTag int
}

type pieceToSay struct {
	text string
	tag  int
	gen  int64
}

type voiced struct {
	pieceToSay
	pcm []int16
	// stream, when the voice streams (tts.Streamer), is the piece's audio
	// as it is synthesized, instead of pcm.
	stream *pcmStream
	// fallback is set when the voice server failed the piece and the
	// embedded voice said it (for a stream, before the stream ends).
	fallback *atomic.Pointer[tts.FallbackError]
}

func newSIPLine(ctx context.Context, m *callMedia, v tts.Speaker, transfer transferFunc) *sipLine {
	l := &sipLine{ctx: ctx, m: m, voice: v, transfer: transfer, events: make(chan conversation.LineEvent, lineEvents),
		says: make(chan pieceToSay, lineSays), ready: make(chan voiced, 1), utters: make(chan speechEvent, lineUtterances)}
	m.dropSpeech()
	m.dropKeys()
	m.listening.Store(true)
	l.wg.Go(l.hear)
	l.wg.Go(l.recognize)
	l.wg.Go(l.synthesize)
	l.wg.Go(l.play)
	return l
}

// wait returns once the line's goroutines ended (after its ctx did).
func (l *sipLine) wait() {
	l.wg.Wait()
	l.m.listening.Store(false)
}

func (l *sipLine) Events() <-chan conversation.LineEvent { return l.events }

func (l *sipLine) Say(text string, tag int) bool {
	select {
	case l.says <- pieceToSay{text: text, tag: tag, gen: l.gen.Load()}:
		return true
	default:
		return false
	}
}

func (l *sipLine) Cut() {
	l.gen.Add(1)
	if p := l.playing.Load(); p != nil {
		p.cut.Store(true)
	}
	if s := l.producing.Load(); s != nil {
		s.halt()
	}
}

// Press keys digits, one after the other: RFC 4733 telephone events, or
// SIP INFO where the trunk says so (press), after the menu's pause.
func (l *sipLine) Press(ctx context.Context, digits string) error {
	return press(ctx, l.m.keypad, digits, conversationPressDelay)
}

// emit hands ev to the loop; false when the line is closing.
func (l *sipLine) emit(ev conversation.LineEvent) bool {
	select {
	case l.events <- ev:
		return true
	case <-l.ctx.Done():
		return false
	}
}

// hear passes the callee's speech starts and keys on at once, and their
// utterances to the recognizer.
func (l *sipLine) hear() {
	defer close(l.utters)
	for {
		select {
		case <-l.ctx.Done():
			return
		case k := <-l.m.keys:
			if !l.emit(conversation.LineEvent{Kind: conversation.Key, Text: string(k.key), At: k.at}) {
				return
			}
		case se := <-l.m.speech:
			if se.started {
				if !l.emit(conversation.LineEvent{Kind: conversation.SpeechStarted, At: time.Now()}) {
					return
				}
				continue
			}
			select {
			case l.utters <- se:
			default:
				// The recognizer is behind: the utterance is lost, but the
				// turn still ends.
				l.emit(conversation.LineEvent{Kind: conversation.Utterance, At: se.end, Cut: se.cut})
			}
		}
	}
}

// recognize turns utterances into text, in order.
func (l *sipLine) recognize() {
	for se := range l.utters {
		ev := conversation.LineEvent{Kind: conversation.Utterance, At: se.end, Cut: se.cut,
			Start: se.start.Sub(l.m.answeredAt), End: se.end.Sub(l.m.answeredAt)}
		if l.m.recognizer != nil {
			ctx, cancel := context.WithTimeout(l.ctx, l.m.recognizeTimeout)
			r, err := l.m.recognizer.Recognize(ctx, se.pcm, nil)
			cancel()
			if err == nil {
				ev.Text, ev.Confidence = strings.TrimSpace(r.Text), r.Confidence
				ev.Recognizer = cmp.Or(r.Recognizer, l.m.recognizer.Name())
			}
		}
		ev.Recognized = time.Now()
		if !l.emit(ev) {
			return
		}
	}
}

// synthesize voices the pieces queued, one ahead of the one playing.
func (l *sipLine) synthesize() {
	defer close(l.ready)
	for {
		var s pieceToSay
		select {
		case <-l.ctx.Done():
			return
		case s = <-l.says:
		}
		if s.gen != l.gen.Load() {
			continue // cut before it was spoken
		}
		if st, ok := l.voice.(tts.Streamer); ok {
			if !l.stream(st, s) {
				return
			}
			continue
		}
		pcm, fb, err := tts.SpeakNoting(l.ctx, l.voice, s.text)
		if err != nil {
			pcm = nil // the piece is skipped, its end still reported
		}
		v := voiced{pieceToSay: s, pcm: pcm, fallback: new(atomic.Pointer[tts.FallbackError])}
		if err == nil && fb != nil {
			v.fallback.Store(fb)
		}
		select {
		case l.ready <- v:
		case <-l.ctx.Done():
			return
		}
	}
}

// stream hands a piece to the player as a stream, then fills it as the
// voice synthesizes it: the writer plays the first frames while the rest
// is synthesized, and the voice is held back (its write blocks) while the
// stream's buffer is full. A cut stops the voice's stream. A voice that
// fails is heard up to where it failed; one that fails before any audio
// is a piece skipped, as when Speak fails. false when the line closes.
func (l *sipLine) stream(st tts.Streamer, s pieceToSay) bool {
	ctx, cancel := context.WithCancel(l.ctx)
	defer cancel()
	ps := newPCMStream(streamBuffer)
	ps.onStop = cancel
	l.producing.Store(ps)
	defer l.producing.Store(nil)
	if s.gen != l.gen.Load() {
		return true // cut meanwhile
	}
	v := voiced{pieceToSay: s, stream: ps, fallback: new(atomic.Pointer[tts.FallbackError])}
	select {
	case l.ready <- v:
	case <-l.ctx.Done():
		return false
	}
	fb, err := tts.StreamNoting(ctx, st, s.text, func(pcm []int16) error { return ps.write(ctx, pcm) })
	if fb != nil && err == nil {
		v.fallback.Store(fb)
	}
	ps.end()
	return l.ctx.Err() == nil
}

// play plays the voiced pieces in order and reports their start and end.
// A streamed piece starts once its first frame of audio arrived, and is
// reported started once the writer took that frame.
func (l *sipLine) play() {
	for v := range l.ready {
		if v.gen != l.gen.Load() {
			if v.stream != nil {
				v.stream.halt()
			}
			continue
		}
		var p *playback
		var ok bool
		if v.stream != nil {
			p, ok = l.startStream(v)
		} else {
			p, ok = l.m.start(l.ctx, v.pcm)
		}
		if !ok {
			return
		}
		if p != nil {
			l.playing.Store(p)
			if v.gen != l.gen.Load() {
				p.cut.Store(true) // cut while it was being handed over
			}
		}
		if !l.emit(conversation.LineEvent{Kind: conversation.PlayStarted, Text: v.text, Tag: v.tag, At: time.Now()}) {
			return
		}
		cut := false
		if p != nil {
			select {
			case <-p.done:
			case <-l.ctx.Done():
				return
			}
			cut = p.cut.Load()
			l.playing.Store(nil)
		}
		ended := time.Now()
		if fb := v.fallback.Load(); fb != nil && p != nil {
			l.note(v.tag, ended, fallbackNote(fb))
		}
		if !l.emit(conversation.LineEvent{Kind: conversation.PlayEnded, Text: v.text, Tag: v.tag, Cut: cut, At: ended}) {
			return
		}
	}
}

// startStream waits for a streamed piece's first frame of audio, hands
// the stream to the writer and waits for the writer to play that frame.
// It returns nil when the stream ended with no audio (or was cut) and
// false when the line closes.
func (l *sipLine) startStream(v voiced) (*playback, bool) {
	s := v.stream
	select {
	case <-s.first:
	case <-l.ctx.Done():
		s.halt()
		return nil, false
	}
	if s.drainedEmpty() {
		return nil, true
	}
	p, ok := l.m.startStream(l.ctx, s)
	if p == nil {
		return nil, ok
	}
	select {
	case <-p.started:
	case <-p.done:
	case <-l.ctx.Done():
		return nil, false
	}
	return p, true
}

// note records the engine's note at, after the piece played; a response's
// pieces that fell back for the same reason are noted once.
func (l *sipLine) note(tag int, at time.Time, text string) {
	if n := len(l.notes); n > 0 && l.notes[n-1].Text == text && l.lastNoteTag == tag {
		return
	}
	l.lastNoteTag = tag
	l.notes = append(l.notes, Event{At: at, Turn: telephony.Turn{Speaker: SpeakerAgent, Text: text, Note: true}})
}

var _ conversation.Line = (*sipLine)(nil)

// dtmfWriter keys digits on the call (diago's RFC 4733 writer).
type dtmfWriter interface {
	WriteDTMF(r rune) error
}

var _ dtmfWriter = (*diago.DTMFWriter)(nil)
