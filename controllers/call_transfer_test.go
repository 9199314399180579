package controllers_test

import (
	"context"
	"regexp"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// An operator on call sees a call's transfer with kubectl get calls -o
// wide: its result and its target, in the Transfer and Transfer To
// columns; a call without one shows them empty. The status is written as
// the reconciler writes it, from the carrier's outcome.
func TestKubectlWideShowsTransfer(t *testing.T) {
	suite.Need(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns, agentID := newCallOrganization(t)
	testsupport.CreateCall(t, k8s, ns, "transferred", agentID, "+14155551234")
	testsupport.CreateCall(t, k8s, ns, "plain", agentID, "+14155551235")
	c := testsupport.WaitCallFinished(t, k8s, ns, "transferred")
	testsupport.WaitCallFinished(t, k8s, ns, "plain")

	at := time.Now()
	out := telephony.TransferOutcome{To: "+14155550100", Mode: switchboardv1.TransferCold,
		Method: switchboardv1.TransferByBridge, Result: switchboardv1.TransferBridged, SIPStatus: 200,
		RequestedAt: at, ConnectedAt: at.Add(4 * time.Second), SecondLeg: 12 * time.Second}
	patch := client.MergeFrom(c.DeepCopy())
	c.Status.Transfer = out.Status()
	g.Expect(k8s.Status().Patch(ctx, c, patch)).To(Succeed())
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
	g.Expect(c.Status.Transfer.SecondLegMS).To(HaveValue(Equal(int64(12000))))

	kc := controlPlane.Kubectl(t)
	wide := kc.MustRun(t, "get", "calls", "-n", ns, "-o", "wide").Stdout
	g.Expect(wide).To(MatchRegexp(`(?m)^NAME\s+CALL ID\s+AGENT\s+TO\s+STATUS\s+DISPOSITION\s+DURATION\s+AGE\s+SOURCE\s+REASON\s+ERROR\s+TRANSFER\s+TRANSFER TO\s+WORKER\s*$`), wide)
	g.Expect(wide).To(MatchRegexp(`(?m)^transferred\s+.*\s+bridged\s+`+regexp.QuoteMeta("+14155550100")+`\s*\S*\s*$`), wide)
	g.Expect(wide).To(MatchRegexp(`(?m)^plain\s+.*\s+agent_hangup\s*\S*\s*$`), wide)
	// Without -o wide, the table stays as it was.
	g.Expect(kc.MustRun(t, "get", "calls", "-n", ns).Stdout).NotTo(ContainSubstring("TRANSFER"))
}
