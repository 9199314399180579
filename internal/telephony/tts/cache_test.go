package tts

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// countingSpeaker says a text as one sample per character, after delay,
// counting its runs; release, when set, holds each run until closed.
type countingSpeaker struct {
	runs      atomic.Int32
	cancelled atomic.Int32
	release   chan struct{}
}

func (s *countingSpeaker) Speak(ctx context.Context, text string) ([]int16, error) {
	s.runs.Add(1)
	if s.release != nil {
		select {
		case <-s.release:
		case <-ctx.Done():
			s.cancelled.Add(1)
			return nil, ctx.Err()
		}
	}
	return make([]int16, len(text)), nil
}

func TestCacheHitsAndIdentities(t *testing.T) {
	hits := prometheus.NewCounter(prometheus.CounterOpts{Name: "hits"})
	misses := prometheus.NewCounter(prometheus.CounterOpts{Name: "misses"})
	c := &Cache{Hits: hits, Misses: misses}
	s := &countingSpeaker{}
	a, b := c.Voice("ns/a@1", s), c.Voice("ns/b@1", s)
	for range 3 {
		if pcm, err := a.Speak(t.Context(), "hello"); err != nil || len(pcm) != 5 {
			t.Fatalf("Speak: %d %v", len(pcm), err)
		}
	}
	if _, err := b.Speak(t.Context(), "hello"); err != nil {
		t.Fatal(err)
	}
	if n := s.runs.Load(); n != 2 {
		t.Fatalf("%d syntheses, want one per identity", n)
	}
	if h, m := testutil.ToFloat64(hits), testutil.ToFloat64(misses); h != 2 || m != 2 {
		t.Fatalf("hits %v misses %v, want 2 and 2", h, m)
	}
}

func TestCacheBoundedLRU(t *testing.T) {
	c := &Cache{MaxSamples: 10}
	s := &countingSpeaker{}
	v := c.Voice("v", s)
	for _, text := range []string{"aaaa", "bbbb", "aaaa", "cccc", "way too long a line"} {
		if _, err := v.Speak(t.Context(), text); err != nil {
			t.Fatal(err)
		}
	}
	// "bbbb" was the least recent when "cccc" came; the long line is not
	// kept.
	if lines, samples := c.Len(); lines != 2 || samples != 8 {
		t.Fatalf("held %d lines, %d samples; want aaaa and cccc", lines, samples)
	}
	runs := s.runs.Load()
	_, _ = v.Speak(t.Context(), "aaaa")
	_, _ = v.Speak(t.Context(), "cccc")
	if s.runs.Load() != runs {
		t.Fatal("aaaa or cccc was synthesized again")
	}
	_, _ = v.Speak(t.Context(), "bbbb")
	if s.runs.Load() != runs+1 {
		t.Fatal("bbbb was kept")
	}
}

func TestCacheSharesOneSynthesis(t *testing.T) {
	c := &Cache{}
	s := &countingSpeaker{release: make(chan struct{})}
	v := c.Voice("v", s)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			_, err := v.Speak(t.Context(), "greeting")
			errs <- err
		})
	}
	// One caller gives up meanwhile: the others still get the line.
	quitter, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if _, err := v.Speak(quitter, "greeting"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the caller that gave up: %v", err)
	}
	close(s.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := s.runs.Load(); n != 1 {
		t.Fatalf("%d syntheses, want one", n)
	}
}

func TestCacheCancelsWhenEveryCallerLeft(t *testing.T) {
	c := &Cache{}
	s := &countingSpeaker{release: make(chan struct{})}
	v := c.Voice("v", s)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if _, err := v.Speak(ctx, "greeting"); err == nil {
		t.Fatal("want the caller's deadline")
	}
	deadline := time.Now().Add(time.Second)
	for s.cancelled.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if s.cancelled.Load() != 1 {
		t.Fatal("the synthesis went on with no one waiting")
	}
	close(s.release)
	if _, err := v.Speak(t.Context(), "greeting"); err != nil {
		t.Fatalf("a later caller: %v", err)
	}
}
