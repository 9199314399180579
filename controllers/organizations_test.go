package controllers_test

// The reconcilers in a namespace that is no organization: its API keys
// answer a bare 401 and Switchboard may not read its Secrets, so its
// resources say why, and what to run.

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// readyOf reads obj's Ready condition (conds points into obj), for Eventually.
func readyOf(obj client.Object, conds *[]metav1.Condition) func(Gomega) metav1.Condition {
	return func(g Gomega) metav1.Condition {
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		return testsupport.Ready(g, *conds)
	}
}

// notReady matches a Ready condition False for reason, whose message holds
// each of says.
func notReady(reason string, says ...string) types.GomegaMatcher {
	m := []types.GomegaMatcher{HaveField("Status", metav1.ConditionFalse), HaveField("Reason", reason)}
	for _, s := range says {
		m = append(m, HaveField("Message", ContainSubstring(s)))
	}
	return And(m...)
}

// warnings lists the reasons of the Warning Events about obj, of kind.
func warnings(kind string, obj client.Object) func(Gomega) []string {
	return func(g Gomega) []string {
		var list eventsv1.EventList
		g.Expect(k8s.List(context.Background(), &list, client.InNamespace(obj.GetNamespace()))).To(Succeed())
		var reasons []string
		for _, e := range list.Items {
			if e.Type == corev1.EventTypeWarning && e.Regarding.Kind == kind && e.Regarding.Name == obj.GetName() {
				reasons = append(reasons, e.Reason)
			}
		}
		return reasons
	}
}

// commandsIn returns the kubectl commands a message ends with
// ("Make it one: kubectl ... && kubectl ...").
func commandsIn(t *testing.T, msg string) [][]string {
	t.Helper()
	_, tail, ok := strings.Cut(msg, "Make it one: ")
	if !ok {
		t.Fatalf("no commands in %q", msg)
	}
	var cmds [][]string
	for _, c := range strings.Split(tail, " && ") {
		args := strings.Fields(c)
		if len(args) < 2 || args[0] != "kubectl" {
			t.Fatalf("not a kubectl command: %q in %q", c, msg)
		}
		cmds = append(cmds, args[1:])
	}
	return cmds
}

// An Agent, a WebhookEndpoint and a SIPTrunk applied in a namespace that is
// no organization say why they cannot work, on their Ready condition and in
// a Warning Event; the commands the message gives make the namespace an
// organization, and they recover without a restart. Labelled without its
// RoleBinding (the commands run one at a time), the namespace still serves
// no API key, and the Agent and endpoint say that too.
func TestResourcesOutsideOrganizationsSayWhy(t *testing.T) {
	suite.Need(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := controlPlane.NewNamespace(t, "plain-")
	ep := &switchboardv1.WebhookEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "receiver"},
		Spec: switchboardv1.WebhookEndpointSpec{URL: newTestReceiver(t).srv.URL + "/hooks"}}
	g.Expect(k8s.Create(ctx, ep)).To(Succeed())
	agent := testsupport.CreateAgent(t, k8s, ns, "reminder", func(*switchboardv1.AgentSpec) {})
	notAnOrganization := notReady(switchboardv1.ReasonNotAnOrganization, "is not an organization",
		switchboardv1.OrganizationRoleBindingCommand(ns), switchboardv1.OrganizationLabelCommand(ns))
	g.Eventually(readyOf(agent, &agent.Status.Conditions), resWait, resPoll).Should(notAnOrganization)
	g.Eventually(readyOf(ep, &ep.Status.Conditions), resWait, resPoll).Should(notAnOrganization)
	g.Eventually(warnings("Agent", agent), resWait, resPoll).Should(ContainElement(switchboardv1.ReasonNotAnOrganization))
	g.Eventually(warnings("WebhookEndpoint", ep), resWait, resPoll).Should(ContainElement(switchboardv1.ReasonNotAnOrganization))

	g.Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "carrier"},
		Data: map[string][]byte{switchboardv1.SIPUsernameKey: []byte("u"), switchboardv1.SIPPasswordKey: []byte("p")}})).To(Succeed())
	testsupport.CreateTrunk(t, k8s, ns, "carrier", "sip:127.0.0.1:5999", "carrier")
	trunk := &switchboardv1.SIPTrunk{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "carrier"}}
	g.Eventually(readyOf(trunk, &trunk.Status.Conditions), resWait, resPoll).Should(notReady(
		switchboardv1.ReasonSecretAccessDenied, switchboardv1.OrganizationRoleBindingCommand(ns), switchboardv1.OrganizationLabelCommand(ns)))

	kc := controlPlane.Kubectl(t)
	cmds := commandsIn(t, readyOf(agent, &agent.Status.Conditions)(g).Message)
	g.Expect(cmds).To(HaveLen(2))
	kc.MustRun(t, cmds[1]...) // the label alone
	noRoleBinding := notReady(switchboardv1.ReasonSecretAccessDenied, switchboardv1.OrganizationRoleBindingCommand(ns))
	g.Eventually(readyOf(agent, &agent.Status.Conditions), resWait, resPoll).Should(noRoleBinding)
	g.Eventually(readyOf(ep, &ep.Status.Conditions), resWait, resPoll).Should(noRoleBinding)
	g.Eventually(warnings("Agent", agent), resWait, resPoll).Should(ContainElement(switchboardv1.ReasonSecretAccessDenied))

	kc.MustRun(t, cmds[0]...) // the RoleBinding, which no watch tells of
	g.Eventually(readyOf(trunk, &trunk.Status.Conditions), 45*time.Second, 100*time.Millisecond).
		ShouldNot(HaveField("Reason", switchboardv1.ReasonSecretAccessDenied), "the trunk reads its credentials")
	g.Eventually(readyOf(agent, &agent.Status.Conditions), 45*time.Second, 100*time.Millisecond).Should(And(
		HaveField("Status", metav1.ConditionTrue), HaveField("Reason", switchboardv1.ReasonReconciled)))
	g.Eventually(readyOf(ep, &ep.Status.Conditions), 45*time.Second, 100*time.Millisecond).
		Should(HaveField("Status", metav1.ConditionTrue), "the endpoint has its signing Secret")
}

// Removing a namespace's organization label turns its Agents and endpoints
// NotAnOrganization at once, ready ones included, and labelling it again
// turns them Ready: the reconcilers watch namespaces.
func TestOrganizationLabelTurnsResourcesReady(t *testing.T) {
	suite.Need(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := newOrganization(t)
	agent := testsupport.CreateAgent(t, k8s, ns, "reminder", func(*switchboardv1.AgentSpec) {})
	ep := createEndpoint(t, ns, "receiver", newTestReceiver(t).srv.URL+"/hooks")
	ready := HaveField("Status", metav1.ConditionTrue)
	g.Eventually(readyOf(agent, &agent.Status.Conditions), resWait, resPoll).Should(ready)
	g.Eventually(readyOf(ep, &ep.Status.Conditions), resWait, resPoll).Should(ready)

	label := func(value string) {
		patch := []byte(`{"metadata":{"labels":{"` + switchboardv1.OrganizationLabel + `":` + value + `}}}`)
		g.Expect(k8s.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
			client.RawPatch("application/merge-patch+json", patch))).To(Succeed())
	}
	label("null")
	notAnOrganization := notReady(switchboardv1.ReasonNotAnOrganization, switchboardv1.OrganizationLabelCommand(ns))
	g.Eventually(readyOf(agent, &agent.Status.Conditions), 5*time.Second, resPoll).Should(notAnOrganization)
	g.Eventually(readyOf(ep, &ep.Status.Conditions), 5*time.Second, resPoll).Should(notAnOrganization)
	label(`"true"`)
	g.Eventually(readyOf(agent, &agent.Status.Conditions), 5*time.Second, resPoll).Should(ready)
	g.Eventually(readyOf(ep, &ep.Status.Conditions), 5*time.Second, resPoll).Should(ready)
}
