package app_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestAnsweredCallLifecycle(t *testing.T) {
	g := NewWithT(t)
	o := newOrg(t)
	before := time.Now().Add(-time.Second)
	r := do(t, "POST", "/v1/calls", o.key, map[string]any{
		"agent_id": o.agentID, "to_number": "+14155551234",
		"variables": map[string]any{"customer_name": "Ada"}, "metadata": map[string]any{"order": 7, "tags": []any{"a"}},
	})
	g.Expect(r.status).To(Equal(http.StatusCreated), string(r.raw))
	g.Expect(r.body).To(HaveKeyWithValue("status", "queued"))
	g.Expect(r.body).To(HaveKeyWithValue("agent_id", o.agentID))
	g.Expect(r.body).To(HaveKeyWithValue("to_number", "+14155551234"))
	g.Expect(r.body).To(HaveKeyWithValue("from_number", agentFrom))
	g.Expect(r.body["call_id"]).To(MatchRegexp(`^call_[0-9a-f]{32}$`))
	created, err := time.Parse(time.RFC3339, r.body["created_at"].(string))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(created).To(BeTemporally(">=", before.Truncate(time.Second)))
	id := r.body["call_id"].(string)

	// Readable at once, before the reconciler has touched it.
	first := o.getCall(t, id)
	g.Expect(first["status"]).To(BeElementOf("queued", "in_progress"))
	g.Expect(first["analysis"]).To(BeNil())
	g.Expect(first["disposition"]).To(BeNil())
	g.Expect(first).NotTo(HaveKey("transcript"))

	call := o.waitAnalyzed(t, id)
	g.Expect(call).To(HaveKeyWithValue("call_id", id))
	g.Expect(call).To(HaveKeyWithValue("status", "ended"))
	g.Expect(call).To(HaveKeyWithValue("direction", "outbound"))
	g.Expect(call).To(HaveKeyWithValue("source", "api"))
	g.Expect(call).To(HaveKeyWithValue("disposition", "answered"))
	g.Expect(call).To(HaveKeyWithValue("disconnection_reason", "agent_hangup"))
	g.Expect(call).To(HaveKeyWithValue("duration_ms", BeNumerically("==", testTimings.Talk.Milliseconds())))
	g.Expect(call).To(HaveKeyWithValue("variables", map[string]any{"customer_name": "Ada"}))
	g.Expect(call).To(HaveKeyWithValue("metadata", map[string]any{"order": 7.0, "tags": []any{"a"}}))
	g.Expect(call["started_at"]).NotTo(BeNil())
	g.Expect(call["ended_at"]).NotTo(BeNil())
	started, _ := time.Parse(time.RFC3339, call["started_at"].(string))
	ended, _ := time.Parse(time.RFC3339, call["ended_at"].(string))
	g.Expect(ended.Sub(started)).To(BeNumerically("~", testTimings.Ring+testTimings.Talk, 5*time.Millisecond))
	analysis := call["analysis"].(map[string]any)
	g.Expect(analysis["summary"]).To(ContainSubstring("answered"))
	g.Expect(analysis["extracted_data"]).To(Equal(map[string]any{
		"customer_name": "Ada", "confirmed": true, "party_size": 4.0}))
	g.Expect(call["recording_url"]).To(HavePrefix(operator.baseURL + "/recordings/"))

	// The recording endpoint hands out a fresh link of about an hour.
	rec := do(t, "GET", "/v1/calls/"+id+"/recording", o.key, nil)
	g.Expect(rec.status).To(Equal(http.StatusOK), string(rec.raw))
	expires, err := time.Parse(time.RFC3339, rec.body["expires_at"].(string))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(time.Until(expires)).To(BeNumerically("~", time.Hour, time.Minute))
	url := rec.body["url"].(string)
	wav := fetch(t, url)
	g.Expect(wav.status).To(Equal(http.StatusOK))
	g.Expect(wav.header.Get("Content-Type")).To(Equal("audio/wav"))
	g.Expect(string(wav.raw[:4])).To(Equal("RIFF"))
	g.Expect(string(wav.raw[8:12])).To(Equal("WAVE"))
	g.Expect(len(wav.raw)).To(Equal(44 + 2*8000*int(testTimings.Talk.Milliseconds())/1000))

	// A tampered link is refused.
	tampered := fetch(t, strings.Replace(url, "sig=", "sig=A", 1))
	g.Expect(tampered.status).To(Equal(http.StatusForbidden))
}

// fetch GETs an absolute URL without credentials, as a browser would.
func fetch(t *testing.T, url string) response {
	t.Helper()
	path := strings.TrimPrefix(url, operator.baseURL)
	return do(t, "GET", path, "", nil)
}

func TestNumberPlanOutcomes(t *testing.T) {
	o := newOrg(t)
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
		ids[tt.suffix] = o.createCall(t, "+1415555"+tt.suffix, nil)
	}
	for _, tt := range tests {
		t.Run(tt.disposition, func(t *testing.T) {
			g := NewWithT(t)
			call := o.waitAnalyzed(t, ids[tt.suffix])
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
			rec := do(t, "GET", "/v1/calls/"+ids[tt.suffix]+"/recording", o.key, nil)
			if tt.connected {
				g.Expect(rec.status).To(Equal(http.StatusOK))
				g.Expect(call["recording_url"]).NotTo(BeNil())
			} else {
				g.Expect(rec.status).To(Equal(http.StatusNotFound))
				g.Expect(rec.body["detail"]).To(BeAssignableToTypeOf(""))
				g.Expect(call["recording_url"]).To(BeNil())
				g.Expect(call["duration_ms"]).To(BeNumerically("==", 0))
				g.Expect(data).To(HaveEach(BeNil()))
			}
		})
	}
}
