package sip

import (
	"context"
	"testing"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/conversation"
	"github.com/switchboard-dev/switchboard/internal/telephony"
)

// noConversations is a conversation source whose engine is never opened.
type noConversations struct{}

func (noConversations) For(context.Context, telephony.Request) (conversation.Opener, conversation.Config, conversation.CallDetails, error) {
	return nil, conversation.Config{}, conversation.CallDetails{}, nil
}

// Render gives the conversation its transfer options, the hold line said
// in the agent's voice with the call's variables.
func TestRenderWiresConversationTransfer(t *testing.T) {
	agent := &switchboardv1.Agent{Spec: switchboardv1.AgentSpec{Conversation: &switchboardv1.Conversation{
		Transfer: &switchboardv1.ConversationTransfer{TransferOptions: switchboardv1.TransferOptions{
			Mode: switchboardv1.TransferWarm, HoldLine: "One moment, {{name}}."}}}}}
	r := &ScriptRenderer{Speaker: lengthSpeaker{}, Conversations: noConversations{}}
	spec, err := r.Render(t.Context(), telephony.Request{Agent: agent, Variables: map[string]any{"name": "Ada"}})
	if err != nil {
		t.Fatal(err)
	}
	x := spec.Conversation.Transfer
	if x == nil || x.Mode != switchboardv1.TransferWarm || x.Method != switchboardv1.TransferByBridge || x.HoldText != "One moment, Ada." || len(x.Hold) == 0 {
		t.Fatalf("conversation transfer %+v", x)
	}
	agent.Spec.Conversation.Transfer = nil
	if spec, err = r.Render(t.Context(), telephony.Request{Agent: agent}); err != nil || spec.Conversation.Transfer != nil {
		t.Fatalf("without transfer: %+v, %v", spec.Conversation, err)
	}
}
