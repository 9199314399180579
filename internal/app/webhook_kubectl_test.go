package app_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestKubectlApplyRejectsInvalidWebhookEndpoints: a platform team learns at
// apply time what is wrong with an endpoint.
func TestKubectlApplyRejectsInvalidWebhookEndpoints(t *testing.T) {
	t.Parallel()
	kc := newKubectlCLI(t)
	ns := resNamespace(t)
	for name, tc := range map[string]struct{ spec, want string }{
		"not-http":      {`url: ftp://hooks.example.com/x`, "url must be an absolute https URL"},
		"relative":      {`url: /hooks`, "url must be an absolute https URL"},
		"unknown-event": {"url: https://hooks.example.com/x\n  events: [call.bogus]", `Unsupported value: "call.bogus"`},
		"no-url":        {`description: nothing`, "spec.url: Required value"},
		"empty-secret":  {"url: https://hooks.example.com/x\n  secretRef: {name: \"\"}", "spec.secretRef.name"},
	} {
		res := kc.apply(t, ns, "apiVersion: switchboard.dev/v1alpha1\nkind: WebhookEndpoint\nmetadata:\n  name: "+
			name+"\nspec:\n  "+tc.spec+"\n")
		if res.exitCode == 0 || !strings.Contains(res.stderr, tc.want) {
			t.Errorf("%s: want an error containing %q, got %v", name, tc.want, res)
		}
	}
}

// TestKubectlGetWebhooksShowsColumns: `kubectl get webhookendpoints` tells
// the story without -o yaml. Deliveries are not resources: the cluster does
// not know the kind, and the REST delivery log holds them.
func TestKubectlGetWebhooksShowsColumns(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	kc := newKubectlCLI(t)
	o := newOrg(t)
	rc := newReceiver(t, nil)
	res := kc.apply(t, o.ns, `apiVersion: switchboard.dev/v1alpha1
kind: WebhookEndpoint
metadata:
  name: crm
spec:
  url: `+rc.url()+`
  events: [call.ended]
  description: CRM call outcomes
`)
	g.Expect(res.exitCode).To(BeZero(), res.String())
	id := o.createCall(t, "+14155551234", nil)
	g.Eventually(func() int { return len(rc.forCall(id)) }, 20*time.Second, 20*time.Millisecond).Should(Equal(1))

	var out string
	g.Eventually(func() string {
		out = kc.mustRun(t, "get", "webhookendpoints", "-n", o.ns).stdout
		return out
	}, 10*time.Second, 100*time.Millisecond).Should(MatchRegexp(`(?m)^crm\s+we_[0-9a-f]{32}\s+` +
		regexp.QuoteMeta(rc.url()) + `\s+True\s+False\s+200\s+\S+\s+\S+\s*$`))
	g.Expect(out).To(MatchRegexp(`^NAME\s+ID\s+URL\s+READY\s+DEGRADED\s+LAST RESULT\s+LAST DELIVERY\s+AGE\s*\n`))

	gone := kc.run(t, "get", "webhookdeliveries", "-n", o.ns)
	g.Expect(gone.exitCode).NotTo(BeZero(), gone.String())
	g.Expect(gone.stderr).To(ContainSubstring(`the server doesn't have a resource type "webhookdeliveries"`))
	ds := deliveriesOf(t, o.ns, callName(id))
	g.Expect(ds).To(HaveLen(1))
	g.Expect(ds[0].Spec.Event).To(Equal("call.ended"))
	g.Expect(ds[0].Status.Phase).To(BeEquivalentTo("succeeded"))

	// The short names and the switchboard category reach them too.
	g.Expect(kc.mustRun(t, "get", "whe", "-n", o.ns).stdout).To(ContainSubstring("crm"))
	g.Expect(kc.mustRun(t, "get", "switchboard", "-n", o.ns).stdout).To(ContainSubstring("webhookendpoint.switchboard.dev/crm"))
}
