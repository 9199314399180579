package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/conversation"
	"github.com/switchboard-dev/switchboard/internal/telephony/audio"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts"
)

// fakeStreamer is a streaming voice: each line is samples samples (never
// zero, numbered on, so that order and gaps show), written in pieces of
// odd sizes, the first after firstDelay and each next after delay.
type fakeStreamer struct {
	samples           int
	firstDelay, delay time.Duration
	pieces            []int

	mu      sync.Mutex
	next    int16
	written [][]int16 // per line, what write accepted
	errs    []error   // per line, what Stream returned
}

func (f *fakeStreamer) line() []int16 {
	f.mu.Lock()
	defer f.mu.Unlock()
	pcm := make([]int16, f.samples)
	for i := range pcm {
		f.next = f.next%30000 + 1
		pcm[i] = f.next
	}
	return pcm
}

func (f *fakeStreamer) Speak(context.Context, string) ([]int16, error) { return f.line(), nil }

func (f *fakeStreamer) Stream(ctx context.Context, _ string, write func([]int16) error) (err error) {
	pcm := f.line()
	var sent []int16
	defer func() {
		f.mu.Lock()
		f.written, f.errs = append(f.written, sent), append(f.errs, err)
		f.mu.Unlock()
	}()
	if !sleep(ctx, f.firstDelay) {
		return ctx.Err()
	}
	for i := 0; len(pcm) > 0; i++ {
		n := min(f.pieces[i%len(f.pieces)], len(pcm))
		if err := write(pcm[:n]); err != nil {
			return err
		}
		sent = append(sent, pcm[:n]...)
		pcm = pcm[n:]
		if len(pcm) > 0 && !sleep(ctx, f.delay) {
			return ctx.Err()
		}
	}
	return nil
}

func (f *fakeStreamer) results() ([][]int16, []error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.written), slices.Clone(f.errs)
}

// pacedWriter takes a frame every period, as the RTP writer does every
// 20 ms.
type pacedWriter struct {
	period time.Duration
	next   time.Time
	frames atomic.Int64
}

func (w *pacedWriter) Write(p []byte) (int, error) {
	if w.next.IsZero() {
		w.next = time.Now()
	}
	w.next = w.next.Add(w.period)
	time.Sleep(time.Until(w.next))
	w.frames.Add(1)
	return len(p), nil
}

// lineRig is a conversation's line on a call's media whose writer is
// paced by a pacedWriter and recorded.
type lineRig struct {
	m      *callMedia
	line   *sipLine
	cancel context.CancelFunc
	writer sync.WaitGroup
	path   string
}

func newLineRig(t testing.TB, voice tts.Speaker, period time.Duration) *lineRig {
	t.Helper()
	path := filepath.Join(t.TempDir(), "call.wav")
	rec, err := audio.NewRecorder(path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	rec.Begin(now)
	r := &lineRig{m: newCallMedia(rec, 101, now, nil), path: path}
	out := make([]byte, frameSamples)
	enc := func(pcm []int16) []byte { return out[:len(pcm)] }
	r.writer.Go(func() { r.m.play(&pacedWriter{period: period}, enc) })
	ctx, cancel := context.WithCancel(t.Context())
	r.cancel = cancel
	r.line = newSIPLine(ctx, r.m, voice, nil)
	return r
}

// next returns the line's next play event.
func (r *lineRig) next(t testing.TB, timeout time.Duration) conversation.LineEvent {
	t.Helper()
	for {
		select {
		case ev := <-r.line.Events():
			if ev.Kind == conversation.PlayStarted || ev.Kind == conversation.PlayEnded {
				return ev
			}
		case <-time.After(timeout):
			t.Fatalf("no play event within %s", timeout)
		}
	}
}

// close ends the line and the writer and returns the agent's channel.
func (r *lineRig) close(t testing.TB) []int16 {
	t.Helper()
	r.cancel()
	r.line.wait()
	close(r.m.stop)
	r.writer.Wait()
	if err := r.m.rec.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(r.path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	left, _, err := audio.DecodeStereo(f)
	if err != nil {
		t.Fatal(err)
	}
	return left
}

func nonZero(pcm []int16) []int16 {
	return slices.DeleteFunc(slices.Clone(pcm), func(s int16) bool { return s == 0 })
}

// A streaming voice's lines play as they arrive: the agent's channel holds
// exactly the streamed audio, in order, each line started and ended once.
func TestStreamedLinesPlayInOrder(t *testing.T) {
	noLeaks(t)
	voice := &fakeStreamer{samples: 2 * sampleRate / 5, firstDelay: 10 * time.Millisecond, delay: time.Millisecond,
		pieces: []int{37, 161, 999, 3, 1201, 77}}
	r := newLineRig(t, voice, 2*time.Millisecond)
	r.line.Say("one", 1)
	r.line.Say("two", 2)
	for _, want := range []struct {
		kind conversation.EventKind
		tag  int
	}{{conversation.PlayStarted, 1}, {conversation.PlayEnded, 1}, {conversation.PlayStarted, 2}, {conversation.PlayEnded, 2}} {
		ev := r.next(t, 5*time.Second)
		if ev.Kind != want.kind || ev.Tag != want.tag || ev.Cut {
			t.Fatalf("event %+v, want %v of %d", ev, want.kind, want.tag)
		}
	}
	left := r.close(t)
	written, errs := voice.results()
	if len(written) != 2 || errs[0] != nil || errs[1] != nil {
		t.Fatalf("streams %d, errors %v", len(written), errs)
	}
	want := slices.Concat(written...)
	if got := nonZero(left); !slices.Equal(got, want) {
		t.Fatalf("the agent's channel has %d samples of voice, want the %d streamed in order", len(got), len(want))
	}
}

// A voice slower than real time leaves the writer short: it plays
// silence, counts the underruns, and the line still plays all of it.
func TestStreamedLineUnderrunsAreCounted(t *testing.T) {
	noLeaks(t)
	// 100 samples (12.5 ms of speech) every 20 ms, against a writer
	// taking 20 ms every 10 ms.
	voice := &fakeStreamer{samples: sampleRate / 4, delay: 20 * time.Millisecond, pieces: []int{171, 29, 100}}
	r := newLineRig(t, voice, 10*time.Millisecond)
	r.line.Say("slow", 1)
	if ev := r.next(t, 5*time.Second); ev.Kind != conversation.PlayStarted {
		t.Fatalf("event %+v", ev)
	}
	if ev := r.next(t, 10*time.Second); ev.Kind != conversation.PlayEnded || ev.Cut {
		t.Fatalf("event %+v, want the end, not cut", ev)
	}
	left := r.close(t)
	if n := r.m.underruns.Load(); n == 0 {
		t.Fatal("no underrun counted")
	}
	written, errs := voice.results()
	if len(written) != 1 || errs[0] != nil {
		t.Fatalf("streams %d, errors %v", len(written), errs)
	}
	if got := nonZero(left); !slices.Equal(got, written[0]) {
		t.Fatalf("the agent's channel has %d samples of voice, want the %d streamed", len(got), len(written[0]))
	}
	t.Logf("%d underruns", r.m.underruns.Load())
}

// A cut stops a streamed line at once, the voice's stream too (it was held
// back by the full buffer), and drops the line queued after it.
func TestStreamedLineCut(t *testing.T) {
	noLeaks(t)
	voice := &fakeStreamer{samples: 20 * sampleRate, pieces: []int{333, 4001}}
	r := newLineRig(t, voice, 5*time.Millisecond)
	r.line.Say("long", 1)
	r.line.Say("after", 2)
	if ev := r.next(t, 5*time.Second); ev.Kind != conversation.PlayStarted || ev.Tag != 1 {
		t.Fatalf("event %+v", ev)
	}
	time.Sleep(100 * time.Millisecond)
	r.line.Cut()
	ev := r.next(t, time.Second)
	if ev.Kind != conversation.PlayEnded || ev.Tag != 1 || !ev.Cut {
		t.Fatalf("event %+v, want line 1 ended cut", ev)
	}
	select {
	case ev := <-r.line.Events():
		t.Fatalf("after the cut: %+v", ev)
	case <-time.After(200 * time.Millisecond):
	}
	left := r.close(t)
	written, errs := voice.results()
	if len(written) != 1 || !errors.Is(errs[0], errStreamStopped) && !errors.Is(errs[0], context.Canceled) {
		t.Fatalf("streams %d, errors %v: want the one stream stopped", len(written), errs)
	}
	got := nonZero(left)
	if len(got) == 0 || len(got) >= len(written[0]) || !slices.Equal(got, written[0][:len(got)]) {
		t.Fatalf("the agent's channel has %d samples of voice, want a prefix of the %d written", len(got), len(written[0]))
	}
}

// The buffer holds the producer back when full, and a halt releases it.
func TestPCMStreamBackPressure(t *testing.T) {
	s := newPCMStream(1000)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := s.write(ctx, make([]int16, 1500)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("write past the bound: %v, want it held back", err)
	}
	frame := make([]int16, frameSamples)
	if n, underrun, drained := s.read(frame); n != frameSamples || underrun || drained {
		t.Fatalf("read %d %v %v", n, underrun, drained)
	}
	done := make(chan error, 1)
	go func() { done <- s.write(t.Context(), make([]int16, 5000)) }()
	time.Sleep(20 * time.Millisecond)
	s.halt()
	select {
	case err := <-done:
		if !errors.Is(err, errStreamStopped) {
			t.Fatalf("write after halt: %v", err)
		}
	case <-time.After(time.Second):
		t.Fatal("halt did not release the producer")
	}
	if n, _, drained := s.read(frame); n != 0 || !drained {
		t.Fatalf("read after halt: %d, drained %v", n, drained)
	}
}

// A partial frame is held until it is whole or the stream ends.
func TestPCMStreamUnderrunAndEnd(t *testing.T) {
	s := newPCMStream(1000)
	frame := make([]int16, frameSamples)
	if err := s.write(t.Context(), make([]int16, 100)); err != nil {
		t.Fatal(err)
	}
	if n, underrun, drained := s.read(frame); n != 0 || !underrun || drained {
		t.Fatalf("read %d %v %v, want an underrun", n, underrun, drained)
	}
	s.end()
	if n, underrun, drained := s.read(frame); n != 100 || underrun || !drained {
		t.Fatalf("read %d %v %v, want the rest and the end", n, underrun, drained)
	}
}

// The writer's side of a stream allocates nothing per frame.
func TestPCMStreamReadAllocatesNothing(t *testing.T) {
	s := newPCMStream(streamBuffer)
	m := &callMedia{}
	p := &playback{stream: s, done: make(chan struct{})}
	frame := make([]int16, frameSamples)
	piece := make([]int16, 3*frameSamples/2)
	allocs := testing.AllocsPerRun(200, func() {
		if err := s.write(t.Context(), piece); err != nil {
			t.Fatal(err)
		}
		m.fill(p, frame)
		m.fill(p, frame)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per frame", allocs)
	}
}
