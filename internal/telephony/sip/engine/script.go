package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/amd"
)

const (
	// defaultGatherTimeout is Gather.Timeout when zero.
	defaultGatherTimeout = 5 * time.Second
	// hangupTail is the silence sent after the script's last audio before
	// the BYE, so that the far end's jitter buffer plays the last words.
	hangupTail = 200 * time.Millisecond
	// amdJitter is how late the callee's audio may arrive before the
	// detector takes its absence for silence (a callee sending no RTP at
	// all is silent, not undecided).
	amdJitter = 200 * time.Millisecond
	// pollInterval is how often waits on the media look again.
	pollInterval = 20 * time.Millisecond
)

// validate reports what in the call's script and AMD parameters cannot
// work, before we dial.
func (c CallSpec) validate() error {
	var errs []error
	ids := map[string]bool{}
	for i, s := range c.Script {
		if s.ID != "" && ids[s.ID] {
			errs = append(errs, fmt.Errorf("script step %d: id %q is taken", i, s.ID))
		}
		ids[s.ID] = true
	}
	for i, s := range c.Script {
		if s.Transfer != nil && s.Transfer.Next != "" && !ids[s.Transfer.Next] {
			errs = append(errs, fmt.Errorf("script step %d: a failed transfer goes to step %q, which the script does not have",
				i, s.Transfer.Next))
		}
		if s.Gather == nil {
			continue
		}
		for _, err := range s.Gather.validate(ids) {
			errs = append(errs, fmt.Errorf("script step %d: %w", i, err))
		}
	}
	errs = append(errs, validatePresses(c.Script)...)
	errs = append(errs, validateHeaders(c.Headers)...)
	if c.AMD != nil {
		if err := c.AMD.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// validate reports what in g cannot work; ids are the script's step IDs.
func (g *Gather) validate(ids map[string]bool) []error {
	var errs []error
	if g.Field == "" && g.Choices == nil && g.Capture == "" {
		errs = append(errs, errors.New("gather has no field, choices or capture type"))
	}
	if g.Speech && g.Choices == nil && g.Capture == "" {
		errs = append(errs, errors.New("gather listens to speech without choices or a capture type"))
	}
	switch g.Capture {
	case "", CaptureNumber, CaptureDigits, CaptureDate, CaptureTime, CaptureYesNo, CaptureText:
	default:
		errs = append(errs, fmt.Errorf("gather capture type %q: want number, digits, date, time, yes_no or text", g.Capture))
	}
	errs = append(errs, g.validateKeys()...)
	for _, n := range g.nexts() {
		if n != "" && !ids[n] {
			errs = append(errs, fmt.Errorf("gather goes to step %q, which the script does not have", n))
		}
	}
	return errs
}

// validateKeys reports what in g's settings of keyed input cannot work.
func (g *Gather) validateKeys() []error {
	var errs []error
	if g.NumDigits < 0 || g.Timeout < 0 {
		errs = append(errs, errors.New("gather numDigits and timeout must not be negative"))
	}
	if g.FinishOnKey != "" && (len(g.FinishOnKey) != 1 || !strings.Contains("0123456789*#", g.FinishOnKey)) {
		errs = append(errs, fmt.Errorf("gather finish key %q: want one of 0-9, * and #", g.FinishOnKey))
	}
	return errs
}

// nexts are the step IDs g may go to ("" for none).
func (g *Gather) nexts() []string {
	nexts := []string{g.Next}
	for _, r := range []*Retry{g.NoInput, g.NoMatch} {
		if r != nil {
			nexts = append(nexts, r.Next)
		}
	}
	for _, c := range g.Choices {
		nexts = append(nexts, c.Next)
	}
	return nexts
}

// run runs the answered call: AMD, then the voicemail or the script. It
// returns who hangs up, or "" when callCtx ended first (its cause says
// why).
func (e *Engine) run(callCtx context.Context, lc *liveCall) string {
	c, m, res := lc.spec, lc.m, lc.res
	if m.detector != nil {
		verdict, ok := m.detect(callCtx)
		if !ok {
			return ""
		}
		res.AMDStatus, res.AMDCause = verdict.Status, verdict.Cause
		if verdict.Status == amd.Machine {
			res.Machine = true
			res.note(SpeakerCallee, "(answering machine greeting)")
			return e.voicemail(callCtx, c.Voicemail, m, res)
		}
	}
	if c.Stream != nil {
		return e.bridge(callCtx, *c.Stream, m, res)
	}
	if c.Conversation != nil {
		return e.converseWithModel(callCtx, *c.Conversation, m, res, lc.transfer)
	}
	return runScript(callCtx, c.Script, m, res, lc.transfer)
}

// runScript plays the steps in order, or where a gather's answer leads,
// and hangs up after the last one; an empty script waits for the callee's
// BYE or MaxDuration. A script that jumps back runs until the callee
// hangs up or MaxDuration.
func runScript(callCtx context.Context, script []Step, m *callMedia, res *Result, transfer transferFunc) string {
	if len(script) == 0 {
		<-callCtx.Done()
		return ""
	}
	index := stepIndex(script)
	for i := 0; i < len(script); {
		s := script[i]
		next, ok := playScriptStep(callCtx, s, m, res)
		if !ok {
			return ""
		}
		if s.Transfer != nil {
			if out := transfer(callCtx, *s.Transfer); out.Result.Succeeded() {
				return HangupByTransfer
			}
			if callCtx.Err() != nil {
				return ""
			}
			next = s.Transfer.Next
		}
		if s.Hangup {
			break
		}
		if next == "" {
			i++
		} else {
			i = index[next]
		}
	}
	if !sleep(callCtx, hangupTail) {
		return ""
	}
	return HangupByAgent
}

// playScriptStep says a step's text, plays its audio or runs its gather,
// then presses its digits; it returns the step a gather goes to, and
// false when callCtx ended.
func playScriptStep(callCtx context.Context, s Step, m *callMedia, res *Result) (string, bool) {
	if s.Text != "" {
		res.event(SpeakerAgent, s.Text)
	}
	next, ok := "", false
	if s.Gather != nil {
		if s.Note != "" {
			res.note(SpeakerAgent, s.Note)
		}
		next, ok = m.gather(callCtx, s, res)
	} else if ok = m.playStep(callCtx, s); ok {
		res.placeLine(m.lastPlay, m.answeredAt)
		if s.Note != "" {
			res.note(SpeakerAgent, s.Note) // after the line: its place is the line's end
		}
	}
	if ok && s.Press != nil {
		ok = pressStep(callCtx, *s.Press, m, res)
	}
	return next, ok
}

// stepIndex maps step IDs to their place in the script.
func stepIndex(script []Step) map[string]int {
	index := map[string]int{}
	for i, s := range script {
		if s.ID != "" {
			index[s.ID] = i
		}
	}
	return index
}

// voicemail hangs up on a machine at once, or leaves the message once its
// greeting ended.
func (e *Engine) voicemail(callCtx context.Context, v Voicemail, m *callMedia, res *Result) string {
	if !v.LeaveMessage {
		return HangupByVoicemail
	}
	if !m.awaitGreetingEnd(callCtx, e.cfg.GreetingEndSilence, e.cfg.GreetingMaxWait) {
		return ""
	}
	if v.MessageText != "" {
		res.event(SpeakerAgent, v.MessageText)
	}
	if !m.playAll(callCtx, v.Message) {
		return ""
	}
	res.placeLine(m.lastPlay, m.answeredAt)
	if v.MessageNote != "" {
		res.note(SpeakerAgent, v.MessageNote)
	}
	if !sleep(callCtx, hangupTail) {
		return ""
	}
	return HangupByVoicemail
}

// event appends a transcript event happening now.
func (r *Result) event(speaker, text string) { //nolint:unparam // the transcript has the callee's lines too
	r.Events = append(r.Events, Event{At: time.Now(), Turn: telephony.Turn{Speaker: speaker, Text: text}})
}

// note appends an event happening now whose text is the engine's account
// of it, not words anyone said (Event.Note).
func (r *Result) note(speaker, text string) {
	r.Events = append(r.Events, Event{At: time.Now(), Turn: telephony.Turn{Speaker: speaker, Text: text, Note: true}})
}

// sleep waits for d; false when callCtx ended first.
func sleep(callCtx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-callCtx.Done():
		return false
	}
}

// start queues pcm for the writer. It returns nil when there is nothing to
// play or nothing can be played any more, and false when callCtx ended.
func (m *callMedia) start(callCtx context.Context, pcm []int16) (*playback, bool) {
	m.lastPlay = nil
	if len(pcm) == 0 {
		return nil, true
	}
	return m.hand(callCtx, &playback{pcm: pcm, done: make(chan struct{})})
}

// startStream hands a streamed playback to the writer, which plays its
// audio as it arrives (see pcmStream); false when callCtx ended first.
// When the writer stopped the stream is halted and nil returned.
func (m *callMedia) startStream(callCtx context.Context, s *pcmStream) (*playback, bool) {
	m.lastPlay = nil
	p, ok := m.hand(callCtx, &playback{stream: s, done: make(chan struct{}), started: make(chan struct{})})
	if p == nil {
		s.halt()
	}
	return p, ok
}

// hand gives p to the writer; nil when the writer stopped, false when
// callCtx ended first.
func (m *callMedia) hand(callCtx context.Context, p *playback) (*playback, bool) {
	select {
	case m.plays <- p:
		m.lastPlay = p
		return p, true
	case <-m.writerGone:
		return nil, true
	case <-callCtx.Done():
		return nil, false
	}
}

// playStep plays a step's audio to its end, or until the callee starts
// speaking when the step allows barge-in; false when callCtx ended first.
func (m *callMedia) playStep(callCtx context.Context, s Step) bool {
	p, ok := m.start(callCtx, s.Audio)
	if p == nil {
		return ok
	}
	if s.BargeIn {
		m.bargeable.Store(p)
		defer m.bargeable.Store(nil)
	}
	select {
	case <-p.done:
		return true
	case <-callCtx.Done():
		return false
	}
}

// playAll plays pcm to its end; false when callCtx ended first.
func (m *callMedia) playAll(callCtx context.Context, pcm []int16) bool {
	p, ok := m.start(callCtx, pcm)
	if p == nil {
		return ok
	}
	select {
	case <-p.done:
		return true
	case <-callCtx.Done():
		return false
	}
}

var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// dropKeys forgets the keys pressed so far.
func (m *callMedia) dropKeys() {
	for {
		select {
		case <-m.keys:
		default:
			return
		}
	}
}

// detect waits for the detector's verdict, feeding it silence for the
// audio that does not come; false when callCtx ended first.
func (m *callMedia) detect(callCtx context.Context) (amd.Result, bool) {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		select {
		case r := <-m.detector.verdict:
			return r, true
		case <-callCtx.Done():
			return amd.Result{}, false
		case now := <-tick.C:
			m.detector.padTo(now.Add(-amdJitter))
		}
	}
}

// awaitGreetingEnd waits until the callee was silent for quiet since their
// last voiced frame (a machine's greeting and beep are over), at most
// maxWait; false when callCtx ended first.
func (m *callMedia) awaitGreetingEnd(callCtx context.Context, quiet, maxWait time.Duration) bool {
	deadline := time.Now().Add(maxWait)
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		lastVoice := time.Unix(0, m.lastVoiceAt.Load())
		if time.Since(lastVoice) >= quiet || time.Now().After(deadline) {
			return true
		}
		select {
		case <-callCtx.Done():
			return false
		case <-tick.C:
		}
	}
}

// amdFeed feeds the detector the callee's audio on the call's timeline,
// filling what did not come with silence.
type amdFeed struct {
	mu    sync.Mutex
	det   *amd.Detector
	start time.Time
	fed   int // samples fed
	// verdict receives the decision, once.
	verdict chan amd.Result
	decided bool
}

func newAMDFeed(p amd.Params, start time.Time) *amdFeed {
	return &amdFeed{det: amd.New(p), start: start, verdict: make(chan amd.Result, 1)}
}

// feed feeds pcm, which started at t, after silence for any gap of more
// than two frames before it.
func (a *amdFeed) feed(pcm []int16, t time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.padLocked(t, 2*frameSamples)
	a.feedLocked(pcm)
}

// padTo feeds silence up to t.
func (a *amdFeed) padTo(t time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.padLocked(t, 0)
}

func (a *amdFeed) padLocked(t time.Time, slack int) {
	if a.decided {
		return // and the gap grows for the rest of the call
	}
	gap := int(t.Sub(a.start)*sampleRate/time.Second) - a.fed
	if gap > slack {
		a.feedLocked(make([]int16, gap))
	}
}

func (a *amdFeed) feedLocked(pcm []int16) {
	if a.decided {
		return
	}
	a.fed += len(pcm)
	if r, ok := a.det.Feed(pcm); ok {
		a.decided = true
		a.verdict <- r
	}
}
