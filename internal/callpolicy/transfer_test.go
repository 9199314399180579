package callpolicy

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/numberlists"
	"github.com/switchboard-dev/switchboard/internal/telephony"
)

func TestCheckTransfer(t *testing.T) {
	lists := numberlists.NewIndex()
	lists.Set("org", "dnc", switchboardv1.DoNotCall, []string{"+14155550199"}, nil)
	lists.Set("org", "blocked", switchboardv1.Blocked, nil, []string{"+1415555018"})
	agent := &switchboardv1.Agent{ObjectMeta: metav1.ObjectMeta{Name: "sales"},
		Spec: switchboardv1.AgentSpec{TransferDestinations: []string{"+14155550100", "+1415555*"}}}
	none := &switchboardv1.Agent{ObjectMeta: metav1.ObjectMeta{Name: "quiet"}}
	tests := []struct {
		name   string
		agent  *switchboardv1.Agent
		number string
		want   string
	}{
		{"exact destination", agent, "+14155550100", ""},
		{"prefix destination", agent, "+14155551234", ""},
		{"outside the destinations", agent, "+14165550100", "+14165550100 is not one of agent sales's transferDestinations"},
		{"too short to dial", agent, "+14155", `"+14155" is not an E.164 number`},
		{"not E.164", agent, "{{manager}}", `"{{manager}}" is not an E.164 number`},
		{"do-not-call", agent, "+14155550199", `+14155550199 is on the do-not-call list "dnc".`},
		{"blocked prefix", agent, "+14155550181", `+14155550181 is blocked by the number list "blocked" (entry +1415555018).`},
		{"no destinations", none, "+14155550100", "agent quiet has no transferDestinations"},
		{"agent deleted", nil, "+14155550100", "the call's agent is gone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckTransfer(tt.agent, "org", tt.number, lists)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("CheckTransfer(%s) = %q, want %q", tt.number, got, tt.want)
			}
		})
	}
}

func TestTransferGuardReadsListsAtTransferTime(t *testing.T) {
	lists := numberlists.NewIndex()
	agent := &switchboardv1.Agent{Spec: switchboardv1.AgentSpec{TransferDestinations: []string{"+1415555*"}}}
	guard := Transfers(lists)(telephony.Request{Namespace: "org", Agent: agent})
	if err := guard(context.Background(), "+14155550100"); err != nil {
		t.Fatalf("allowed number refused: %v", err)
	}
	lists.Set("org", "dnc", switchboardv1.DoNotCall, []string{"+14155550100"}, nil)
	if err := guard(context.Background(), "+14155550100"); err == nil {
		t.Fatal("a number put on the do-not-call list during the call was allowed")
	}
	if err := guard(context.Background(), "+14155550101"); err != nil {
		t.Fatalf("another number refused: %v", err)
	}
}
