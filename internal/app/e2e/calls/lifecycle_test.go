package calls_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
)

func TestAnsweredCallLifecycle(t *testing.T) {
	g := NewWithT(t)
	o := NewOrg(t)
	before := time.Now().Add(-time.Second)
	r := Do(t, "POST", "/v1/calls", o.Key, map[string]any{
		"agent_id": o.AgentID, "to_number": "+14155551234",
		"variables": map[string]any{"customer_name": "Ada"}, "metadata": map[string]any{"order": 7, "tags": []any{"a"}},
	})
	g.Expect(r.Status).To(Equal(http.StatusCreated), string(r.Raw))
	g.Expect(r.Body).To(HaveKeyWithValue("status", "queued"))
	g.Expect(r.Body).To(HaveKeyWithValue("agent_id", o.AgentID))
	g.Expect(r.Body).To(HaveKeyWithValue("to_number", "+14155551234"))
	g.Expect(r.Body).To(HaveKeyWithValue("from_number", AgentFrom))
	g.Expect(r.Body["call_id"]).To(MatchRegexp(`^call_[0-9a-f]{32}$`))
	created, err := time.Parse(time.RFC3339, r.Body["created_at"].(string))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(created).To(BeTemporally(">=", before.Truncate(time.Second)))
	id := r.Body["call_id"].(string)

	// Readable at once, before the reconciler has touched it.
	first := o.GetCall(t, id)
	g.Expect(first["status"]).To(BeElementOf("queued", "in_progress"))
	g.Expect(first["analysis"]).To(BeNil())
	g.Expect(first["disposition"]).To(BeNil())
	g.Expect(first).NotTo(HaveKey("transcript"))

	call := o.WaitAnalyzed(t, id)
	g.Expect(call).To(HaveKeyWithValue("call_id", id))
	g.Expect(call).To(HaveKeyWithValue("status", "ended"))
	g.Expect(call).To(HaveKeyWithValue("direction", "outbound"))
	g.Expect(call).To(HaveKeyWithValue("source", "api"))
	g.Expect(call).To(HaveKeyWithValue("disposition", "answered"))
	g.Expect(call).To(HaveKeyWithValue("disconnection_reason", "agent_hangup"))
	g.Expect(call).To(HaveKeyWithValue("duration_ms", BeNumerically("==", TestTimings.Talk.Milliseconds())))
	g.Expect(call).To(HaveKeyWithValue("variables", map[string]any{"customer_name": "Ada"}))
	g.Expect(call).To(HaveKeyWithValue("metadata", map[string]any{"order": 7.0, "tags": []any{"a"}}))
	g.Expect(call["started_at"]).NotTo(BeNil())
	g.Expect(call["ended_at"]).NotTo(BeNil())
	started, _ := time.Parse(time.RFC3339, call["started_at"].(string))
	ended, _ := time.Parse(time.RFC3339, call["ended_at"].(string))
	g.Expect(ended.Sub(started)).To(BeNumerically("~", TestTimings.Ring+TestTimings.Talk, 5*time.Millisecond))
	analysis := call["analysis"].(map[string]any)
	g.Expect(analysis["summary"]).To(ContainSubstring("answered"))
	g.Expect(analysis["extracted_data"]).To(Equal(map[string]any{
		"customer_name": "Ada", "confirmed": true, "party_size": 4.0}))
	g.Expect(call["recording_url"]).To(HavePrefix(Operator.BaseURL + "/recordings/"))

	// The recording endpoint hands out a fresh link of about an hour.
	rec := Do(t, "GET", "/v1/calls/"+id+"/recording", o.Key, nil)
	g.Expect(rec.Status).To(Equal(http.StatusOK), string(rec.Raw))
	expires, err := time.Parse(time.RFC3339, rec.Body["expires_at"].(string))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(time.Until(expires)).To(BeNumerically("~", time.Hour, time.Minute))
	url := rec.Body["url"].(string)
	wav := Fetch(t, url)
	g.Expect(wav.Status).To(Equal(http.StatusOK))
	g.Expect(wav.Header.Get("Content-Type")).To(Equal("audio/wav"))
	g.Expect(string(wav.Raw[:4])).To(Equal("RIFF"))
	g.Expect(string(wav.Raw[8:12])).To(Equal("WAVE"))
	g.Expect(len(wav.Raw)).To(Equal(44 + 2*8000*int(TestTimings.Talk.Milliseconds())/1000))

	// A tampered link is refused.
	tampered := Fetch(t, strings.Replace(url, "sig=", "sig=A", 1))
	g.Expect(tampered.Status).To(Equal(http.StatusForbidden))
}

func TestNumberPlanOutcomes(t *testing.T) {
	o := NewOrg(t)
	tests := []struct {
		suffix, disposition, reason string
		connected                   bool
	}{
		{"0001", "busy", "dial_busy", false},
		{"0002", "no_answer", "no_answer", false},
		{"0003", "answering_machine", "voicemail", true},
		{"0004", "rejected", "dial_rejected", false},
		{"0005", "unreachable", "dial_failed", false},
		{"0006", "invalid_number", "invalid_destination", false},
		{"0007", "carrier_failure", "carrier_error", false},
		{"4321", "answered", "agent_hangup", true},
	}
	ids := map[string]string{}
	for _, tt := range tests {
		ids[tt.suffix] = o.CreateCall(t, "+1415555"+tt.suffix, nil)
	}
	for _, tt := range tests {
		t.Run(tt.disposition, func(t *testing.T) {
			g := NewWithT(t)
			call := o.WaitAnalyzed(t, ids[tt.suffix])
			g.Expect(call).To(HaveKeyWithValue("status", "ended"))
			g.Expect(call).To(HaveKeyWithValue("disposition", tt.disposition))
			g.Expect(call).To(HaveKeyWithValue("disconnection_reason", tt.reason))
			g.Expect(call["ended_at"]).NotTo(BeNil())
			g.Expect(call["duration_ms"]).NotTo(BeNil())
			data := call["analysis"].(map[string]any)["extracted_data"].(map[string]any)
			g.Expect(data).To(HaveLen(3))
			g.Expect(data).To(HaveKey("customer_name"))
			g.Expect(data).To(HaveKey("confirmed"))
			g.Expect(data).To(HaveKey("party_size"))
			rec := Do(t, "GET", "/v1/calls/"+ids[tt.suffix]+"/recording", o.Key, nil)
			if tt.connected {
				g.Expect(rec.Status).To(Equal(http.StatusOK))
				g.Expect(call["recording_url"]).NotTo(BeNil())
			} else {
				g.Expect(rec.Status).To(Equal(http.StatusNotFound))
				g.Expect(rec.Body["detail"]).To(BeAssignableToTypeOf(""))
				g.Expect(call["recording_url"]).To(BeNil())
				g.Expect(call["duration_ms"]).To(BeNumerically("==", 0))
				g.Expect(data).To(HaveEach(BeNil()))
			}
		})
	}
}
