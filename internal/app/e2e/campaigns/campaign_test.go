package campaigns_test

// A campaign of 1,000 contacts on the simulated carrier, with the outcomes
// its numbers choose (DESIGN.md) and a redial policy, the operator stopped
// in place halfway and started again: every contact ends final, each is
// called as often as the policy says, never twice for one attempt, and the
// counters match the calls.

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
)

func TestCampaignOfAThousandAcrossARestart(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	o := NewOrg(t)
	const n = 1000
	name := "reminders"
	added, err := HistoryStore.AddContacts(ctx, o.Ns, name, CampaignContacts(n), time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(added).To(Equal(n))
	campaign := &switchboardv1.Campaign{ObjectMeta: metav1.ObjectMeta{Namespace: o.Ns, Name: name},
		Spec: CampaignSpec(o.AgentID)}
	g.Expect(K8s.Create(ctx, campaign)).To(Succeed())

	// Halfway, the operator stops in place and a new one takes over.
	g.Eventually(func() int64 { return GetCampaign(t, o.Ns, name).Status.Done }, 5*time.Minute, 200*time.Millisecond).
		Should(BeNumerically(">=", n/2))
	WithOperator(t, nil)

	var final *switchboardv1.Campaign
	g.Eventually(func() switchboardv1.CampaignState {
		final = GetCampaign(t, o.Ns, name)
		return final.Status.State
	}, 10*time.Minute, time.Second).Should(Equal(switchboardv1.CampaignCompleted))
	g.Expect(final.Status.Total).To(Equal(int64(n)))
	g.Expect(final.Status.Done).To(Equal(int64(n)))
	g.Expect(final.Status.Pending + final.Status.Dialing).To(BeZero())

	calls := CampaignCalls(t, o.Ns, name)
	perNumber := map[string][]switchboardv1.Call{}
	for _, c := range calls {
		perNumber[c.Spec.ToNumber] = append(perNumber[c.Spec.ToNumber], c)
		g.Expect(c.Spec.Source).To(Equal(switchboardv1.SourceCampaign))
		g.Expect(string(c.MetadataJSON())).To(ContainSubstring(`"campaign_id":"` + name + `"`))
	}
	outcomes := map[string]int64{}
	for i, contact := range CampaignContacts(n) {
		want := CampaignOutcomes[i%len(CampaignOutcomes)]
		got := perNumber[contact.ToNumber]
		g.Expect(got).To(HaveLen(want.Calls), "%s (%s) was called %d times", contact.ToNumber, want.Outcome, len(got))
		outcomes[want.Outcome]++
	}
	g.Expect(final.Status.Outcomes).To(Equal(outcomes))
	g.Expect(final.Status.Answered).To(Equal(outcomes["answered"]))

	// No attempt was dialed twice: one Dialing Event per call at most.
	var evs eventsv1.EventList
	g.Expect(K8s.List(ctx, &evs, client.InNamespace(o.Ns))).To(Succeed())
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
