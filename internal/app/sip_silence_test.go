package app_test

// Issue 36: silence is not "no". A callee who says nothing, or nothing a
// gather step can take, leaves the step's field null, whatever its type,
// on real SIP calls through the REST API.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/siptest"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts"
)

// unansweredScript asks one field of each kind by a gather step that
// listens for a second and does not ask again: choices for a string and
// for a boolean, and each kind of capture a field can take.
func unansweredScript(s *switchboardv1.AgentSpec) {
	s.ExtractedData = []switchboardv1.ExtractedDataField{
		{Name: "department", Type: switchboardv1.ExtractedString},
		{Name: "confirmed", Type: switchboardv1.ExtractedBoolean},
		{Name: "attending", Type: switchboardv1.ExtractedBoolean},
		{Name: "party_size", Type: switchboardv1.ExtractedNumber},
		{Name: "booking_date", Type: switchboardv1.ExtractedString},
		{Name: "customer_name", Type: switchboardv1.ExtractedString},
	}
	once := func() *switchboardv1.GatherRetry { return &switchboardv1.GatherRetry{Retries: ptr.To[int32](0)} }
	ask := func(field, prompt string, g switchboardv1.GatherStep) switchboardv1.ScriptStep {
		g.Field, g.Prompt, g.TimeoutSeconds, g.NoInput, g.NoMatch = field, prompt, 1, once(), once()
		return switchboardv1.ScriptStep{Gather: &g}
	}
	s.Script = []switchboardv1.ScriptStep{
		ask("department", "Sales or support?", switchboardv1.GatherStep{
			Choices: []switchboardv1.GatherChoice{{Value: "sales", Digits: "1"}, {Value: "support", Digits: "2"}}}),
		ask("confirmed", "Shall we keep it?", switchboardv1.GatherStep{
			Choices: []switchboardv1.GatherChoice{{Value: "yes", Digits: "1"}, {Value: "no", Digits: "2"}}}),
		ask("attending", "Will you come?", switchboardv1.GatherStep{Capture: switchboardv1.CaptureYesNo}),
		ask("party_size", "How many?", switchboardv1.GatherStep{Capture: switchboardv1.CaptureNumber}),
		ask("booking_date", "Which day?", switchboardv1.GatherStep{Capture: switchboardv1.CaptureDate}),
		ask("customer_name", "Your name?", switchboardv1.GatherStep{Capture: switchboardv1.CaptureText}),
		{Say: "Goodbye."},
	}
}

// waitLongAnalyzed waits for the call's analysis (the script takes longer
// than waitAnalyzed allows) and returns the call.
func (o *org) waitLongAnalyzed(t *testing.T, id string) map[string]any {
	t.Helper()
	var call map[string]any
	NewWithT(t).Eventually(func() any {
		call = o.getCall(t, id)
		return call["analysis"]
	}, 90*time.Second, 100*time.Millisecond).ShouldNot(BeNil(), "call %s never analyzed", id)
	return call
}

// placedTranscript is the call's transcript, checked to place every
// utterance on the call's timeline (the dashboard's player seeks there).
func placedTranscript(t *testing.T, o *org, id string) []any {
	t.Helper()
	g := NewWithT(t)
	r := do(t, "GET", "/v1/calls/"+id+"/transcript", o.key, nil)
	g.Expect(r.status).To(Equal(http.StatusOK), string(r.raw))
	utterances := r.body["transcript_object"].([]any)
	for _, u := range utterances {
		u := u.(map[string]any)
		g.Expect(u["start"]).NotTo(BeNil(), "utterance %v has no start", u)
		g.Expect(u["end"]).NotTo(BeNil(), "utterance %v has no end", u)
		start, end := u["start"].(float64), u["end"].(float64)
		g.Expect(end).To(BeNumerically(">=", start), "utterance %v ends before it starts", u)
	}
	return utterances
}

// The callee answers and says nothing: every gather runs noInput, and
// every field is null. The transcript's "(no answer)" was read as speech:
// the choice "no", confirmed false.
func TestSIPSilentCalleeLeavesEveryFieldNull(t *testing.T) {
	g := NewWithT(t)
	callee := siptest.StartBaresip(t, "+14155550123", make([]int16, 90*8000))
	o := sipOrg(t, callee.Addr, nil, unansweredScript)
	id := o.createCall(t, "+14155550123", nil)
	call := o.waitLongAnalyzed(t, id)
	g.Expect(call).To(HaveKeyWithValue("disposition", "answered"))
	g.Expect(call).To(HaveKeyWithValue("disconnection_reason", "agent_hangup"))
	analysis := call["analysis"].(map[string]any)
	g.Expect(analysis["extracted_data"]).To(Equal(map[string]any{"department": nil, "confirmed": nil, "attending": nil,
		"party_size": nil, "booking_date": nil, "customer_name": nil}))
	g.Expect(analysis["summary"]).To(ContainSubstring("0 of 6 requested details were captured"))

	noInputs := 0
	for _, u := range placedTranscript(t, o, id) {
		if u := u.(map[string]any); u["branch"] == "noInput" {
			noInputs++
			g.Expect(u).To(HaveKeyWithValue("note", true), "the engine's \"(no answer)\" is its note, not speech")
		}
	}
	g.Expect(noInputs).To(Equal(6), "one noInput per gather")
}

// The callee speaks, and the recognizer (the organization's server, here a
// local one that hears every utterance as "purple banana") hears nothing a
// step takes: every typed field is null. A text capture takes whatever was
// said: that is its value.
func TestSIPNonsenseCalleeLeavesTypedFieldsNull(t *testing.T) {
	g := NewWithT(t)
	asr := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"text": "purple banana"})
	}))
	t.Cleanup(asr.Close)
	// The callee says "purple banana" every two seconds.
	words, err := (&tts.Flite{}).Speak(context.Background(), "purple banana")
	g.Expect(err).NotTo(HaveOccurred())
	var voice []int16
	for len(voice) < 90*8000 {
		voice = append(append(voice, words...), make([]int16, 2*8000-len(words)%(2*8000))...)
	}
	callee := siptest.StartBaresip(t, "+14155550123", voice)
	o := sipOrg(t, callee.Addr, nil, func(s *switchboardv1.AgentSpec) {
		unansweredScript(s)
		s.Speech = &switchboardv1.AgentSpeech{URL: asr.URL + "/v1", Protocol: switchboardv1.SpeechProtocolOpenAI, TimeoutMilliseconds: 5000}
	})
	id := o.createCall(t, "+14155550123", nil)
	call := o.waitLongAnalyzed(t, id)
	g.Expect(call).To(HaveKeyWithValue("disposition", "answered"))
	analysis := call["analysis"].(map[string]any)
	g.Expect(analysis["extracted_data"]).To(Equal(map[string]any{"department": nil, "confirmed": nil, "attending": nil,
		"party_size": nil, "booking_date": nil, "customer_name": "purple banana"}))

	noMatches := 0
	for _, u := range placedTranscript(t, o, id) {
		if u := u.(map[string]any); u["branch"] == "noMatch" {
			noMatches++
			g.Expect(u).To(HaveKeyWithValue("content", "purple banana"))
		}
	}
	g.Expect(noMatches).To(Equal(5), "one noMatch per typed gather")
}
