package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony"
)

const (
	// holdPause is the pause between two sayings of the hold line.
	holdPause = 3 * time.Second
	// defaultAcceptTimeout is how long a warm transfer's person has to
	// accept after the whisper when Transfer.AcceptTimeout is zero.
	defaultAcceptTimeout = 15 * time.Second
	// defaultAcceptDigit is the key that accepts when Transfer.AcceptDigit
	// is empty.
	defaultAcceptDigit = "1"
)

// bridge transfers the callee by dialing the person as a second call on
// the same trunk and joining the two; the callee hears the hold line
// while the person's phone rings. It returns once the bridged call ended
// (bridged), or at once when the person could not be reached.
func (lc *liveCall) bridge(ctx context.Context, t Transfer, out telephony.TransferOutcome) telephony.TransferOutcome {
	hold := lc.holdWhile(ctx, t)
	leg := lc.dial(ctx, t, &out)
	hold.stop()
	if leg == nil {
		return out
	}
	return lc.connect(ctx, leg, out)
}

// warm dials the person, whispers, and bridges once they accept; the
// callee hears the hold line until then. Without an accept the person is
// hung up (declined) and the callee is back with the agent.
func (lc *liveCall) warm(ctx context.Context, t Transfer, out telephony.TransferOutcome) telephony.TransferOutcome {
	hold := lc.holdWhile(ctx, t)
	leg := lc.dial(ctx, t, &out)
	if leg == nil {
		hold.stop()
		return out
	}
	if t.WhisperText != "" {
		lc.res.event(SpeakerAgent, t.WhisperText)
	}
	accepted := lc.awaitAccept(ctx, leg, t, &out)
	hold.stop()
	if !accepted {
		leg.close()
		return out
	}
	return lc.connect(ctx, leg, out)
}

// awaitAccept says the whisper to the person and waits for their accept
// key (pressed during the whisper counts), at most AcceptTimeout after
// the whisper; false (out says why) when they did not accept, hung up, or
// the callee's call ended.
func (lc *liveCall) awaitAccept(ctx context.Context, leg *secondLeg, t Transfer, out *telephony.TransferOutcome) bool {
	digit := t.AcceptDigit
	if digit == "" {
		digit = defaultAcceptDigit
	}
	timeout := t.AcceptTimeout
	if timeout <= 0 {
		timeout = defaultAcceptTimeout
	}
	spoken := make(chan struct{}, 1)
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	if leg.ear != nil {
		wg.Go(func() { lc.hearAccept(rctx, leg, spoken) })
	}
	said := leg.say(t.Whisper)
	// The whisper's end starts the wait; should the person's media stop
	// before it ended, the whole wait still has an end.
	whole := time.NewTimer(samplesDuration(len(t.Whisper)) + timeout + time.Second)
	defer whole.Stop()
	wait := time.NewTimer(timeout)
	wait.Stop()
	defer wait.Stop()
	var after <-chan time.Time
	for {
		select {
		case <-said:
			said = nil
			wait.Reset(timeout)
			after = wait.C
		case k := <-leg.keys:
			if string(k) == digit {
				return true
			}
		case <-spoken:
			return true
		case <-after:
			out.Result, out.Detail = switchboardv1.TransferDeclined, fmt.Sprintf("the person did not accept within %s", timeout)
			return false
		case <-whole.C:
			out.Result, out.Detail = switchboardv1.TransferDeclined, fmt.Sprintf("the person did not accept within %s", timeout)
			return false
		case <-leg.hungUp():
			out.Result, out.Detail = switchboardv1.TransferDeclined, "the person hung up before accepting"
			return false
		case <-ctx.Done():
			out.Result, out.Detail = switchboardv1.TransferFailed, "the callee's call ended before the person accepted"
			return false
		}
	}
}

// acceptWords are what a person says to accept a warm transfer.
var acceptWords = []string{"yes", "accept"}

// hearAccept recognizes what the person says until they say an accept
// word (then spoken gets a value) or ctx ends.
func (lc *liveCall) hearAccept(ctx context.Context, leg *secondLeg, spoken chan<- struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case pcm := <-leg.utters:
			r, err := lc.spec.Recognizer.Recognize(ctx, pcm, acceptWords)
			if err == nil && saysAccept(r.Text) {
				spoken <- struct{}{}
				return
			}
		}
	}
}

// saysAccept reports whether text has an accept word.
func saysAccept(text string) bool {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) })
	return slices.ContainsFunc(words, func(w string) bool { return slices.Contains(acceptWords, w) })
}

// connect joins the callee and the person until either hangs up (or the
// callee's call ends otherwise), then hangs up the person: the transfer
// bridged, and the callee's call ends with it.
func (lc *liveCall) connect(ctx context.Context, leg *secondLeg, out telephony.TransferOutcome) telephony.TransferOutcome {
	leg.join(lc.m)
	// The callee reached the person when they were first sent the
	// person's audio; a person who never sent any, at the join.
	out.ConnectedAt = time.Now()
	select {
	case <-leg.hungUp():
	case <-ctx.Done():
	}
	lc.m.peer.Store(nil)
	leg.close()
	if at := leg.heardAt.Load(); at != 0 {
		out.ConnectedAt = time.Unix(0, at)
	}
	out.SecondLeg = time.Since(leg.answeredAt)
	out.Result, out.Detail = switchboardv1.TransferBridged, ""
	return out
}

// holdLoop says the hold line to the callee, again after each pause,
// until stopped.
type holdLoop struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// holdWhile starts saying t.Hold to the callee (its text in the
// transcript once), so that they never wait in silence.
func (lc *liveCall) holdWhile(ctx context.Context, t Transfer) *holdLoop {
	hctx, cancel := context.WithCancel(ctx)
	h := &holdLoop{cancel: cancel, done: make(chan struct{})}
	if len(t.Hold) == 0 {
		close(h.done)
		return h
	}
	if t.HoldText != "" {
		lc.res.event(SpeakerAgent, t.HoldText)
	}
	go func() {
		defer close(h.done)
		for {
			p := &playback{pcm: t.Hold, done: make(chan struct{})}
			if !lc.m.offer(hctx, p) {
				return
			}
			select {
			case <-p.done:
			case <-hctx.Done():
				p.cut.Store(true) // the callee hears the person, or the agent, at the next frame
				return
			}
			if !sleep(hctx, holdPause) {
				return
			}
		}
	}()
	return h
}

// stop ends the hold line at the next frame and returns once it did.
func (h *holdLoop) stop() {
	h.cancel()
	<-h.done
}

// offer hands p to the writer; false when the writer stopped or ctx ended
// first. Unlike hand it leaves lastPlay, the script's, alone.
func (m *callMedia) offer(ctx context.Context, p *playback) bool {
	select {
	case m.plays <- p:
		return true
	case <-m.writerGone:
		return false
	case <-ctx.Done():
		return false
	}
}
