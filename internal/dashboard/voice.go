package dashboard

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony/audio"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts"
)

// maxVoiceSamples bounds the voice samples kept: one per agent shown.
const maxVoiceSamples = 256

// AgentVoices gives an agent its voice: *tts.Voices is one (the agent's
// voice server, falling back to the embedded voice).
type AgentVoices interface {
	For(ctx context.Context, ns string, agent *switchboardv1.Agent) (tts.Speaker, error)
}

// voiceSamples keeps each agent's sample, a WAV of its line, so that
// playing it again costs nothing, and renders one sample at a time, so
// that the dashboard takes at most one core of speech synthesis however
// many agents' samples are asked for at once.
type voiceSamples struct {
	render chan struct{} // holds one token while a sample renders
	mu     sync.Mutex
	wavs   map[string][]byte // by sampleKey
}

func newVoiceSamples() *voiceSamples {
	return &voiceSamples{render: make(chan struct{}, 1), wavs: map[string][]byte{}}
}

func (v *voiceSamples) cached(key string) ([]byte, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	wav, ok := v.wavs[key]
	return wav, ok
}

// sampleKey is what a sample is kept by: the agent (its uid, unique across
// organizations) at its generation, so that a changed voice is heard.
func sampleKey(agent *switchboardv1.Agent) string {
	return string(agent.UID) + "/" + strconv.FormatInt(agent.Generation, 10)
}

// voiceSample returns the WAV of the agent's sample, rendering it when it
// is not kept yet, and whether it is kept: a sample the agent's voice
// server failed (said in the embedded voice instead) is not, so that the
// server's is heard once it answers again.
func (d *dashboard) voiceSample(ctx context.Context, agent *switchboardv1.Agent) ([]byte, bool, error) {
	v, key := d.samples, sampleKey(agent)
	if wav, ok := v.cached(key); ok {
		return wav, true, nil
	}
	select {
	case v.render <- struct{}{}:
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	defer func() { <-v.render }()
	if wav, ok := v.cached(key); ok { // rendered while this request waited
		return wav, true, nil
	}
	voice, own := d.voiceOf(ctx, agent)
	pcm, fell, err := tts.SpeakNoting(ctx, voice, voiceSampleLine(agent.Name))
	if err != nil {
		return nil, false, err
	}
	wav := audio.Mono(pcm)
	if !own || fell != nil {
		if fell != nil {
			d.cfg.Log.Info("the agent's voice server failed its sample: played in the embedded voice",
				"namespace", agent.Namespace, "agent", agent.Name, "reason", fell.Reason, "error", fell.Error())
		}
		return wav, false, nil
	}
	v.mu.Lock()
	if len(v.wavs) >= maxVoiceSamples {
		clear(v.wavs)
	}
	v.wavs[key] = wav
	v.mu.Unlock()
	return wav, true, nil
}

// voiceOf is the agent's voice, and false when it should have another
// one but that cannot be had now (its API key Secret is missing, say):
// the embedded voice, then.
func (d *dashboard) voiceOf(ctx context.Context, agent *switchboardv1.Agent) (tts.Speaker, bool) {
	if d.cfg.Voices == nil {
		return d.cfg.Voice, true
	}
	voice, err := d.cfg.Voices.For(ctx, agent.Namespace, agent)
	if err != nil {
		d.cfg.Log.Info("the agent's voice could not be had: its sample plays in the embedded voice",
			"namespace", agent.Namespace, "agent", agent.Name, "error", err.Error())
		return d.cfg.Voice, false
	}
	return voice, true
}

// voiceSampleLine is what an agent's sample says.
func voiceSampleLine(agent string) string { return "Hello, this is " + agent + "." }

// voiceSamplePath is where the agents page loads an agent's sample from;
// the generation in the query makes a browser fetch a changed voice
// rather than play the one it keeps.
func voiceSamplePath(agent *switchboardv1.Agent) string {
	return Prefix + "/agents/" + url.PathEscape(agent.Name) + "/voice.wav?v=" + strconv.FormatInt(agent.Generation, 10)
}

// agentVoice plays a sample of an agent's voice: its voice server's, or
// the embedded voice, saying "Hello, this is <agent>." as a WAV, for the
// signed-in organization's agents only (another's is not found).
func (d *dashboard) agentVoice(w http.ResponseWriter, r *http.Request) {
	if d.cfg.Voice == nil {
		d.problem(w, r, http.StatusNotFound, "This dashboard has no voice to play samples with.")
		return
	}
	var agent switchboardv1.Agent
	key := client.ObjectKey{Namespace: organization(r.Context()), Name: chi.URLParam(r, "agent")}
	if err := d.cfg.Cache.Get(r.Context(), key, &agent); apierrors.IsNotFound(err) {
		d.problem(w, r, http.StatusNotFound, "There is no such agent in your organization.")
		return
	} else if err != nil {
		d.unavailable(w, r, err, "The agent could not be read")
		return
	}
	wav, kept, err := d.voiceSample(r.Context(), &agent)
	if err != nil {
		d.unavailable(w, r, err, "The voice sample could not be rendered")
		return
	}
	w.Header().Set("Content-Type", "audio/wav")
	if kept {
		w.Header().Set("Cache-Control", "private, max-age=3600")
	} else {
		w.Header().Set("Cache-Control", "no-store")
	}
	http.ServeContent(w, r, "voice.wav", time.Time{}, bytes.NewReader(wav))
}
