package engines

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony"
)

func agentWith(c *switchboardv1.Conversation) *switchboardv1.Agent {
	return &switchboardv1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: "org-a", Name: "a", UID: "u-1"},
		Spec: switchboardv1.AgentSpec{ID: "2b4c6d8e-0000-4000-8000-000000000001", Conversation: c}}
}

func TestLoopConfigTakesTheAgentsTurnTakingAndDefaults(t *testing.T) {
	got := LoopConfig(&switchboardv1.Conversation{TurnTaking: &switchboardv1.TurnTaking{MinEndpointingDelayMs: ptr.To[int32](300), MinInterruptionMs: ptr.To[int32](0),
		ReminderMaxCount: ptr.To[int32](0), Backchannels: []string{"aha"}}})
	if got.TurnTaking.MinEndpointing != 300*time.Millisecond || got.TurnTaking.MaxEndpointing != 3*time.Second ||
		got.TurnTaking.ReminderMax != 0 || got.TurnTaking.MinInterruption != 0 || strings.Join(got.TurnTaking.Backchannels, ",") != "aha" {
		t.Fatalf("turn-taking = %+v", got.TurnTaking)
	}
	if got.MaxTurns != 200 || got.FallbackLine == "" {
		t.Fatalf("config = %+v, want the CRD's defaults", got)
	}
}

func TestForReadsTheOrganizationsSecrets(t *testing.T) {
	secrets := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "org-a", Name: "llm"}, Data: map[string][]byte{"api-key": []byte("sk-a")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "org-b", Name: "llm"}, Data: map[string][]byte{"api-key": []byte("sk-b")}},
	).Build()
	src := Source{Secrets: secrets}
	conv := &switchboardv1.Conversation{LLM: &switchboardv1.ConversationLLM{URL: "https://llm.example/v1", Model: "m",
		APIKeySecretRef: &switchboardv1.SecretReference{Name: "llm"}, Temperature: "0.3"},
		SystemPrompt: "Call {{customer_name}}.", BeginMessage: "Hi {{customer_name}}."}
	req := telephony.Request{CallID: "call_1", Namespace: "org-a", From: "+14155550100", To: "+14155550123",
		Variables: map[string]any{"customer_name": "Ada"}, Agent: agentWith(conv)}
	cc, err := src.chatConfig(context.Background(), req.Namespace, conv, req.Variables)
	if err != nil {
		t.Fatal(err)
	}
	if cc.APIKey != "sk-a" || cc.SystemPrompt != "Call Ada." || cc.BeginMessage != "Hi Ada." || cc.Temperature == nil || *cc.Temperature != 0.3 {
		t.Fatalf("chat config = %+v: want org-a's key and the variables filled", cc)
	}
	open, _, details, err := src.For(context.Background(), req)
	if err != nil || open == nil {
		t.Fatalf("For: %v", err)
	}
	if details.CallID != "call_1" || details.AgentID != "2b4c6d8e-0000-4000-8000-000000000001" || details.Variables["customer_name"] != "Ada" {
		t.Fatalf("details = %+v", details)
	}

	conv.LLM.APIKeySecretRef.Name = "missing"
	if _, _, _, err := src.For(context.Background(), req); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("For with a missing Secret: %v, want an error naming it", err)
	}
}

func TestTransferBecomesTheToolsDestinationsAndTheEnginesOptions(t *testing.T) {
	conv := &switchboardv1.Conversation{LLM: &switchboardv1.ConversationLLM{URL: "https://llm.example/v1", Model: "m"},
		Tools: &switchboardv1.ConversationTools{BuiltIn: []string{switchboardv1.ToolTransferCall}},
		Transfer: &switchboardv1.ConversationTransfer{
			Destinations: []switchboardv1.TransferDestination{{Number: "{{desk}}", Description: "the front desk"}},
			TransferOptions: switchboardv1.TransferOptions{Mode: switchboardv1.TransferWarm, RingTimeoutSeconds: 12,
				HoldLine: "Hold on, {{name}}.", Whisper: "{{name}} is calling: {{summary}} Press 1."}}}
	vars := map[string]any{"desk": "+14155550142", "name": "Ada"}
	cc, err := Source{}.chatConfig(context.Background(), "org-a", conv, vars)
	if err != nil {
		t.Fatal(err)
	}
	if len(cc.Transfer) != 1 || cc.Transfer[0].Number != "+14155550142" || cc.Transfer[0].Description != "the front desk" {
		t.Fatalf("destinations = %+v, want the variable filled", cc.Transfer)
	}
}
