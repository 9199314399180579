package sip_test

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

	. "github.com/onsi/gomega"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/siptest"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts"
)

// The callee answers and says nothing: every gather runs noInput, and
// every field is null. The transcript's "(no answer)" was read as speech:
// the choice "no", confirmed false.
func TestSIPSilentCalleeLeavesEveryFieldNull(t *testing.T) {
	g := NewWithT(t)
	callee := siptest.StartBaresip(t, "+14155550123", make([]int16, 90*8000))
	o := SIPOrg(t, callee.Addr, nil, UnansweredScript)
	id := o.CreateCall(t, "+14155550123", nil)
	call := o.WaitLongAnalyzed(t, id)
	g.Expect(call).To(HaveKeyWithValue("disposition", "answered"))
	g.Expect(call).To(HaveKeyWithValue("disconnection_reason", "agent_hangup"))
	analysis := call["analysis"].(map[string]any)
	g.Expect(analysis["extracted_data"]).To(Equal(map[string]any{"department": nil, "confirmed": nil, "attending": nil,
		"party_size": nil, "booking_date": nil, "customer_name": nil}))
	g.Expect(analysis["summary"]).To(ContainSubstring("0 of 6 requested details were captured"))

	noInputs := 0
	for _, u := range PlacedTranscript(t, o, id) {
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
	o := SIPOrg(t, callee.Addr, nil, func(s *switchboardv1.AgentSpec) {
		UnansweredScript(s)
		s.Speech = &switchboardv1.AgentSpeech{URL: asr.URL + "/v1", Protocol: switchboardv1.SpeechProtocolOpenAI, TimeoutMilliseconds: 5000}
	})
	id := o.CreateCall(t, "+14155550123", nil)
	call := o.WaitLongAnalyzed(t, id)
	g.Expect(call).To(HaveKeyWithValue("disposition", "answered"))
	analysis := call["analysis"].(map[string]any)
	g.Expect(analysis["extracted_data"]).To(Equal(map[string]any{"department": nil, "confirmed": nil, "attending": nil,
		"party_size": nil, "booking_date": nil, "customer_name": "purple banana"}))

	noMatches := 0
	for _, u := range PlacedTranscript(t, o, id) {
		if u := u.(map[string]any); u["branch"] == "noMatch" {
			noMatches++
			g.Expect(u).To(HaveKeyWithValue("content", "purple banana"))
		}
	}
	g.Expect(noMatches).To(Equal(5), "one noMatch per typed gather")
}
