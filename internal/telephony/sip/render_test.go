package sip

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/egress"
	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/engine"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/gate"
	"github.com/switchboard-dev/switchboard/internal/telephony/speech"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts/ttstest"
)

// lengthSpeaker "speaks" a text as one sample per character, so a test
// can tell which text became which audio.
type lengthSpeaker struct{}

func (lengthSpeaker) Speak(_ context.Context, text string) ([]int16, error) {
	return make([]int16, len(text)), nil
}

// A branching Agent becomes the engine's steps: ids, barge-in, input
// defaults, choices and retries with their prompts spoken; a gather of
// keyed digits stays as it was.
func TestRenderBranchingScript(t *testing.T) {
	no, one := false, int32(1)
	agent := &switchboardv1.Agent{Spec: switchboardv1.AgentSpec{Script: []switchboardv1.ScriptStep{
		{ID: "disclaimer", BargeIn: &no, Say: "This call is recorded."},
		{ID: "ask", Gather: &switchboardv1.GatherStep{Field: "confirmed", Prompt: "Keep it, {{name}}?", TimeoutSeconds: 4,
			Choices: []switchboardv1.GatherChoice{
				{Value: "yes", Phrases: []string{"yeah"}, Digits: "1", Next: "size"},
				{Value: "no", Digits: "2"},
			},
			NoMatch: &switchboardv1.GatherRetry{Prompt: "Say yes or no."},
			NoInput: &switchboardv1.GatherRetry{Retries: &one, Next: "ask"}}},
		{ID: "size", Gather: &switchboardv1.GatherStep{Field: "party_size", Capture: switchboardv1.CaptureNumber,
			Input: []switchboardv1.GatherInput{switchboardv1.GatherSpeech}, TimeoutSeconds: 5, Next: "disclaimer"}},
		{Gather: &switchboardv1.GatherStep{Field: "pin", NumDigits: 4, FinishOnKey: "#", TimeoutSeconds: 5}},
	}}}
	r := &ScriptRenderer{Speaker: lengthSpeaker{}}
	spec, err := r.Render(t.Context(), telephony.Request{Agent: agent, Variables: map[string]any{"name": "Ada"}})
	if err != nil {
		t.Fatal(err)
	}
	s := spec.Script
	if len(s) != 4 {
		t.Fatalf("%d steps, want 4", len(s))
	}
	if s[0].ID != "disclaimer" || s[0].BargeIn || len(s[0].Audio) != len("This call is recorded.") {
		t.Errorf("disclaimer %+v: want its id, no barge-in, its audio", s[0])
	}
	ask := s[1].Gather
	want := &engine.Gather{Field: "confirmed", Speech: true, Timeout: 4 * time.Second,
		Choices: []engine.Choice{{Value: "yes", Phrases: []string{"yeah"}, Digits: "1", Next: "size"}, {Value: "no", Digits: "2"}},
		NoMatch: &engine.Retry{Text: "Say yes or no.", Audio: make([]int16, len("Say yes or no.")), Retries: 2},
		NoInput: &engine.Retry{Retries: 1, Next: "ask"}}
	if !reflect.DeepEqual(ask, want) {
		t.Errorf("gather\n%+v\nwant\n%+v", ask, want)
	}
	if s[1].ID != "ask" || s[1].Text != "Keep it, Ada?" {
		t.Errorf("ask %q %q: want its id and its prompt filled", s[1].ID, s[1].Text)
	}
	size := s[2].Gather
	if !size.Speech || !size.NoKeys || size.Capture != engine.CaptureNumber || size.Next != "disclaimer" {
		t.Errorf("size %+v: want speech only, a number, next disclaimer", size)
	}
	pin := s[3].Gather
	if pin.Speech || pin.NoKeys || pin.NoBargeIn || pin.NumDigits != 4 || pin.FinishOnKey != "#" {
		t.Errorf("pin %+v: want keys alone as before, cut by the first key", pin)
	}
	if size.MinConfidence != speech.DefaultMinConfidence(engine.CaptureNumber) || size.MinConfidence == 0 {
		t.Errorf("size's confidence threshold %v, want a number's default", size.MinConfidence)
	}
}

// A gather's minConfidencePercent is the engine's threshold (0 too: take
// every answer); without it, the capture type's default.
func TestRenderConfidenceThreshold(t *testing.T) {
	zero, eighty := int32(0), int32(80)
	agent := &switchboardv1.Agent{Spec: switchboardv1.AgentSpec{Script: []switchboardv1.ScriptStep{
		{Gather: &switchboardv1.GatherStep{Capture: switchboardv1.CaptureNumber, MinConfidencePercent: &eighty}},
		{Gather: &switchboardv1.GatherStep{Capture: switchboardv1.CaptureNumber, MinConfidencePercent: &zero}},
		{Gather: &switchboardv1.GatherStep{Capture: switchboardv1.CaptureYesNo}},
	}}}
	spec, err := (&ScriptRenderer{Speaker: lengthSpeaker{}}).Render(t.Context(), telephony.Request{Agent: agent})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []float64{0.8, 0, speech.DefaultMinConfidence(engine.CaptureYesNo)} {
		if got := spec.Script[i].Gather.MinConfidence; got != want {
			t.Errorf("step %d: threshold %v, want %v", i, got, want)
		}
	}
}

// specPlacer keeps the spec of the call it places.
type specPlacer struct{ spec chan engine.CallSpec }

// Pin allows every trunk address.
func (p *specPlacer) Pin(_ context.Context, t engine.Trunk) (engine.Trunk, error) { return t, nil }

func (p *specPlacer) Place(_ context.Context, _ engine.Trunk, c engine.CallSpec) (engine.Result, error) {
	p.spec <- c
	return engine.Result{}, nil
}

type namedRecognizer string

func (n namedRecognizer) Name() string { return string(n) }
func (namedRecognizer) Recognize(context.Context, []int16, []string) (speech.Result, error) {
	return speech.Result{}, nil
}

// The call gets the recognizer that Config.Recognizer chooses for it.
func TestDialGivesTheCallItsRecognizer(t *testing.T) {
	p := &specPlacer{spec: make(chan engine.CallSpec, 1)}
	d, err := New(t.Context(), Config{Engine: p, Trunks: oneTrunk{}, Script: &ScriptRenderer{Speaker: lengthSpeaker{}},
		Backlog:  func(context.Context, string, string) ([]gate.Waiter, error) { return nil, nil },
		SpoolDir: t.TempDir(), WakeCall: (&wakes{}).wake, Log: logr.Discard(),
		Recognizer: func(req telephony.Request) speech.Recognizer { return namedRecognizer("for " + req.Namespace) }})
	if err != nil {
		t.Fatal(err)
	}
	req := scriptedCall("a")
	eventually(t, "the call goes out", func() bool { return d.Dial(t.Context(), req, time.Now()) == nil })
	spec := <-p.spec
	if spec.Recognizer == nil || spec.Recognizer.Name() != "for org" {
		t.Errorf("recognizer %v, want the one chosen for the call's organization", spec.Recognizer)
	}
}

// countingLengthSpeaker is a lengthSpeaker that counts what it said.
type countingLengthSpeaker struct {
	mu   sync.Mutex
	said map[string]int
}

func (s *countingLengthSpeaker) Speak(ctx context.Context, text string) ([]int16, error) {
	s.mu.Lock()
	if s.said == nil {
		s.said = map[string]int{}
	}
	s.said[text]++
	s.mu.Unlock()
	return lengthSpeaker{}.Speak(ctx, text)
}

// An agent's lines without variables are synthesized once for all its
// calls, until it changes; lines with variables, per call.
func TestRenderSharesPromptsAcrossCalls(t *testing.T) {
	agent := &switchboardv1.Agent{Spec: switchboardv1.AgentSpec{Greeting: "Hello.", Script: []switchboardv1.ScriptStep{
		{Say: "Hi {{name}}."},
		{Gather: &switchboardv1.GatherStep{Field: "ok", Prompt: "Is that right?", TimeoutSeconds: 4,
			NoMatch: &switchboardv1.GatherRetry{Prompt: "Say yes or no."}}},
	}, Voicemail: &switchboardv1.VoicemailSpec{Action: switchboardv1.VoicemailLeaveMessage, Message: "Call us back."}}}
	agent.Namespace, agent.Name, agent.UID, agent.Generation = "org", "a", "uid-1", 1
	s := &countingLengthSpeaker{}
	r := &ScriptRenderer{Speaker: s, Prompts: NewPromptCache(0)}
	var wg sync.WaitGroup
	for _, name := range []string{"Ada", "Bob", "Cy", "Ada"} {
		wg.Go(func() {
			spec, err := r.Render(t.Context(), telephony.Request{Agent: agent, Variables: map[string]any{"name": name}})
			if err != nil {
				t.Error(err)
				return
			}
			if spec.Script[1].Text != "Hi "+name+"." || len(spec.Voicemail.Message) != len("Call us back.") {
				t.Errorf("call of %s: %+v", name, spec)
			}
		})
	}
	wg.Wait()
	for _, line := range []string{"Hello.", "Is that right?", "Say yes or no.", "Call us back."} {
		if n := s.said[line]; n != 1 {
			t.Errorf("%q synthesized %d times, want once", line, n)
		}
	}
	if s.said["Hi Ada."] != 2 || s.said["Hi Bob."] != 1 {
		t.Errorf("the variable line: %v, want per call", s.said)
	}
	agent.Generation = 2
	if _, err := r.Render(t.Context(), telephony.Request{Agent: agent}); err != nil {
		t.Fatal(err)
	}
	if n := s.said["Hello."]; n != 2 {
		t.Errorf("after the agent changed, the greeting was synthesized %d times in all, want 2", n)
	}
}

// An agent with a voice server has its lines said by it; a line the server
// fails is said by the embedded voice and noted, the voicemail message too.
func TestRenderAgentVoice(t *testing.T) {
	voice := ttstest.New(t, ttstest.Behaviour{Length: 500 * time.Millisecond})
	agent := &switchboardv1.Agent{Spec: switchboardv1.AgentSpec{
		Voice:     &switchboardv1.AgentVoice{Server: &switchboardv1.VoiceServer{URL: voice.URL, Voice: "af_heart"}},
		Script:    []switchboardv1.ScriptStep{{Say: "Hello {{name}}."}},
		Voicemail: &switchboardv1.VoicemailSpec{Action: switchboardv1.VoicemailLeaveMessage, Message: "Call us back."}}}
	voices := &tts.Voices{Policy: egress.URLPolicy{AllowInsecure: true}, Embedded: lengthSpeaker{}}
	r := &ScriptRenderer{Speaker: lengthSpeaker{}, Voices: func(ctx context.Context, req telephony.Request) (tts.Speaker, error) {
		return voices.For(ctx, req.Namespace, req.Agent)
	}}
	req := telephony.Request{Agent: agent, Variables: map[string]any{"name": "Ada"}}
	spec, err := r.Render(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if s := spec.Script[0]; len(s.Audio) != tts.SampleRate/2 || s.Note != "" || len(spec.Voicemail.Message) != tts.SampleRate/2 {
		t.Errorf("step %d samples, note %q; voicemail %d samples: want the server's half second each", len(s.Audio), s.Note, len(spec.Voicemail.Message))
	}
	voice.Set(ttstest.Behaviour{Mode: ttstest.Status})
	if spec, err = r.Render(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	s := spec.Script[0]
	if len(s.Audio) != len("Hello Ada.") || !strings.HasPrefix(s.Note, "(said in the embedded voice: the voice server answered 500") {
		t.Errorf("step %d samples, note %q: want the embedded voice's, noted", len(s.Audio), s.Note)
	}
	if spec.Voicemail.MessageNote == "" || len(spec.Voicemail.Message) != len("Call us back.") {
		t.Errorf("voicemail %+v: want the embedded voice's, noted", spec.Voicemail)
	}
	// A missing API key Secret fails the call before it rings.
	agent.Spec.Voice.Server.APIKeySecretRef = &switchboardv1.SecretReference{Name: "tts"}
	voices.Secrets = fake.NewClientBuilder().Build()
	if _, err := r.Render(t.Context(), req); err == nil || !strings.Contains(err.Error(), "API key Secret tts") {
		t.Errorf("err %v, want the missing Secret named", err)
	}
	voices.Secrets = fake.NewClientBuilder().WithObjects(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tts"},
		Data: map[string][]byte{switchboardv1.VoiceAPIKeyKey: []byte("sk-org")}}).Build()
	if _, err := r.Render(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if reqs := voice.Requests(); reqs[len(reqs)-1].Authorization != "Bearer sk-org" {
		t.Errorf("request %+v: want the Secret's key", reqs[len(reqs)-1])
	}
}

// An agent with a voice server has its fixed lines cached too: two calls
// share one request for the greeting. A greeting the server failed (said
// in the embedded voice) is not kept: the next call asks the server again.
func TestRenderCachesServerPrompts(t *testing.T) {
	voice := ttstest.New(t, ttstest.Behaviour{Length: 500 * time.Millisecond})
	agent := &switchboardv1.Agent{Spec: switchboardv1.AgentSpec{Greeting: "Hello.",
		Voice:  &switchboardv1.AgentVoice{Server: &switchboardv1.VoiceServer{URL: voice.URL, Voice: "af_heart"}},
		Script: []switchboardv1.ScriptStep{{Say: "Hi {{name}}."}}}}
	agent.Namespace, agent.Name, agent.UID, agent.Generation = "org", "a", "uid-1", 1
	voices := &tts.Voices{Policy: egress.URLPolicy{AllowInsecure: true}, Embedded: lengthSpeaker{}}
	r := &ScriptRenderer{Speaker: lengthSpeaker{}, Prompts: NewPromptCache(0),
		Voices: func(ctx context.Context, req telephony.Request) (tts.Speaker, error) {
			return voices.For(ctx, req.Namespace, req.Agent)
		}}
	asked := func(text string) int {
		n := 0
		for _, q := range voice.Requests() {
			if q.Input == text {
				n++
			}
		}
		return n
	}
	render := func(name string) engine.CallSpec {
		t.Helper()
		spec, err := r.Render(t.Context(), telephony.Request{Agent: agent, Variables: map[string]any{"name": name}})
		if err != nil {
			t.Fatal(err)
		}
		return spec
	}
	for _, name := range []string{"Ada", "Bob"} {
		if g := render(name).Script[0]; len(g.Audio) != tts.SampleRate/2 || g.Note != "" {
			t.Errorf("greeting %d samples, note %q: want the server's", len(g.Audio), g.Note)
		}
	}
	if n := asked("Hello."); n != 1 {
		t.Errorf("the greeting was asked of the server %d times for two calls, want once", n)
	}
	if asked("Hi Ada.") != 1 || asked("Hi Bob.") != 1 {
		t.Errorf("requests %+v: want the variable line per call", voice.Requests())
	}

	agent.Generation = 2
	voice.Set(ttstest.Behaviour{Mode: ttstest.Status})
	if g := render("Ada").Script[0]; len(g.Audio) != len("Hello.") || g.Note == "" {
		t.Errorf("greeting %d samples, note %q: want the embedded voice's, noted", len(g.Audio), g.Note)
	}
	voice.Set(ttstest.Behaviour{Length: 500 * time.Millisecond})
	if g := render("Ada").Script[0]; len(g.Audio) != tts.SampleRate/2 || g.Note != "" {
		t.Errorf("after the server recovered, greeting %d samples, note %q: want the server's (the fallback not kept)", len(g.Audio), g.Note)
	}
	if n := asked("Hello."); n != 3 {
		t.Errorf("the greeting was asked %d times in all, want 3 (the failed one asked again)", n)
	}
	if g := render("Bob").Script[0]; g.Note != "" || asked("Hello.") != 3 {
		t.Errorf("note %q, %d requests: want the recovered greeting kept", g.Note, asked("Hello."))
	}
}
