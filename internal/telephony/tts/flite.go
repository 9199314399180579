// Package tts turns text into 8 kHz 16-bit mono speech for calls.
package tts

import (
	"cmp"
	"container/list"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/switchboard-dev/switchboard/internal/telephony/audio"
)

// SampleRate of the speech Speak returns: G.711's.
const SampleRate = audio.SampleRate

// DefaultCacheEntries bounds Flite's cache when CacheEntries is zero.
const DefaultCacheEntries = 256

// MaxTextLength is the most characters Speak says in one go: a say step,
// a prompt, a greeting or a voicemail message with the call's variables
// filled in. It is the Agent's own bound on those texts, so variables never
// make a text longer than an agent could say without them (about four
// minutes of speech, and 3.3 CPU-seconds of flite's rms voice).
const MaxTextLength = 4096

// DefaultTimeout bounds one flite run when Timeout is zero: ten times the
// CPU the longest text takes in DefaultVoice, room for a busy machine.
const DefaultTimeout = 30 * time.Second

// Speaker turns text into speech samples (SampleRate, mono).
type Speaker interface {
	Speak(ctx context.Context, text string) ([]int16, error)
}

// Streamer is a Speaker that can also hand its speech over as it is
// synthesized, so that the first words play before the whole line exists
// (a streaming server's). write is called with consecutive pieces of
// SampleRate mono PCM, which it must not keep, until the line is spoken;
// an error from write stops the stream and is returned.
type Streamer interface {
	Speaker
	Stream(ctx context.Context, text string, write func(pcm []int16) error) error
}

// DefaultVoice is the flite voice Flite speaks with when Voice is empty:
// rms, chosen by measurement (make bench-voices, hack/benchmarks.md#voices)
// over flite's other built-in voices, festival's and espeak-ng's: the
// embedded recognizer's word error rate on its speech after the telephone
// band and G.711 was a quarter of kal's (flite's own default).
const DefaultVoice = "rms"

// Flite speaks with the flite binary and its built-in voices, which write
// 16-bit mono WAV at 8 kHz (kal) or 16 kHz (the others, resampled to 8 kHz
// here). Recent results are cached (an
// agent says the same greeting on every call), and concurrent requests for
// the same text share one flite run. The zero value is ready to use.
type Flite struct {
	// Binary is the flite executable; "flite" (on PATH) when empty.
	Binary string
	// Voice is flite's -voice: one of its built-in voices (flite -lv:
	// kal, kal16, slt, rms, awb) or a .flitevox file; DefaultVoice when
	// empty.
	Voice string
	// CacheEntries bounds the cache; DefaultCacheEntries when zero.
	CacheEntries int
	// Timeout bounds one flite run, which is killed then, and the wait for
	// a run to start; DefaultTimeout when zero.
	Timeout time.Duration
	// MaxRuns bounds the flite processes running at once (each uses a
	// core); GOMAXPROCS when zero.
	MaxRuns int

	slotsOnce sync.Once
	slots     chan struct{} // one per flite process running

	mu       sync.Mutex
	cache    map[string]*list.Element // of *entry, most recent first in lru
	lru      list.List
	inflight map[string]*flight
	// onRun, when set (tests), is called before each flite run.
	onRun func()
}

type entry struct {
	key     string
	samples []int16
}

// flight is one flite run that callers of the same text wait for.
type flight struct {
	done    chan struct{}
	samples []int16
	err     error
}

// Speak returns the speech of text. The slice may be shared with other
// callers (it comes from the cache): do not modify it. Text that is only
// whitespace is silence: no samples. Text over MaxTextLength is refused.
func (f *Flite) Speak(ctx context.Context, text string) ([]int16, error) {
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	if n := utf8.RuneCountInString(text); n > MaxTextLength {
		return nil, fmt.Errorf("a text of %d characters is over the %d text-to-speech says at once", n, MaxTextLength)
	}
	key := f.voice() + "\x00" + text
	f.mu.Lock()
	if samples, ok := f.cached(key); ok {
		f.mu.Unlock()
		return samples, nil
	}
	fl, running := f.inflight[key]
	if !running {
		fl = &flight{done: make(chan struct{})}
		if f.inflight == nil {
			f.inflight = map[string]*flight{}
		}
		f.inflight[key] = fl
		// The run outlives a caller that gives up: others may wait for it.
		go f.run(context.WithoutCancel(ctx), key, text, fl)
	}
	f.mu.Unlock()
	select {
	case <-fl.done:
		return fl.samples, fl.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// run runs flite once for the flight and caches a success.
func (f *Flite) run(ctx context.Context, key, text string, fl *flight) {
	fl.samples, fl.err = f.runBounded(ctx, text)
	f.mu.Lock()
	delete(f.inflight, key)
	if fl.err == nil {
		f.store(key, fl.samples)
	}
	f.mu.Unlock()
	close(fl.done)
}

// cached returns a cached result and marks it recent; f.mu is held.
func (f *Flite) cached(key string) ([]int16, bool) {
	el, ok := f.cache[key]
	if !ok {
		return nil, false
	}
	f.lru.MoveToFront(el)
	return el.Value.(*entry).samples, true
}

// store caches a result, evicting the least recent beyond the bound; f.mu
// is held.
func (f *Flite) store(key string, samples []int16) {
	if f.cache == nil {
		f.cache = map[string]*list.Element{}
	}
	f.cache[key] = f.lru.PushFront(&entry{key: key, samples: samples})
	limit := f.CacheEntries
	if limit <= 0 {
		limit = DefaultCacheEntries
	}
	for f.lru.Len() > limit {
		oldest := f.lru.Back()
		f.lru.Remove(oldest)
		delete(f.cache, oldest.Value.(*entry).key)
	}
}

// runBounded runs flite once a run slot is free, within the timeout: calls
// prepare their scripts on goroutines of their own, so this is what keeps
// text-to-speech from taking every core.
func (f *Flite) runBounded(ctx context.Context, text string) ([]int16, error) {
	f.slotsOnce.Do(func() { f.slots = make(chan struct{}, cmp.Or(f.MaxRuns, runtime.GOMAXPROCS(0))) })
	wait := time.NewTimer(f.timeout())
	defer wait.Stop()
	select {
	case f.slots <- struct{}{}:
	case <-wait.C:
		return nil, fmt.Errorf("text-to-speech is busy: flite could not start within %s", f.timeout())
	}
	defer func() { <-f.slots }()
	ctx, cancel := context.WithTimeout(ctx, f.timeout())
	defer cancel()
	return f.synthesize(ctx, text)
}

func (f *Flite) voice() string { return cmp.Or(f.Voice, DefaultVoice) }

func (f *Flite) timeout() time.Duration {
	if f.Timeout > 0 {
		return f.Timeout
	}
	return DefaultTimeout
}

// synthesize runs flite into a temporary WAV and reads its samples. When
// ctx ends first flite is killed.
func (f *Flite) synthesize(ctx context.Context, text string) ([]int16, error) {
	dir, err := os.MkdirTemp("", "switchboard-tts-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	out := filepath.Join(dir, "speech.wav")
	bin := f.Binary
	if bin == "" {
		bin = "flite"
	}
	args := []string{"-voice", f.voice(), "-t", text, "-o", out}
	if f.onRun != nil {
		f.onRun()
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	// flite runs in a process group of its own, killed whole: a wrapper
	// script's children go too, and cannot keep the output open.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	msg, err := cmd.CombinedOutput()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, fmt.Errorf("flite did not finish within %s and was stopped", f.timeout())
	}
	if err != nil {
		return nil, fmt.Errorf("flite: %w: %s", err, strings.TrimSpace(string(msg)))
	}
	wav, err := os.Open(out)
	if err != nil {
		return nil, fmt.Errorf("flite wrote no audio: %w", err)
	}
	defer func() { _ = wav.Close() }()
	pcm, err := audio.DecodeMonoResampled(wav)
	if err != nil {
		return nil, fmt.Errorf("flite output: %w", err)
	}
	return pcm, nil
}
