package sip

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/switchboard-dev/switchboard/internal/telephony/tts"
)

var (
	promptHits = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "switchboard_tts_prompt_cache_hits_total",
		Help: "Lines without variables (greetings, say steps, prompts, voicemail messages) whose speech was found in the prompt cache, or joined while being synthesized for another call.",
	})
	promptMisses = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "switchboard_tts_prompt_cache_misses_total",
		Help: "Lines without variables synthesized for the prompt cache: one per line of each agent version, and again after eviction.",
	})
)

func init() { metrics.Registry.MustRegister(promptHits, promptMisses) }

// NewPromptCache is the cache of agents' prompts (ScriptRenderer.Prompts),
// bounded to maxSamples (tts.DefaultCacheSamples when zero), counted in
// the operator's metrics.
func NewPromptCache(maxSamples int) *tts.Cache {
	return &tts.Cache{MaxSamples: maxSamples, Hits: promptHits, Misses: promptMisses}
}
