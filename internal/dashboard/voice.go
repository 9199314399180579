package dashboard

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony/audio"
)

// maxVoiceSamples bounds the voice samples kept: one per agent shown.
const maxVoiceSamples = 256

// voiceSamples keeps each agent's sample, a WAV of its line, so that
// playing it again costs nothing, and renders one sample at a time, so
// that the dashboard takes at most one core of speech synthesis however
// many agents' samples are asked for at once.
type voiceSamples struct {
	render chan struct{} // holds one token while a sample renders
	mu     sync.Mutex
	wavs   map[string][]byte // by text
}

func newVoiceSamples() *voiceSamples {
	return &voiceSamples{render: make(chan struct{}, 1), wavs: map[string][]byte{}}
}

func (v *voiceSamples) cached(text string) ([]byte, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	wav, ok := v.wavs[text]
	return wav, ok
}

// voiceSample returns the WAV of text, rendering it when it is not kept yet.
func (d *dashboard) voiceSample(ctx context.Context, text string) ([]byte, error) {
	v := d.samples
	if wav, ok := v.cached(text); ok {
		return wav, nil
	}
	select {
	case v.render <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-v.render }()
	if wav, ok := v.cached(text); ok { // rendered while this request waited
		return wav, nil
	}
	pcm, err := d.cfg.Voice.Speak(ctx, text)
	if err != nil {
		return nil, err
	}
	wav := audio.Mono(pcm)
	v.mu.Lock()
	if len(v.wavs) >= maxVoiceSamples {
		clear(v.wavs)
	}
	v.wavs[text] = wav
	v.mu.Unlock()
	return wav, nil
}

// voiceSampleLine is what an agent's sample says.
func voiceSampleLine(agent string) string { return "Hello, this is " + agent + "." }

// voiceSamplePath is where the agents page loads an agent's sample from.
func voiceSamplePath(agent string) string {
	return Prefix + "/agents/" + url.PathEscape(agent) + "/voice.wav"
}

// agentVoice plays a sample of an agent's voice: the embedded voice
// saying "Hello, this is <agent>." as a WAV, for the signed-in
// organization's agents only (another's is not found).
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
	wav, err := d.voiceSample(r.Context(), voiceSampleLine(agent.Name))
	if err != nil {
		d.unavailable(w, r, err, "The voice sample could not be rendered")
		return
	}
	w.Header().Set("Content-Type", "audio/wav")
	w.Header().Set("Cache-Control", "private, max-age=3600")
	http.ServeContent(w, r, "voice.wav", time.Time{}, bytes.NewReader(wav))
}
