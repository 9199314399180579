package apptest

// A campaign of 1,000 contacts on the simulated carrier, with the outcomes
// its numbers choose (DESIGN.md) and a redial policy, the operator stopped
// in place halfway and started again: every contact ends final, each is
// called as often as the policy says, never twice for one attempt, and the
// counters match the calls.

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/history"
)

// CampaignOutcomes are the last four digits a contact's number ends in and
// the calls the redial policy of campaignSpec gives it.
var CampaignOutcomes = []struct {
	Suffix, Outcome string
	Calls           int
}{
	{"0001", "busy", 3},
	{"0002", "no_answer", 2},
	{"0003", "answering_machine", 1},
	{"0004", "rejected", 1},
	{"0007", "carrier_failure", 2},
	{"0008", "dispatch_error", 2},
	{"4321", "answered", 1},
	{"5678", "answered", 1},
	{"6789", "answered", 1},
	{"7890", "answered", 1},
}

func CampaignSpec(agentID string) switchboardv1.CampaignSpec {
	return switchboardv1.CampaignSpec{AgentID: agentID,
		// Open around the clock, so that the test does not depend on the hour.
		CallingWindow: switchboardv1.CallingWindow{Start: "00:00", End: "24:00"},
		Pacing:        switchboardv1.CampaignPacing{CallsPerMinute: 60000, MaxConcurrent: 24},
		Redial: switchboardv1.RedialPolicy{
			Busy:           &switchboardv1.RedialRule{Attempts: 3},
			NoAnswer:       &switchboardv1.RedialRule{Attempts: 2, MinGap: &metav1.Duration{Duration: 500 * time.Millisecond}},
			CarrierFailure: &switchboardv1.RedialRule{Attempts: 2},
		}}
}

// CampaignContacts are n contacts in New York, numbered so that each
// outcome of campaignOutcomes comes once in every ten.
func CampaignContacts(n int) []history.Contact {
	cs := make([]history.Contact, n)
	for i := range cs {
		o := CampaignOutcomes[i%len(CampaignOutcomes)]
		cs[i] = history.Contact{Seq: int64(i), ToNumber: fmt.Sprintf("+1212%03d%s", 200+i/len(CampaignOutcomes), o.Suffix),
			Zones: []string{"America/New_York"}, Variables: []byte(`{"customer_name":"Ada"}`), DueAt: time.Now()}
	}
	return cs
}

func GetCampaign(t *testing.T, ns, name string) *switchboardv1.Campaign {
	t.Helper()
	var c switchboardv1.Campaign
	NewWithT(t).Expect(K8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &c)).To(Succeed())
	return &c
}

// CampaignCalls are the Calls a campaign placed (all still in the cluster:
// the suite keeps calls for an hour).
func CampaignCalls(t *testing.T, ns, name string) []switchboardv1.Call {
	t.Helper()
	var list switchboardv1.CallList
	NewWithT(t).Expect(K8s.List(context.Background(), &list, client.InNamespace(ns),
		client.MatchingLabels{switchboardv1.CampaignLabel: name})).To(Succeed())
	return list.Items
}
