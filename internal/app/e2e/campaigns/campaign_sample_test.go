package campaigns_test

import (
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
)

// The sample Campaign `make run` applies completes on the simulated
// carrier, each contact's outcome the one its comment promises, and
// kubectl describe shows its counters.
func TestSampleCampaignCompletes(t *testing.T) {
	g := NewWithT(t)
	kc := ControlPlane.Kubectl(t)
	ns := ResNamespace(t)
	samples := filepath.Join(RepoRoot, "config", "samples")
	kc.MustRun(t, "apply", "-n", ns, "-f", filepath.Join(samples, "switchboard_v1alpha1_agent.yaml"))
	res := kc.MustRun(t, "apply", "-n", ns, "-f", filepath.Join(samples, "switchboard_v1alpha1_campaign.yaml"))
	g.Expect(res.Stdout).To(ContainSubstring("campaign.switchboard.dev/flu-shot-reminders created"))
	var c *switchboardv1.Campaign
	g.Eventually(func() switchboardv1.CampaignState {
		c = GetCampaign(t, ns, "flu-shot-reminders")
		return c.Status.State
	}, 2*time.Minute, 200*time.Millisecond).Should(Equal(switchboardv1.CampaignCompleted))
	g.Expect(c.Status.Total).To(Equal(int64(3)))
	g.Expect(c.Status.Outcomes).To(Equal(map[string]int64{"answered": 1, "answering_machine": 1, "busy": 1}))
	g.Expect(CampaignCalls(t, ns, "flu-shot-reminders")).To(HaveLen(4), "three contacts, the busy one twice")
	described := kc.MustRun(t, "describe", "campaign", "-n", ns, "flu-shot-reminders").Stdout
	g.Expect(described).To(ContainSubstring("3 of 3 contacts done, 1 answered"))
}
