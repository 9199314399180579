package calls_test

import (
	"net/http"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
	"github.com/switchboard-dev/switchboard/internal/conversation/llmtest"
)

// Issue 39: a conversation agent is tried on the simulated carrier before
// a trunk exists. Its model (here a stand-in speaking OpenAI's streaming
// protocol with tool calls: no model runs in tests) holds the
// conversation with the simulated callee, who answers what the agent
// asks; end_call hangs up, and the analysis reads the conversation.
func TestSimulatedCarrierHoldsAConversation(t *testing.T) {
	g := NewWithT(t)
	model := llmtest.Demo()
	url := llmtest.Start(t, model)
	o := NewOrg(t)
	agent := CreateAgent(t, o.Ns, "talker", func(s *switchboardv1.AgentSpec) {
		s.ExtractedData = []switchboardv1.ExtractedDataField{
			{Name: "party_size", Type: switchboardv1.ExtractedNumber, Description: "How many people"}}
		s.Conversation = &switchboardv1.Conversation{
			LLM:          &switchboardv1.ConversationLLM{URL: url, Model: "standin-demo"},
			SystemPrompt: "You book tables for {{customer_name}}.",
			BeginMessage: "Hello {{customer_name}}, this is Chez Ada.",
			Tools:        &switchboardv1.ConversationTools{BuiltIn: []string{switchboardv1.ToolEndCall}},
		}
	})
	r := Do(t, "POST", "/v1/calls", o.Key, map[string]any{"agent_id": agent.ResolvedID(), "to_number": "+14155551234",
		"variables": map[string]any{"customer_name": "Ada"}})
	g.Expect(r.Status).To(Equal(http.StatusCreated), string(r.Raw))
	id := r.Body["call_id"].(string)
	call := o.WaitAnalyzed(t, id)
	g.Expect(call).To(HaveKeyWithValue("disconnection_reason", "agent_hangup"))
	tr := Do(t, "GET", "/v1/calls/"+id+"/transcript", o.Key, nil)
	g.Expect(tr.Status).To(Equal(http.StatusOK), string(tr.Raw))
	transcript := tr.Body["transcript"].(string)
	g.Expect(transcript).To(HavePrefix("Agent: Hello Ada, this is Chez Ada.\n"))
	g.Expect(transcript).To(ContainSubstring("Agent: Lovely. For how many people should I book the table?\nUser: "))
	g.Expect(transcript).To(ContainSubstring("We look forward to seeing you. Goodbye!"))
	g.Expect(call["analysis"].(map[string]any)["extracted_data"]).To(HaveKeyWithValue("party_size", 4.0), transcript)
	g.Expect(model.Requests()[0].Messages[0].Content).To(Equal("You book tables for Ada."))

	// Without the prompt's variable the call is refused at create.
	r = Do(t, "POST", "/v1/calls", o.Key, map[string]any{"agent_id": agent.ResolvedID(), "to_number": "+14155551234"})
	g.Expect(r.Status).To(Equal(http.StatusUnprocessableEntity), string(r.Raw))
	g.Expect(strings.ToLower(string(r.Raw))).To(ContainSubstring("customer_name"))
}
