package webhooks_test

import (
	"regexp"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
)

// TestKubectlGetWebhooksShowsColumns: `kubectl get webhookendpoints` tells
// the story without -o yaml. Deliveries are not resources: the cluster does
// not know the kind, and the REST delivery log holds them.
func TestKubectlGetWebhooksShowsColumns(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	kc := ControlPlane.Kubectl(t)
	o := NewOrg(t)
	rc := NewReceiver(t, nil)
	res := kc.Apply(t, o.Ns, `apiVersion: switchboard.dev/v1alpha1
kind: WebhookEndpoint
metadata:
  name: crm
spec:
  url: `+rc.URL()+`
  events: [call.ended]
  description: CRM call outcomes
`)
	g.Expect(res.ExitCode).To(BeZero(), res.String())
	id := o.CreateCall(t, "+14155551234", nil)
	g.Eventually(func() int { return len(rc.ForCall(id)) }, 20*time.Second, 20*time.Millisecond).Should(Equal(1))

	var out string
	g.Eventually(func() string {
		out = kc.MustRun(t, "get", "webhookendpoints", "-n", o.Ns).Stdout
		return out
	}, 10*time.Second, 100*time.Millisecond).Should(MatchRegexp(`(?m)^crm\s+we_[0-9a-f]{32}\s+` +
		regexp.QuoteMeta(rc.URL()) + `\s+True\s+False\s+200\s+\S+\s+\S+\s*$`))
	g.Expect(out).To(MatchRegexp(`^NAME\s+ID\s+URL\s+READY\s+DEGRADED\s+LAST RESULT\s+LAST DELIVERY\s+AGE\s*\n`))

	gone := kc.Run(t, "get", "webhookdeliveries", "-n", o.Ns)
	g.Expect(gone.ExitCode).NotTo(BeZero(), gone.String())
	g.Expect(gone.Stderr).To(ContainSubstring(`the server doesn't have a resource type "webhookdeliveries"`))
	ds := DeliveriesOf(t, o.Ns, CallName(id))
	g.Expect(ds).To(HaveLen(1))
	g.Expect(ds[0].Spec.Event).To(Equal("call.ended"))
	g.Expect(ds[0].Status.Phase).To(BeEquivalentTo("succeeded"))

	// The short names and the switchboard category reach them too.
	g.Expect(kc.MustRun(t, "get", "whe", "-n", o.Ns).Stdout).To(ContainSubstring("crm"))
	g.Expect(kc.MustRun(t, "get", "switchboard", "-n", o.Ns).Stdout).To(ContainSubstring("webhookendpoint.switchboard.dev/crm"))
}
