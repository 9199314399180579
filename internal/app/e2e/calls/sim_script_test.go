package calls_test

import (
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
)

// Issue 39: the simulated carrier runs what the agent declares. A
// scripted agent's call on it says the agent's own lines and prompts, its
// simulated callee answers them (0011: nonsense first, then a valid
// answer on the re-prompt), the script branches as on a trunk, and the
// analysis extracts what the gathers took.
func TestSimulatedCarrierRunsTheScript(t *testing.T) {
	g := NewWithT(t)
	o := NewOrg(t)
	agent := CreateAgent(t, o.Ns, "scripted", func(s *switchboardv1.AgentSpec) {
		s.Script = []switchboardv1.ScriptStep{
			{Say: "Hi {{customer_name}}, about your table."},
			{ID: "ask", Gather: &switchboardv1.GatherStep{Field: "confirmed", Prompt: "Will you be there? Please say yes or no.",
				Choices: []switchboardv1.GatherChoice{{Value: "yes", Digits: "1", Next: "size"}, {Value: "no", Digits: "2", Next: "bye"}},
				NoMatch: &switchboardv1.GatherRetry{Retries: ptr.To[int32](1), Prompt: "Sorry? Yes or no?"}}},
			{ID: "size", Gather: &switchboardv1.GatherStep{Field: "party_size", Prompt: "How many of you?",
				Capture: switchboardv1.CaptureNumber, NoMatch: &switchboardv1.GatherRetry{Retries: ptr.To[int32](1)}}},
			{ID: "bye", Say: "Goodbye."},
		}
	})
	call := func(to string) (map[string]any, string) {
		r := Do(t, "POST", "/v1/calls", o.Key, map[string]any{"agent_id": agent.ResolvedID(), "to_number": to,
			"variables": map[string]any{"customer_name": "Ada"}})
		g.Expect(r.Status).To(Equal(http.StatusCreated), string(r.Raw))
		id := r.Body["call_id"].(string)
		analysis := o.WaitAnalyzed(t, id)["analysis"].(map[string]any)
		tr := Do(t, "GET", "/v1/calls/"+id+"/transcript", o.Key, nil)
		g.Expect(tr.Status).To(Equal(http.StatusOK), string(tr.Raw))
		return analysis, tr.Body["transcript"].(string)
	}

	analysis, transcript := call("+14155551234")
	g.Expect(transcript).To(Equal("Agent: Hello from the test clinic.\nAgent: Hi Ada, about your table.\n" +
		"Agent: Will you be there? Please say yes or no.\nUser: Yes, please.\n" +
		"Agent: How many of you?\nUser: Um, four people.\nAgent: Goodbye.\n"))
	g.Expect(analysis["extracted_data"]).To(Equal(map[string]any{"customer_name": nil, "confirmed": true, "party_size": 4.0}))

	analysis, transcript = call("+14155550011")
	g.Expect(transcript).To(ContainSubstring("Agent: Will you be there? Please say yes or no.\nUser: Purple monkey dishwasher.\n" +
		"Agent: Sorry? Yes or no?\nUser: I'd say yes.\nAgent: How many of you?\nUser: Purple monkey dishwasher.\n" +
		"Agent: How many of you?\nUser: 4.\nAgent: Goodbye.\n"))
	g.Expect(analysis["extracted_data"]).To(Equal(map[string]any{"customer_name": nil, "confirmed": true, "party_size": 4.0}))

	// Silence is no answer: the fields stay null, never "no".
	analysis, transcript = call("+14155550010")
	g.Expect(transcript).To(ContainSubstring("Agent: Will you be there? Please say yes or no.\n"))
	g.Expect(analysis["extracted_data"]).To(Equal(map[string]any{"customer_name": nil, "confirmed": nil, "party_size": nil}))
}
