package app_test

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
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/history"
)

// campaignOutcomes are the last four digits a contact's number ends in and
// the calls the redial policy of campaignSpec gives it.
var campaignOutcomes = []struct {
	suffix, outcome string
	calls           int
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

func campaignSpec(agentID string) switchboardv1.CampaignSpec {
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

// campaignContacts are n contacts in New York, numbered so that each
// outcome of campaignOutcomes comes once in every ten.
func campaignContacts(n int) []history.Contact {
	cs := make([]history.Contact, n)
	for i := range cs {
		o := campaignOutcomes[i%len(campaignOutcomes)]
		cs[i] = history.Contact{Seq: int64(i), ToNumber: fmt.Sprintf("+1212%03d%s", 200+i/len(campaignOutcomes), o.suffix),
			Zones: []string{"America/New_York"}, Variables: []byte(`{"customer_name":"Ada"}`), DueAt: time.Now()}
	}
	return cs
}

func TestCampaignOfAThousandAcrossARestart(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	o := newOrg(t)
	const n = 1000
	name := "reminders"
	added, err := historyStore.AddContacts(ctx, o.ns, name, campaignContacts(n), time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(added).To(Equal(n))
	campaign := &switchboardv1.Campaign{ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: name},
		Spec: campaignSpec(o.agentID)}
	g.Expect(k8s.Create(ctx, campaign)).To(Succeed())

	// Halfway, the operator stops in place and a new one takes over.
	g.Eventually(func() int64 { return getCampaign(t, o.ns, name).Status.Done }, 5*time.Minute, 200*time.Millisecond).
		Should(BeNumerically(">=", n/2))
	withOperator(t, nil)

	var final *switchboardv1.Campaign
	g.Eventually(func() switchboardv1.CampaignState {
		final = getCampaign(t, o.ns, name)
		return final.Status.State
	}, 10*time.Minute, time.Second).Should(Equal(switchboardv1.CampaignCompleted))
	g.Expect(final.Status.Total).To(Equal(int64(n)))
	g.Expect(final.Status.Done).To(Equal(int64(n)))
	g.Expect(final.Status.Pending + final.Status.Dialing).To(BeZero())

	calls := campaignCalls(t, o.ns, name)
	perNumber := map[string][]switchboardv1.Call{}
	for _, c := range calls {
		perNumber[c.Spec.ToNumber] = append(perNumber[c.Spec.ToNumber], c)
		g.Expect(c.Spec.Source).To(Equal(switchboardv1.SourceCampaign))
		g.Expect(string(c.MetadataJSON())).To(ContainSubstring(`"campaign_id":"` + name + `"`))
	}
	outcomes := map[string]int64{}
	for i, contact := range campaignContacts(n) {
		want := campaignOutcomes[i%len(campaignOutcomes)]
		got := perNumber[contact.ToNumber]
		g.Expect(got).To(HaveLen(want.calls), "%s (%s) was called %d times", contact.ToNumber, want.outcome, len(got))
		outcomes[want.outcome]++
	}
	g.Expect(final.Status.Outcomes).To(Equal(outcomes))
	g.Expect(final.Status.Answered).To(Equal(outcomes["answered"]))

	// No attempt was dialed twice: one Dialing Event per call at most.
	var evs eventsv1.EventList
	g.Expect(k8s.List(ctx, &evs, client.InNamespace(o.ns))).To(Succeed())
	dialed := map[string]int{}
	for _, e := range evs.Items {
		if e.Reason == "Dialing" {
			dialed[e.Regarding.Name]++
		}
	}
	for call, times := range dialed {
		g.Expect(times).To(Equal(1), "%s was dialed %d times", call, times)
	}
}

func getCampaign(t *testing.T, ns, name string) *switchboardv1.Campaign {
	t.Helper()
	var c switchboardv1.Campaign
	NewWithT(t).Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &c)).To(Succeed())
	return &c
}

// campaignCalls are the Calls a campaign placed (all still in the cluster:
// the suite keeps calls for an hour).
func campaignCalls(t *testing.T, ns, name string) []switchboardv1.Call {
	t.Helper()
	var list switchboardv1.CallList
	NewWithT(t).Expect(k8s.List(context.Background(), &list, client.InNamespace(ns),
		client.MatchingLabels{switchboardv1.CampaignLabel: name})).To(Succeed())
	return list.Items
}
