package apptest

// Issue 36: silence is not "no". A callee who says nothing, or nothing a
// gather step can take, leaves the step's field null, whatever its type,
// on real SIP calls through the REST API.

import (
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// UnansweredScript asks one field of each kind by a gather step that
// listens for a second and does not ask again: choices for a string and
// for a boolean, and each kind of capture a field can take.
func UnansweredScript(s *switchboardv1.AgentSpec) {
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

// WaitLongAnalyzed waits for the call's analysis (the script takes longer
// than waitAnalyzed allows) and returns the call.
func (o *Org) WaitLongAnalyzed(t *testing.T, id string) map[string]any {
	t.Helper()
	var call map[string]any
	NewWithT(t).Eventually(func() any {
		call = o.GetCall(t, id)
		return call["analysis"]
	}, 90*time.Second, 100*time.Millisecond).ShouldNot(BeNil(), "call %s never analyzed", id)
	return call
}

// PlacedTranscript is the call's transcript, checked to place every
// utterance on the call's timeline (the dashboard's player seeks there).
func PlacedTranscript(t *testing.T, o *Org, id string) []any {
	t.Helper()
	g := NewWithT(t)
	r := Do(t, "GET", "/v1/calls/"+id+"/transcript", o.Key, nil)
	g.Expect(r.Status).To(Equal(http.StatusOK), string(r.Raw))
	utterances := r.Body["transcript_object"].([]any)
	for _, u := range utterances {
		u := u.(map[string]any)
		g.Expect(u["start"]).NotTo(BeNil(), "utterance %v has no start", u)
		g.Expect(u["end"]).NotTo(BeNil(), "utterance %v has no end", u)
		start, end := u["start"].(float64), u["end"].(float64)
		g.Expect(end).To(BeNumerically(">=", start), "utterance %v ends before it starts", u)
	}
	return utterances
}
