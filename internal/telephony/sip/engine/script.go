package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

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
	for i, s := range c.Script {
		g := s.Gather
		if g == nil {
			continue
		}
		if g.Field == "" {
			errs = append(errs, fmt.Errorf("script step %d: gather has no field", i))
		}
		if g.NumDigits < 0 || g.Timeout < 0 {
			errs = append(errs, fmt.Errorf("script step %d: gather numDigits and timeout must not be negative", i))
		}
		if g.FinishOnKey != "" && (len(g.FinishOnKey) != 1 || !strings.Contains("0123456789*#", g.FinishOnKey)) {
			errs = append(errs, fmt.Errorf("script step %d: finish key %q: want one of 0-9, * and #", i, g.FinishOnKey))
		}
	}
	if c.AMD != nil {
		if err := c.AMD.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// run runs the answered call: AMD, then the voicemail or the script. It
// returns who hangs up, or "" when callCtx ended first (its cause says
// why).
func (e *Engine) run(callCtx context.Context, c CallSpec, m *callMedia, res *Result) string {
	if m.detector != nil {
		verdict, ok := m.detect(callCtx)
		if !ok {
			return ""
		}
		res.AMDStatus, res.AMDCause = verdict.Status, verdict.Cause
		if verdict.Status == amd.Machine {
			res.Machine = true
			res.event(SpeakerCallee, "(answering machine greeting)")
			return e.voicemail(callCtx, c.Voicemail, m, res)
		}
	}
	if c.Stream != nil {
		return e.bridge(callCtx, *c.Stream, m, res)
	}
	return runScript(callCtx, c.Script, m, res)
}

// runScript plays the steps in order and hangs up after the last one; an
// empty script waits for the callee's BYE or MaxDuration.
func runScript(callCtx context.Context, script []Step, m *callMedia, res *Result) string {
	if len(script) == 0 {
		<-callCtx.Done()
		return ""
	}
	for _, s := range script {
		if s.Text != "" {
			res.event(SpeakerAgent, s.Text)
		}
		var ok bool
		if s.Gather != nil {
			ok = m.gather(callCtx, s.Audio, *s.Gather, res)
		} else {
			ok = m.playAll(callCtx, s.Audio)
		}
		if !ok {
			return ""
		}
		if s.Hangup {
			break
		}
	}
	if !sleep(callCtx, hangupTail) {
		return ""
	}
	return HangupByAgent
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
	if !m.playAll(callCtx, v.Message) || !sleep(callCtx, hangupTail) {
		return ""
	}
	return HangupByVoicemail
}

// event appends a transcript event happening now.
func (r *Result) event(speaker, text string) {
	r.Events = append(r.Events, Event{At: time.Now(), Speaker: speaker, Text: text})
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
	if len(pcm) == 0 {
		return nil, true
	}
	p := &playback{pcm: pcm, done: make(chan struct{})}
	select {
	case m.plays <- p:
		return p, true
	case <-m.writerGone:
		return nil, true
	case <-callCtx.Done():
		return nil, false
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

// gather plays prompt while collecting keys, cutting it at the first key,
// and records the keys in res; false when callCtx ended first. Keys
// pressed before the step are dropped.
func (m *callMedia) gather(callCtx context.Context, prompt []int16, g Gather, res *Result) bool {
	m.dropKeys()
	p, ok := m.start(callCtx, prompt)
	if !ok {
		return false
	}
	in := &input{g: g}
	if !m.collect(callCtx, p, in) {
		return false
	}
	in.record(res)
	// Let the writer finish (or cut) the prompt before the next step.
	if p != nil {
		p.cut.Store(true)
		select {
		case <-p.done:
		case <-callCtx.Done():
			return false
		}
	}
	return true
}

// collect collects keys into in until it is complete or timed out; false
// when callCtx ended first. The timeout runs once the prompt p (nil: none)
// ended, from then or from the last key.
func (m *callMedia) collect(callCtx context.Context, p *playback, in *input) bool {
	timeout := cmp.Or(in.g.Timeout, defaultGatherTimeout)
	promptDone := closedChan
	if p != nil {
		promptDone = p.done
	}
	timer := time.NewTimer(timeout)
	timer.Stop()
	defer timer.Stop()
	timing := false
	for {
		select {
		case <-callCtx.Done():
			return false
		case <-promptDone:
			promptDone = nil
			timing = true
			timer.Reset(timeout)
		case k := <-m.keys:
			if in.pressed.Len() == 0 && p != nil {
				p.cut.Store(true) // barge-in
			}
			if in.press(k) {
				return true
			}
			if timing {
				timer.Reset(timeout)
			}
		case <-timer.C:
			return true
		}
	}
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
	return in.g.NumDigits > 0 && in.digits.Len() >= in.g.NumDigits
}

// record puts the digits and a transcript event in res when a key was
// pressed.
func (in *input) record(res *Result) {
	if in.pressed.Len() == 0 {
		return
	}
	if res.Digits == nil {
		res.Digits = map[string]string{}
	}
	res.Digits[in.g.Field] = in.digits.String()
	res.Events = append(res.Events, Event{At: in.firstAt, Speaker: SpeakerCallee, Text: "pressed " + in.pressed.String(),
		Field: in.g.Field, Digits: in.digits.String()})
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
