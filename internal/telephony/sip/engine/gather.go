package engine

import (
	"cmp"
	"context"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/speech"
)

// defaultRecognizeTimeout is EngineConfig.RecognizeTimeout when zero.
const defaultRecognizeTimeout = 10 * time.Second

// answer is what the callee gave one attempt of a gather: keys, an
// utterance, or nothing (both nil).
type answer struct {
	keys *input
	said *utterance
}

// utterance is the callee's speech as recognized.
type utterance struct {
	text       string
	confidence float64
	recognizer string
	// words are placed from the start of the utterance.
	words []speech.Word
	// start and end place it on the call's timeline.
	start, end time.Time
	err        error
}

// decision is what a gather made of an answer.
type decision struct {
	// value is what the gather's field takes; branch and next are the
	// transcript's (Event.Branch, Event.Next) and where the script goes.
	value, branch, next string
	matched             bool
}

// gather runs step s's gather: it plays the prompt while taking the
// callee's answer, re-prompts on no answer and on one it cannot use as the
// retries allow, and records each decision. It returns the ID of the step
// to go to ("": the next one), and false when callCtx ended first.
func (m *callMedia) gather(callCtx context.Context, s Step, res *Result) (string, bool) {
	g := *s.Gather
	listen := g.Speech && m.recognizer != nil
	prompt := s.Audio
	var noInput, noMatch int
	for {
		a, ok := m.attempt(callCtx, prompt, g, listen)
		if !ok {
			return "", false
		}
		res.placeLine(m.lastPlay, m.answeredAt)
		var d decision
		var retry *Retry
		var tries *int
		switch {
		case a.keys == nil && a.said == nil:
			if g.keyedDigits() && g.NoInput == nil {
				return g.Next, true // as gathers of keyed digits always did
			}
			d, retry, tries = decision{branch: BranchNoInput}, g.NoInput, &noInput
		default:
			d = g.decide(a, time.Now().In(cmp.Or(m.zone, time.UTC)))
			retry, tries = g.NoMatch, &noMatch
		}
		if d.matched {
			m.record(res, g, a, d)
			return d.next, true
		}
		if retry != nil && *tries < retry.Retries {
			*tries++
			m.record(res, g, a, d)
			text, note := retry.Text, retry.Note
			prompt = retry.Audio
			if prompt == nil {
				prompt, text, note = s.Audio, s.Text, s.Note
			}
			if text != "" {
				res.event(SpeakerAgent, text)
			}
			if note != "" {
				res.note(SpeakerAgent, note)
			}
			continue
		}
		if retry != nil {
			d.next = retry.Next
		}
		m.record(res, g, a, d)
		return d.next, true
	}
}

// keyedDigits reports whether g takes keyed digits as they are (a gather
// as they were before choices and captures).
func (g *Gather) keyedDigits() bool { return g.Choices == nil && g.Capture == "" }

// record puts the answer in the transcript and, when it is one, in
// res.Digits.
func (m *callMedia) record(res *Result, g Gather, a answer, d decision) {
	ev := Event{Turn: telephony.Turn{Speaker: SpeakerCallee, Branch: d.branch, Next: d.next}}
	if d.matched {
		ev.Field, ev.Digits = g.Field, d.value
		if g.Field != "" {
			if res.Digits == nil {
				res.Digits = map[string]string{}
			}
			res.Digits[g.Field] = d.value
		}
	}
	switch {
	case a.keys != nil:
		ev.At, ev.Text = a.keys.firstAt, "pressed "+a.keys.pressed.String()
	case a.said != nil:
		u := a.said
		ev.At, ev.Text = u.start, u.text
		ev.Start, ev.End = u.start.Sub(m.answeredAt), u.end.Sub(m.answeredAt)
		ev.Confidence, ev.Recognizer = u.confidence, u.recognizer
		ev.Words = placeWords(u.words, ev.Start)
		if u.err != nil {
			ev.Text, ev.Note = "(not recognized: "+u.err.Error()+")", true
		}
	default:
		ev.At, ev.Text, ev.Note = time.Now(), "(no answer)", true
	}
	res.Events = append(res.Events, ev)
}

// attempt plays prompt while taking the callee's answer; false when
// callCtx ended first. Keys and speech from before the attempt are
// dropped.
func (m *callMedia) attempt(callCtx context.Context, prompt []int16, g Gather, listen bool) (answer, bool) {
	m.dropKeys()
	m.dropSpeech()
	if listen {
		m.listening.Store(true)
		defer m.listening.Store(false)
	}
	p, ok := m.start(callCtx, prompt)
	if !ok {
		return answer{}, false
	}
	if p != nil && listen && !g.NoBargeIn {
		m.bargeable.Store(p)
		defer m.bargeable.Store(nil)
	}
	a, ok := m.collect(callCtx, p, g, listen)
	if !ok {
		return answer{}, false
	}
	// Let the writer finish (or cut, unless it must be heard to the end)
	// the prompt before the next step.
	if p != nil {
		if !g.NoBargeIn {
			p.cut.Store(true)
		}
		select {
		case <-p.done:
		case <-callCtx.Done():
			return answer{}, false
		}
	}
	return a, true
}

// collect takes keys and, when listening, utterances until an answer is
// complete or none came in time; false when callCtx ended first. The
// timeout runs once the prompt p (nil: none) ended, from then or from the
// last key, and not while the callee is speaking. The first key stops
// listening to speech; an utterance in which nothing was recognized (a
// cough, noise) is no answer.
func (m *callMedia) collect(callCtx context.Context, p *playback, g Gather, listen bool) (answer, bool) {
	c := &collector{m: m, p: p, g: g, in: &input{g: g}, timeout: cmp.Or(g.Timeout, defaultGatherTimeout)}
	promptDone := closedChan
	if p != nil {
		promptDone = p.done
	}
	if listen {
		// Speech that started before the attempt (its start event was
		// dropped) holds the timeout off too.
		c.heard, c.talking = m.speech, m.speaking.Load()
	}
	c.timer = time.NewTimer(c.timeout)
	c.timer.Stop()
	defer c.timer.Stop()
	for {
		select {
		case <-callCtx.Done():
			return answer{}, false
		case <-promptDone:
			promptDone, c.timing = nil, true
			if !c.talking {
				c.timer.Reset(c.timeout)
			}
		case k := <-m.keys:
			if c.key(k) {
				return answer{keys: c.in}, true
			}
		case ev := <-c.heard:
			if a, done, ok := c.speech(callCtx, ev); done || !ok {
				return a, ok
			}
		case <-c.timer.C:
			if c.in.pressed.Len() > 0 {
				return answer{keys: c.in}, true
			}
			return answer{}, true
		}
	}
}

// collector is the state of one collect.
type collector struct {
	m  *callMedia
	p  *playback
	g  Gather
	in *input
	// heard is the speech events, nil when not listening (any more).
	heard   chan speechEvent
	timer   *time.Timer
	timeout time.Duration
	// timing: the prompt ended; talking: the callee is speaking.
	timing, talking bool
}

// key takes a key and reports whether the input is complete.
func (c *collector) key(k keyPress) bool {
	if c.g.NoKeys {
		return false
	}
	if c.in.pressed.Len() == 0 && c.p != nil && !c.g.NoBargeIn {
		c.p.cut.Store(true) // barge-in
	}
	c.heard, c.talking = nil, false
	if c.in.press(k) {
		return true
	}
	if c.timing {
		c.timer.Reset(c.timeout)
	}
	return false
}

// speech takes a speech event: done with the answer when an utterance
// was recognized; false when callCtx ended first.
func (c *collector) speech(callCtx context.Context, ev speechEvent) (a answer, done, ok bool) {
	if ev.started {
		c.talking = true
		c.timer.Stop()
		return answer{}, false, true
	}
	c.talking = false
	u, ok := c.m.recognize(callCtx, ev, c.g)
	if !ok {
		return answer{}, true, false
	}
	if u.text != "" || u.err != nil {
		return answer{said: &u}, true, true
	}
	if c.timing {
		c.timer.Reset(c.timeout)
	}
	return answer{}, false, true
}

// recognize turns an utterance into text; false when callCtx ended first.
func (m *callMedia) recognize(callCtx context.Context, ev speechEvent, g Gather) (utterance, bool) {
	ctx, cancel := context.WithTimeout(callCtx, m.recognizeTimeout)
	defer cancel()
	r, err := m.recognizer.Recognize(ctx, ev.pcm, g.hints())
	if callCtx.Err() != nil {
		return utterance{}, false
	}
	// A server's fallback names itself ("embedded (server failed: ...)").
	return utterance{text: strings.TrimSpace(r.Text), confidence: r.Confidence, recognizer: cmp.Or(r.Recognizer, m.recognizer.Name()),
		words: r.Words, start: ev.start, end: ev.end, err: err}, true
}

// placeWords places an utterance's words, which started at start in the
// recording, in the recording.
func placeWords(words []speech.Word, start time.Duration) []speech.Word {
	if len(words) == 0 {
		return nil
	}
	out := make([]speech.Word, len(words))
	for i, w := range words {
		out[i] = speech.Word{Text: w.Text, Start: start + w.Start, End: start + w.End}
	}
	return out
}

// hints are the phrases the recognizer should expect: the choices', or
// the vocabulary of a number or yes/no capture (nil, open recognition,
// for the others). Constrained to them, the embedded recognizer is both
// more accurate and an order of magnitude faster than open recognition
// (hack/benchmarks.md).
func (g *Gather) hints() []string {
	if g.Choices == nil {
		return speech.CaptureHints(g.Capture)
	}
	var hints []string
	for _, c := range g.Choices {
		hints = append(hints, c.Value)
		hints = append(hints, c.Phrases...)
	}
	return hints
}

// input is the keys of one gather.
type input struct {
	g       Gather
	pressed strings.Builder // every key, the finish key included
	digits  strings.Builder // the keys kept
	firstAt time.Time
}

// press adds a key and reports whether the input is complete.
func (in *input) press(k keyPress) bool {
	if in.pressed.Len() == 0 {
		in.firstAt = k.at
	}
	in.pressed.WriteByte(k.key)
	if in.g.FinishOnKey != "" && k.key == in.g.FinishOnKey[0] {
		return true
	}
	in.digits.WriteByte(k.key)
	return in.g.NumDigits > 0 && in.digits.Len() >= in.g.NumDigits || in.selects()
}

// selects reports whether the digits are a choice's and could be no
// other's: the callee needs not wait for the timeout.
func (in *input) selects() bool {
	digits := in.digits.String()
	selected := false
	for _, c := range in.g.Choices {
		switch {
		case c.Digits == digits:
			selected = true
		case strings.HasPrefix(c.Digits, digits):
			return false
		}
	}
	return selected
}
