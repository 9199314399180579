package app_test

import (
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
)

// A connected call's transcript is served once the call is analyzed: the
// agent's greeting first, the callee's answers, text and utterances that
// say the same; never in the call object. A call that never connected has
// none (404 transcript_not_found), and another organization's call is
// not found at all.
func TestTranscriptAPI(t *testing.T) {
	g := NewWithT(t)
	o := newOrg(t)
	id := o.createCall(t, "+14155551234", nil)
	before := do(t, "GET", "/v1/calls/"+id+"/transcript", o.key, nil)
	g.Expect(before.status).To(Equal(http.StatusNotFound), "a transcript before the call ended: %s", before.raw)
	g.Expect(detail(t, before)).To(HaveKeyWithValue("error_code", "transcript_not_found"))
	g.Expect(detail(t, before)).To(HaveKeyWithValue("call_id", id))

	call := o.waitAnalyzed(t, id)
	r := do(t, "GET", "/v1/calls/"+id+"/transcript", o.key, nil)
	g.Expect(r.status).To(Equal(http.StatusOK), string(r.raw))
	g.Expect(r.body).To(HaveKeyWithValue("call_id", id))
	utterances, _ := r.body["transcript_object"].([]any)
	g.Expect(len(utterances)).To(BeNumerically(">=", 3))
	first := utterances[0].(map[string]any)
	g.Expect(first).To(HaveKeyWithValue("role", "agent"))
	g.Expect(first).To(HaveKeyWithValue("content", "Hello from the test clinic."))
	g.Expect(first).To(HaveKeyWithValue("words", BeEmpty()))
	var user []string
	for _, u := range utterances {
		if u := u.(map[string]any); u["role"] == "user" {
			user = append(user, u["content"].(string))
		}
	}
	g.Expect(user).NotTo(BeEmpty(), "the callee said nothing")
	g.Expect(r.body["transcript"]).To(HavePrefix("Agent: Hello from the test clinic.\n"))
	g.Expect(r.body["transcript"]).To(ContainSubstring("User: " + user[0] + "\n"))
	g.Expect(call).NotTo(HaveKey("transcript"))

	// Another organization's call is not found, as on every call path.
	other := newOrg(t)
	r = do(t, "GET", "/v1/calls/"+id+"/transcript", other.key, nil)
	g.Expect(r.status).To(Equal(http.StatusNotFound))
	g.Expect(r.body).To(HaveKeyWithValue("detail", "Call not found."))

	busy := o.createCall(t, "+14155550001", nil)
	o.waitAnalyzed(t, busy)
	r = do(t, "GET", "/v1/calls/"+busy+"/transcript", o.key, nil)
	g.Expect(r.status).To(Equal(http.StatusNotFound))
	g.Expect(detail(t, r)).To(HaveKeyWithValue("error_code", "transcript_not_found"))
}
