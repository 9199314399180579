package sip

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/conversation"
	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/amd"
	"github.com/switchboard-dev/switchboard/internal/telephony/audio"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/engine"
	"github.com/switchboard-dev/switchboard/internal/telephony/speech"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts"
)

// DefaultMaxDuration bounds a connected call whose agent sets no
// maxDurationSeconds (the CRD defaults it to the same).
const DefaultMaxDuration = time.Hour

// DefaultRenderTimeout bounds the preparation of one call's script when
// ScriptRenderer.Timeout is zero.
const DefaultRenderTimeout = time.Minute

// ScriptRenderer turns an Agent's script into the audio the engine plays:
// say steps and prompts through text-to-speech with the call's variables
// filled in, play steps from ConfigMaps.
type ScriptRenderer struct {
	// Speaker is the embedded voice.
	Speaker tts.Speaker
	// Voices, when set, gives the call's agent its voice (tts.Voices.For:
	// its voice server's, else the embedded one) for all its lines; nil
	// says them all with Speaker.
	Voices func(ctx context.Context, req telephony.Request) (tts.Speaker, error)
	// ConfigMaps reads the audio of play steps (a live reader: the
	// manager caches no ConfigMaps, and may only get them in organization
	// namespaces, per config/rbac/organization_role.yaml).
	ConfigMaps client.Reader
	// Timeout bounds the preparation of one call's script, all its steps;
	// DefaultRenderTimeout when zero.
	Timeout time.Duration
	// Streams builds the stream of agents that stream to a bot.
	Streams StreamSource
	// Conversations builds the conversation of agents that converse with
	// the organization's model; nil refuses those calls.
	Conversations ConversationSource
	// Prompts keeps the speech of the lines without variables (say
	// steps, prompts, the greeting, the voicemail message), synthesized
	// once per agent version and shared by all its calls; nil synthesizes
	// every line per call. Lines with variables are synthesized per call.
	//
	// The speaker's own cache (tts.Flite's) stays: it is what makes
	// concurrent runs of one text share a flite process, and it serves the
	// lines said again outside scripts (a conversation's fallback line).
	// A prompt is not held twice: the Cache keeps the very slice the
	// speaker returned, so a line in both costs one copy of its samples.
	Prompts *tts.Cache
}

// ConversationSource builds a call's conversation from its agent
// (engines.Source).
type ConversationSource interface {
	For(ctx context.Context, req telephony.Request) (conversation.Opener, conversation.Config, conversation.CallDetails, error)
}

// Render prepares the call's script, voicemail behaviour and limits. A
// script that cannot be prepared (a missing ConfigMap, text-to-speech
// failing or not done within the timeout) fails the call with
// dispatch_failed and says why.
func (r *ScriptRenderer) Render(ctx context.Context, req telephony.Request) (engine.CallSpec, error) {
	spec := engine.CallSpec{MaxDuration: DefaultMaxDuration}
	agent := req.Agent
	if agent == nil {
		return spec, nil
	}
	timeout := cmp.Or(r.Timeout, DefaultRenderTimeout)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if r.Voices != nil {
		voice, err := r.Voices(ctx, req)
		if err != nil {
			return spec, scriptError(err)
		}
		withVoice := *r
		withVoice.Speaker = voice
		r = &withVoice
	}
	spec, err := r.render(ctx, spec, req)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("not ready within %s (%w)", timeout, err)
	}
	if err != nil {
		return spec, scriptError(err)
	}
	return spec, nil
}

func (r *ScriptRenderer) render(ctx context.Context, spec engine.CallSpec, req telephony.Request) (engine.CallSpec, error) {
	agent := req.Agent
	if agent.Spec.MaxDurationSeconds > 0 {
		spec.MaxDuration = time.Duration(agent.Spec.MaxDurationSeconds) * time.Second
	}
	var err error
	if agent.Spec.Stream != nil {
		if spec.Stream, err = r.Streams.Config(ctx, req); err != nil {
			return spec, err
		}
	} else if agent.Spec.Conversation != nil {
		if spec.Conversation, err = r.conversation(ctx, req); err != nil {
			return spec, err
		}
	} else if spec.Script, err = r.steps(ctx, req, agent); err != nil {
		return spec, err
	}
	spec.Headers = sipHeaders(agent.Spec.SIPHeaders, req.SIPHeaders)
	if vm := agent.Spec.Voicemail; vm != nil {
		l := r.lines(req)
		params := amdParams(agent.Spec.AnsweringMachineDetection)
		spec.AMD = &params
		spec.Voicemail.LeaveMessage = vm.Action == switchboardv1.VoicemailLeaveMessage
		if spec.Voicemail.LeaveMessage {
			said, err := l.say(ctx, vm.Message)
			if err != nil {
				return spec, fmt.Errorf("voicemail message: %w", err)
			}
			spec.Voicemail.MessageText, spec.Voicemail.Message, spec.Voicemail.MessageNote = said.Text, said.Audio, said.Note
		}
	}
	return spec, nil
}

// conversation prepares the call's conversation: its engine is opened
// when the call is answered, and the answers are spoken in the agent's
// voice.
func (r *ScriptRenderer) conversation(ctx context.Context, req telephony.Request) (*engine.Conversation, error) {
	if r.Conversations == nil {
		return nil, errors.New("conversations are not enabled on this operator")
	}
	open, cfg, details, err := r.Conversations.For(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("conversation: %w", err)
	}
	transfer, err := r.ConversationTransfer(ctx, req)
	if err != nil {
		return nil, err
	}
	return &engine.Conversation{Open: open, Config: cfg, Call: details, Voice: r.Speaker, Transfer: transfer}, nil
}

func scriptError(err error) error {
	return &telephony.DispatchError{Code: telephony.CodeDispatchFailed,
		Reason: "the agent's script could not be prepared: " + err.Error()}
}

// steps renders the greeting (said first, when set) and the script.
func (r *ScriptRenderer) steps(ctx context.Context, req telephony.Request, agent *switchboardv1.Agent) ([]engine.Step, error) {
	var steps []engine.Step
	l := r.lines(req)
	if agent.Spec.Greeting != "" {
		s, err := l.say(ctx, agent.Spec.Greeting)
		if err != nil {
			return nil, fmt.Errorf("greeting: %w", err)
		}
		steps = append(steps, s)
	}
	for i, st := range agent.Spec.Script {
		s, err := r.step(ctx, req.Namespace, st, l)
		if err != nil {
			return nil, fmt.Errorf("step %d: %w", i+1, err)
		}
		steps = append(steps, s)
	}
	return steps, nil
}

func (r *ScriptRenderer) step(ctx context.Context, ns string, st switchboardv1.ScriptStep, l lines) (engine.Step, error) {
	s, err := r.action(ctx, ns, st, l)
	s.ID = st.ID
	if st.BargeIn != nil {
		s.BargeIn = *st.BargeIn
		if s.Gather != nil {
			s.Gather.NoBargeIn = !*st.BargeIn
		}
	}
	return s, err
}

func (r *ScriptRenderer) action(ctx context.Context, ns string, st switchboardv1.ScriptStep, l lines) (engine.Step, error) {
	switch {
	case st.Say != "":
		return l.say(ctx, st.Say)
	case st.Play != nil:
		ref := st.Play.ConfigMapKeyRef
		audio, err := r.audio(ctx, ns, ref)
		return engine.Step{Text: fmt.Sprintf("(plays %s/%s)", ref.Name, ref.Key), Audio: audio}, err
	case st.Gather != nil:
		return r.gather(ctx, st.Gather, l)
	case st.Transfer != nil:
		return r.transferStep(ctx, st.Transfer, l)
	case st.Hangup != nil:
		return engine.Step{Hangup: true}, nil
	case st.PressDigits != nil:
		return pressDigits(st.PressDigits), nil
	}
	return engine.Step{}, fmt.Errorf("empty step")
}

// gather renders a gather step: its prompts spoken, its input and choices
// as the engine takes them.
func (r *ScriptRenderer) gather(ctx context.Context, g *switchboardv1.GatherStep, l lines) (engine.Step, error) {
	eg := &engine.Gather{Field: g.Field, NumDigits: int(g.NumDigits), FinishOnKey: g.FinishOnKey,
		Timeout: time.Duration(max(g.TimeoutSeconds, 1)) * time.Second, Capture: string(g.Capture), Next: g.Next}
	keys, listen := g.Inputs()
	eg.Speech, eg.NoKeys = listen, !keys
	eg.MinConfidence = speech.DefaultMinConfidence(string(g.Capture))
	if g.MinConfidencePercent != nil {
		eg.MinConfidence = float64(*g.MinConfidencePercent) / 100
	}
	for _, c := range g.Choices {
		eg.Choices = append(eg.Choices, engine.Choice{Value: c.Value, Phrases: c.Phrases, Digits: c.Digits, Next: c.Next})
	}
	var err error
	if eg.NoInput, err = r.retry(ctx, g.NoInput, l); err != nil {
		return engine.Step{}, fmt.Errorf("noInput: %w", err)
	}
	if eg.NoMatch, err = r.retry(ctx, g.NoMatch, l); err != nil {
		return engine.Step{}, fmt.Errorf("noMatch: %w", err)
	}
	s := engine.Step{Gather: eg}
	if g.Prompt == "" {
		return s, nil
	}
	said, err := l.say(ctx, g.Prompt)
	s.Text, s.Audio, s.Note = said.Text, said.Audio, said.Note
	return s, err
}

// retry renders a noInput or noMatch: its prompt spoken, its retries
// (defaulted as the CRD does, for objects stored before the default).
func (r *ScriptRenderer) retry(ctx context.Context, rt *switchboardv1.GatherRetry, l lines) (*engine.Retry, error) {
	if rt == nil {
		return nil, nil
	}
	out := &engine.Retry{Retries: rt.Tries(), Next: rt.Next}
	if rt.Prompt != "" {
		said, err := l.say(ctx, rt.Prompt)
		if err != nil {
			return nil, err
		}
		out.Text, out.Audio, out.Note = said.Text, said.Audio, said.Note
	}
	return out, nil
}

// lines is how a call's lines are spoken: those with variables filled in
// by the call's own voice, those without by the agent's shared voice (its
// prompts cached, when the renderer has a cache).
type lines struct {
	vars   map[string]any
	call   tts.Speaker
	shared tts.Speaker
}

// lines returns the voices of req's lines. The renderer runs when the
// call is dialed, before it is placed (Dialer.run renders, then places):
// the prompts of an agent are ready, and shared, before its first call
// connects.
//
// An agent with a voice server has its prompts cached too (the identity
// holds the server's settings): a line the server failed, said in the
// embedded voice, is not kept (tts.Cache), so a later call asks the
// server again rather than repeat the fallback.
func (r *ScriptRenderer) lines(req telephony.Request) lines {
	l := lines{vars: req.Variables, call: r.Speaker, shared: r.Speaker}
	if r.Prompts != nil && req.Agent != nil {
		l.shared = r.Prompts.Voice(voiceIdentity(req.Agent), r.Speaker)
	}
	return l
}

// voiceIdentity names the agent version whose prompts a cached line is:
// its UID (an agent deleted and created again under its name is another),
// its generation (any change to its spec, its lines and voice included, is
// a new one) and its voice's settings.
func voiceIdentity(a *switchboardv1.Agent) string {
	id := fmt.Sprintf("%s/%s/%s@%d", a.Namespace, a.Name, a.UID, a.Generation)
	if v := a.Spec.Voice; v != nil && v.Server != nil {
		s := v.Server
		id += fmt.Sprintf(" server=%s model=%s voice=%s speed=%s", s.URL, s.Model, s.Voice, s.Speed)
	}
	return id
}

// say renders one line: with its variables filled in, per call, or, when
// it has none, in the agent's shared voice.
func (l lines) say(ctx context.Context, text string) (engine.Step, error) {
	voice := l.shared
	if len(tts.Placeholders(text)) > 0 {
		voice = l.call
	}
	filled := tts.Fill(text, l.vars)
	audio, fallback, err := tts.SpeakNoting(ctx, voice, filled)
	if err != nil {
		return engine.Step{}, fmt.Errorf("text-to-speech: %w", err)
	}
	s := engine.Step{Text: filled, Audio: audio}
	if fallback != nil {
		s.Note = "(said in the embedded voice: " + fallback.Error() + ")"
	}
	return s, nil
}

// audio reads a WAV from a ConfigMap key (binaryData, else data).
func (r *ScriptRenderer) audio(ctx context.Context, ns string, ref switchboardv1.ConfigMapKeyReference) ([]int16, error) {
	var cm corev1.ConfigMap
	if err := r.ConfigMaps.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, &cm); err != nil {
		return nil, fmt.Errorf("ConfigMap %s: %w", ref.Name, err)
	}
	raw, ok := cm.BinaryData[ref.Key]
	if !ok {
		s, ok := cm.Data[ref.Key]
		if !ok {
			return nil, fmt.Errorf("ConfigMap %s has no key %q", ref.Name, ref.Key)
		}
		raw = []byte(s)
	}
	pcm, err := audio.DecodeMono(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("ConfigMap %s key %s: %w", ref.Name, ref.Key, err)
	}
	return pcm, nil
}

// amdParams are the detector's defaults overridden by the Agent's.
func amdParams(s *switchboardv1.AMDSpec) amd.Params {
	p := amd.DefaultParams()
	if s == nil {
		return p
	}
	ms := func(dst *time.Duration, v *int32) {
		if v != nil {
			*dst = time.Duration(*v) * time.Millisecond
		}
	}
	ms(&p.InitialSilence, s.InitialSilenceMS)
	ms(&p.Greeting, s.GreetingMS)
	ms(&p.AfterGreetingSilence, s.AfterGreetingSilenceMS)
	ms(&p.TotalAnalysisTime, s.TotalAnalysisTimeMS)
	ms(&p.MinWordLength, s.MinWordLengthMS)
	ms(&p.BetweenWordsSilence, s.BetweenWordsSilenceMS)
	ms(&p.MaximumWordLength, s.MaximumWordLengthMS)
	if s.MaximumNumberOfWords != nil {
		p.MaximumNumberOfWords = int(*s.MaximumNumberOfWords)
	}
	if s.SilenceThreshold != nil {
		p.SilenceThreshold = int(*s.SilenceThreshold)
	}
	return p
}
