package tts

import (
	"container/list"
	"context"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultCacheSamples bounds a Cache when MaxSamples is zero: ten minutes
// of speech (9.6 MB), the prompts of a few hundred agents.
const DefaultCacheSamples = 10 * 60 * SampleRate

// Cache keeps the speech of lines that are the same on every call (an
// agent's greeting, say steps and prompts without variables), so that
// they are synthesized once per agent version and shared by all its
// calls. A line is known by its voice's identity, a string the caller
// gives (the agent, its version and its voice's settings), and its text.
// The cache is bounded by the samples it holds, the least recently used
// line leaving first; a line longer than the bound is not kept. Concurrent
// requests for the same line share one synthesis. The zero value is ready
// to use.
//
// A line a voice server failed and the embedded voice said instead (a
// FallbackError from SpeakNoting) is returned, with its FallbackError, to
// the callers of that synthesis but not kept: the next caller asks the
// server again.
type Cache struct {
	// MaxSamples bounds the samples held; DefaultCacheSamples when zero.
	MaxSamples int
	// Hits counts the lines found (or joined while being synthesized) and
	// Misses those synthesized, when set.
	Hits, Misses prometheus.Counter

	mu       sync.Mutex
	entries  map[string]*list.Element // of *entry, most recent first in lru
	lru      list.List
	samples  int
	inflight map[string]*cacheFlight
}

// cacheFlight is one synthesis the callers of the same line wait for; it
// is cancelled when every one of them gave up.
type cacheFlight struct {
	done     chan struct{}
	samples  []int16
	fallback *FallbackError
	err      error
	waiters  int
	cancel   context.CancelFunc
}

// Voice is s with its lines cached under identity: two voices given the
// same identity must say the same text the same way.
func (c *Cache) Voice(identity string, s Speaker) Speaker {
	return cachedVoice{c: c, id: identity, s: s}
}

type cachedVoice struct {
	c  *Cache
	id string
	s  Speaker
}

// Speak returns the line's speech, from the cache when it is there. The
// slice is shared: do not modify it.
func (v cachedVoice) Speak(ctx context.Context, text string) ([]int16, error) {
	pcm, _, err := v.c.speak(ctx, v.id, v.s, text)
	return pcm, err
}

// speakNoting is Speak that also says whether the line fell back (for
// SpeakNoting): a line found in the cache never did.
func (v cachedVoice) speakNoting(ctx context.Context, text string) ([]int16, *FallbackError, error) {
	return v.c.speak(ctx, v.id, v.s, text)
}

func (c *Cache) speak(ctx context.Context, id string, s Speaker, text string) ([]int16, *FallbackError, error) {
	key := id + "\x00" + text
	c.mu.Lock()
	if el, ok := c.entries[key]; ok {
		c.lru.MoveToFront(el)
		c.mu.Unlock()
		count(c.Hits)
		return el.Value.(*entry).samples, nil, nil
	}
	fl, running := c.inflight[key]
	if running {
		count(c.Hits)
	} else {
		count(c.Misses)
		var fctx context.Context
		fl = &cacheFlight{done: make(chan struct{})}
		// The synthesis outlives a caller that gives up while others
		// wait for it; the last one to leave cancels it.
		fctx, fl.cancel = context.WithCancel(context.WithoutCancel(ctx))
		if c.inflight == nil {
			c.inflight = map[string]*cacheFlight{}
		}
		c.inflight[key] = fl
		go c.run(fctx, key, s, text, fl)
	}
	fl.waiters++
	c.mu.Unlock()
	select {
	case <-fl.done:
		return fl.samples, fl.fallback, fl.err
	case <-ctx.Done():
		c.mu.Lock()
		fl.waiters--
		if fl.waiters == 0 {
			fl.cancel()
			if c.inflight[key] == fl {
				delete(c.inflight, key) // the next caller starts afresh
			}
		}
		c.mu.Unlock()
		return nil, nil, ctx.Err()
	}
}

func count(c prometheus.Counter) {
	if c != nil {
		c.Inc()
	}
}

// run synthesizes a line once for its flight and keeps a success the
// voice said itself (not a fallback).
func (c *Cache) run(ctx context.Context, key string, s Speaker, text string, fl *cacheFlight) {
	fl.samples, fl.fallback, fl.err = SpeakNoting(ctx, s, text)
	fl.cancel()
	c.mu.Lock()
	if c.inflight[key] == fl {
		delete(c.inflight, key)
		if fl.err == nil && fl.fallback == nil {
			c.store(key, fl.samples)
		}
	}
	c.mu.Unlock()
	close(fl.done)
}

// store keeps a line, evicting the least recent beyond the bound; c.mu is
// held.
func (c *Cache) store(key string, samples []int16) {
	limit := c.MaxSamples
	if limit <= 0 {
		limit = DefaultCacheSamples
	}
	if len(samples) > limit {
		return
	}
	for c.samples+len(samples) > limit {
		oldest := c.lru.Back()
		e := oldest.Value.(*entry)
		c.lru.Remove(oldest)
		delete(c.entries, e.key)
		c.samples -= len(e.samples)
	}
	if c.entries == nil {
		c.entries = map[string]*list.Element{}
	}
	c.entries[key] = c.lru.PushFront(&entry{key: key, samples: samples})
	c.samples += len(samples)
}

// Len is how many lines and samples the cache holds.
func (c *Cache) Len() (lines, samples int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len(), c.samples
}
