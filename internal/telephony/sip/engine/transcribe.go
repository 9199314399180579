package engine

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/internal/telephony"
)

// transcribeQueue bounds the utterances waiting for the recognizer outside
// gathers: a recognizer slower than the callee speaks loses utterances
// (noted in the transcript) rather than memory.
const transcribeQueue = 8

// transcriber recognizes the callee's utterances that no gather listens
// to (open recognition, no hints), for the transcript. Its events are
// merged into the call's once the call ended.
type transcriber struct {
	m       *callMedia
	queue   chan speechEvent
	done    chan struct{}
	mu      sync.Mutex
	events  []Event
	timeout time.Duration
}

// startTranscriber starts recognizing m's utterances outside gathers, with
// ctx bounding the recognitions; nil when m has no recognizer.
func startTranscriber(ctx context.Context, m *callMedia) *transcriber {
	if m.recognizer == nil {
		return nil
	}
	t := &transcriber{m: m, queue: make(chan speechEvent, transcribeQueue), done: make(chan struct{}), timeout: m.recognizeTimeout}
	m.transcribe = t
	go t.run(ctx)
	return t
}

// offer queues an utterance (from the media's reader goroutine), or notes
// that it was not transcribed when the queue is full.
func (t *transcriber) offer(ev speechEvent) {
	select {
	case t.queue <- ev:
	default:
		t.add(t.note(ev, "(not transcribed: the recognizer was busy)"))
	}
}

func (t *transcriber) run(ctx context.Context) {
	defer close(t.done)
	for ev := range t.queue {
		rctx, cancel := context.WithTimeout(ctx, t.timeout)
		r, err := t.m.recognizer.Recognize(rctx, ev.pcm, nil)
		cancel()
		switch {
		case err != nil:
			t.add(t.note(ev, "(not recognized: "+err.Error()+")"))
		case r.Text != "":
			e := t.event(ev, r.Text)
			e.Confidence, e.Words = r.Confidence, placeWords(r.Words, e.Start)
			e.Recognizer = cmp.Or(r.Recognizer, e.Recognizer) // a server's fallback names itself
			t.add(e)
		}
	}
}

func (t *transcriber) event(ev speechEvent, text string) Event {
	return Event{At: ev.start, Turn: telephony.Turn{Speaker: SpeakerCallee, Text: text, Recognizer: t.m.recognizer.Name(),
		Start: ev.start.Sub(t.m.answeredAt), End: ev.end.Sub(t.m.answeredAt)}}
}

// note is an event saying what became of an utterance whose words are
// not known.
func (t *transcriber) note(ev speechEvent, text string) Event {
	e := t.event(ev, text)
	e.Note = true
	return e
}

func (t *transcriber) add(e Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.events = append(t.events, e)
}

// finish recognizes what is queued, once no more comes (the media's
// reader ended), waiting at most wait, and merges the utterances into
// res's transcript in time order. What is still being recognized then is
// left out.
func (t *transcriber) finish(res *Result, wait time.Duration, cancel context.CancelFunc) {
	if t == nil {
		return
	}
	close(t.queue)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-t.done:
	case <-timer.C:
		cancel()
		<-t.done
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.events) == 0 {
		return
	}
	res.Events = append(res.Events, t.events...)
	slices.SortStableFunc(res.Events, func(a, b Event) int { return a.At.Compare(b.At) })
}
