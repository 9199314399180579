package sip_test

// An agent's voice server (issue 40): its lines are said in the server's
// voice over a real call, and a line the server fails in the embedded
// voice, the transcript saying so.

import (
	"encoding/binary"
	"fmt"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/siptest"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts/ttstest"
)

func TestSIPCallSpeaksInTheVoiceServersVoice(t *testing.T) {
	g := NewWithT(t)
	voice := ttstest.New(t, ttstest.Behaviour{Tone: 440, Length: 1500 * time.Millisecond})
	callee := siptest.StartSipp(t, "udp", siptest.Scenario(t, ScenarioFile("callee_talks.xml"))...)
	o := SIPOrg(t, callee.Addr, nil, func(s *switchboardv1.AgentSpec) {
		s.Voice = &switchboardv1.AgentVoice{Server: &switchboardv1.VoiceServer{URL: voice.URL, Model: "kokoro", Voice: "af_heart"}}
		s.Script = []switchboardv1.ScriptStep{{Say: "Hello {{customer_name}}."}, {Hangup: &switchboardv1.HangupStep{}}}
	})
	id := o.CreateCall(t, "+14155550123", nil)
	g.Expect(o.WaitAnalyzed(t, id)).To(HaveKeyWithValue("disconnection_reason", "agent_hangup"))
	reqs := voice.Requests()
	g.Expect(reqs).To(HaveLen(1))
	g.Expect(reqs[0].Input).To(Equal("Hello Ada."))

	// The agent's channel holds the server's tone: 1.5 s at 440 Hz.
	rec := Do(t, "GET", "/v1/calls/"+id+"/recording", o.Key, nil)
	g.Expect(rec.Status).To(Equal(http.StatusOK), string(rec.Raw))
	wav := Fetch(t, rec.Body["url"].(string)).Raw
	StereoEnergy(t, wav) // checks the format: 8 kHz stereo PCM16
	var left []int16
	for i := 44; i+4 <= len(wav); i += 4 {
		left = append(left, int16(binary.LittleEndian.Uint16(wav[i:]))) //nolint:gosec // PCM samples
	}
	first, last := -1, -1
	for i, v := range left {
		if v > 3000 || v < -3000 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	g.Expect(first).To(BeNumerically(">=", 0), "the agent said nothing")
	// Its length in 20 ms frames that hold it (a loaded machine may leave
	// gaps between frames in the recording).
	frames := 0
	for at := first; at+160 <= last+160 && at+160 <= len(left); at += 160 {
		var peak int16
		for _, v := range left[at : at+160] {
			peak = max(peak, v)
		}
		if peak > 5000 {
			frames++
		}
	}
	g.Expect(float64(frames)/50).To(BeNumerically("~", 1.5, 0.06), "the tone's length")
	// The pitch from the mean period between rising zero crossings, gaps
	// (a frame the loaded machine played late) left out.
	var periods, sum, prevRise int
	for i := first + 1; i <= last; i++ {
		if left[i-1] < 0 && left[i] >= 0 {
			if d := i - prevRise; prevRise > 0 && d < 25 {
				periods, sum = periods+1, sum+d
			}
			prevRise = i
		}
	}
	g.Expect(periods).To(BeNumerically(">", 500))
	g.Expect(8000/(float64(sum)/float64(periods))).To(BeNumerically("~", 440, 3), "the tone's pitch")
	g.Expect(voiceTranscript(t, o, id)).NotTo(ContainSubstring("embedded voice"))

	// A server that fails: the line is said all the same, and noted.
	voice.Set(ttstest.Behaviour{Mode: ttstest.Status})
	callee2 := siptest.StartSipp(t, "udp", siptest.Scenario(t, ScenarioFile("callee_talks.xml"))...)
	o2 := SIPOrg(t, callee2.Addr, nil, func(s *switchboardv1.AgentSpec) {
		s.Voice = &switchboardv1.AgentVoice{Server: &switchboardv1.VoiceServer{URL: voice.URL, Voice: "af_heart"}}
		s.Script = []switchboardv1.ScriptStep{{Say: "Hello {{customer_name}}."}, {Hangup: &switchboardv1.HangupStep{}}}
	})
	id2 := o2.CreateCall(t, "+14155550123", nil)
	g.Expect(o2.WaitAnalyzed(t, id2)).To(HaveKeyWithValue("disconnection_reason", "agent_hangup"))
	g.Expect(voiceTranscript(t, o2, id2)).To(ContainSubstring(
		"(said in the embedded voice: the voice server answered 500 Internal Server Error"))
}

// voiceTranscript is the call's transcript as "role: content" lines.
func voiceTranscript(t *testing.T, o *Org, id string) string {
	var lines string
	for _, u := range PlacedTranscript(t, o, id) {
		u := u.(map[string]any)
		lines += fmt.Sprintf("%v: %v\n", u["role"], u["content"])
	}
	return lines
}
