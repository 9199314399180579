package calls_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
)

// A connected call's transcript is served once the call is analyzed: the
// agent's greeting first, the callee's answers, text and utterances that
// say the same; never in the call object. A call that never connected has
// none (404 transcript_not_found), and another organization's call is
// not found at all.
func TestTranscriptAPI(t *testing.T) {
	g := NewWithT(t)
	o := NewOrg(t)
	id := o.CreateCall(t, "+14155551234", nil)
	before := Do(t, "GET", "/v1/calls/"+id+"/transcript", o.Key, nil)
	g.Expect(before.Status).To(Equal(http.StatusNotFound), "a transcript before the call ended: %s", before.Raw)
	g.Expect(Detail(t, before)).To(HaveKeyWithValue("error_code", "transcript_not_found"))
	g.Expect(Detail(t, before)).To(HaveKeyWithValue("call_id", id))

	call := o.WaitAnalyzed(t, id)
	r := Do(t, "GET", "/v1/calls/"+id+"/transcript", o.Key, nil)
	g.Expect(r.Status).To(Equal(http.StatusOK), string(r.Raw))
	g.Expect(r.Body).To(HaveKeyWithValue("call_id", id))
	utterances, _ := r.Body["transcript_object"].([]any)
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
	g.Expect(r.Body["transcript"]).To(HavePrefix("Agent: Hello from the test clinic.\n"))
	g.Expect(r.Body["transcript"]).To(ContainSubstring("User: " + user[0] + "\n"))
	g.Expect(call).NotTo(HaveKey("transcript"))

	// Another organization's call is not found, as on every call path.
	other := NewOrg(t)
	r = Do(t, "GET", "/v1/calls/"+id+"/transcript", other.Key, nil)
	g.Expect(r.Status).To(Equal(http.StatusNotFound))
	g.Expect(r.Body).To(HaveKeyWithValue("detail", "Call not found."))

	busy := o.CreateCall(t, "+14155550001", nil)
	o.WaitAnalyzed(t, busy)
	r = Do(t, "GET", "/v1/calls/"+busy+"/transcript", o.Key, nil)
	g.Expect(r.Status).To(Equal(http.StatusNotFound))
	g.Expect(Detail(t, r)).To(HaveKeyWithValue("error_code", "transcript_not_found"))
}

// An agent with spec.analysis has its call analyzed by its model (here a
// local server speaking the chat-completions protocol: no model runs on
// this machine), with the organization's key; an agent whose model fails
// still gets its call analyzed, by the rules, and a Warning Event says why.
func TestLanguageModelAnalysis(t *testing.T) {
	g := NewWithT(t)
	o := NewOrg(t)
	var auth atomic.Value
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		auth.Store(r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		content := `{"summary":"Ada confirmed a table for four.","extracted_data":{"customer_name":"Ada Lovelace","confirmed":true,"party_size":4}}`
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "c1", "object": "chat.completion", "created": 1, "model": "m",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": content}}}})
	}))
	t.Cleanup(model.Close)
	key := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: o.Ns, Name: "llm-key"},
		Data: map[string][]byte{switchboardv1.AnalysisAPIKeySecretKey: []byte("sk-llm-org")}}
	g.Expect(K8s.Create(context.Background(), key)).To(Succeed())
	withModel := CreateAgent(t, o.Ns, "with-model", func(s *switchboardv1.AgentSpec) {
		s.Analysis = &switchboardv1.AgentAnalysis{URL: model.URL + "/v1", Model: "m",
			APIKeySecretRef: &switchboardv1.SecretReference{Name: "llm-key"}}
	})
	broken := CreateAgent(t, o.Ns, "broken-model", func(s *switchboardv1.AgentSpec) {
		s.Analysis = &switchboardv1.AgentAnalysis{URL: model.URL + "/nowhere", Model: "m", TimeoutSeconds: 2}
	})
	call := func(agentID string) string {
		r := Do(t, "POST", "/v1/calls", o.Key, map[string]any{"agent_id": agentID, "to_number": "+14155551234",
			"variables": map[string]any{"customer_name": "Ada"}})
		g.Expect(r.Status).To(Equal(http.StatusCreated), string(r.Raw))
		return r.Body["call_id"].(string)
	}
	good, bad := call(withModel.ResolvedID()), call(broken.ResolvedID())

	analysis := o.WaitAnalyzed(t, good)["analysis"].(map[string]any)
	g.Expect(analysis["summary"]).To(Equal("Ada confirmed a table for four."))
	g.Expect(analysis["extracted_data"]).To(Equal(map[string]any{"customer_name": "Ada Lovelace", "confirmed": true, "party_size": 4.0}))
	g.Expect(auth.Load()).To(Equal("Bearer sk-llm-org"))

	analysis = o.WaitAnalyzed(t, bad)["analysis"].(map[string]any)
	g.Expect(analysis["extracted_data"]).To(Equal(map[string]any{"customer_name": "Ada", "confirmed": true, "party_size": 4.0}))
	g.Eventually(func() string {
		var list eventsv1.EventList
		g.Expect(K8s.List(context.Background(), &list, client.InNamespace(o.Ns))).To(Succeed())
		for _, e := range list.Items {
			if e.Reason == "AnalysisFallback" {
				return e.Note
			}
		}
		return ""
	}, 10*time.Second, 100*time.Millisecond).Should(ContainSubstring("the language model was not used: the endpoint answered HTTP 404"))
}
