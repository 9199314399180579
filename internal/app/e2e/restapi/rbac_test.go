package restapi_test

// Least privilege: the suite's operator runs as Switchboard's service
// account, bound to exactly the roles of config/rbac (the ClusterRole that
// controller-gen generates, and the ClusterRole switchboard-organization
// bound in each organization namespace), so every test of the suite runs
// with a deployment's rights. These tests check what those rights allow
// and refuse, and what a platform team sees while setting up an
// organization.

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
	"github.com/switchboard-dev/switchboard/internal/devenv"
	"github.com/switchboard-dev/switchboard/internal/organizations"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// The operator can neither read, list nor write the Secrets of kube-system
// or of a namespace that is no organization, nor their ConfigMaps; in an
// organization namespace it reads and writes Secrets and reads (only
// reads) the ConfigMaps that play steps name.
func TestManagerHoldsNoSecretsOutsideOrganizations(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	manager := AsManager(t)
	for _, ns := range []string{metav1.NamespaceSystem, ControlPlane.NewNamespace(t, "plain-")} {
		theirs := OpaqueSecret(ns)
		g.Expect(K8s.Create(ctx, theirs)).To(Succeed())
		ExpectForbidden(g, manager.Get(ctx, client.ObjectKeyFromObject(theirs), &corev1.Secret{}), "get Secret in "+ns)
		ExpectForbidden(g, manager.List(ctx, &corev1.SecretList{}, client.InNamespace(ns)), "list Secrets in "+ns)
		ExpectForbidden(g, manager.Create(ctx, OpaqueSecret(ns)), "create Secret in "+ns)
		theirs.Data["password"] = []byte("changed")
		ExpectForbidden(g, manager.Update(ctx, theirs), "update Secret in "+ns)
		ExpectForbidden(g, manager.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kube-root-ca.crt"}, &corev1.ConfigMap{}),
			"get ConfigMap in "+ns)
	}
	ExpectForbidden(g, manager.List(ctx, &corev1.SecretList{}), "list Secrets across the cluster")

	org := ControlPlane.NewOrganization(t, "org-")
	ours := OpaqueSecret(org)
	g.Expect(manager.Create(ctx, ours)).To(Succeed())
	g.Expect(manager.Get(ctx, client.ObjectKeyFromObject(ours), ours)).To(Succeed())
	g.Expect(manager.List(ctx, &corev1.SecretList{}, client.InNamespace(org))).To(Succeed())
	ours.Data["password"] = []byte("changed")
	g.Expect(manager.Update(ctx, ours)).To(Succeed())
	ExpectForbidden(g, manager.Delete(ctx, ours), "delete Secret in an organization")
	audio := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: org, Name: "jingles"},
		BinaryData: map[string][]byte{"tone.wav": []byte("RIFF")}}
	g.Expect(K8s.Create(ctx, audio)).To(Succeed())
	g.Expect(manager.Get(ctx, client.ObjectKeyFromObject(audio), &corev1.ConfigMap{})).To(Succeed())
	ExpectForbidden(g, manager.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(org)), "list ConfigMaps")
}

// In an organization namespace the operator does its whole job with those
// rights: it serves an API key, generates and rotates a signing Secret
// through the REST API, places a call, and delivers its events signed with
// both secrets of the rotation.
func TestOrganizationWorksWithItsRoleBindingAlone(t *testing.T) {
	g := NewWithT(t)
	o := NewOrg(t)
	rc := NewReceiver(t, nil)
	created := CreateEndpoint(t, o.Key, map[string]any{"url": rc.URL()})
	id, first := created["id"].(string), created["secret"].(string)
	r := Do(t, "POST", EndpointPath(id, "/rotate-secret"), o.Key, nil)
	ExpectStatusJSON(t, r, http.StatusOK)
	rc.Trust(first, ExpectSecret(g, r.Body["secret"]))

	callID := o.CreateCall(t, "+14155550100", nil)
	g.Eventually(func() []string { return Events(rc.ForCall(callID)) }, 20*time.Second, 50*time.Millisecond).
		Should(ContainElement("call.ended"))
	for _, d := range rc.ForCall(callID) {
		ExpectSigned(g, d)
	}
}

// A namespace labelled an organization without its RoleBinding is reported
// with a Warning Event and its keys are not served, while other
// organizations are; once the RoleBinding exists its keys are served,
// without a restart.
func TestOrganizationWithoutRoleBinding(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "unbound-",
		Labels: map[string]string{switchboardv1.OrganizationLabel: "true"}}}
	g.Expect(K8s.Create(ctx, ns)).To(Succeed())
	key := "sk_test_" + RandHex(16)
	g.Expect(K8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "api-key"},
		Type: switchboardv1.APIKeySecretType, Data: map[string][]byte{switchboardv1.APIKeySecretKey: []byte(key)}})).To(Succeed())

	g.Eventually(func() []string { return EventReasons(t, metav1.NamespaceDefault, ns.Name) }, 10*time.Second, 100*time.Millisecond).
		Should(ContainElement(organizations.ReasonAccessDenied))
	NewOrg(t) // another organization's key is served meanwhile (newOrg waits for it)
	g.Expect(Do(t, "GET", "/v1/calls/call_0", key, nil).Status).To(Equal(http.StatusUnauthorized))

	g.Expect(devenv.AddOrganization(ctx, K8s, ControlPlane.RBACDir, ns.Name)).To(Succeed())
	g.Eventually(func() int { return Do(t, "GET", "/v1/calls/call_0", key, nil).Status }, 45*time.Second, 100*time.Millisecond).
		Should(Equal(http.StatusNotFound), "the key is served once the RoleBinding exists")
}

// Removing the organization label revokes the namespace's keys at once
// (Switchboard stops watching its Secrets, so it could not see them
// deleted); labelling it again serves them again.
func TestOrganizationLabelRevokesAndRestoresKeys(t *testing.T) {
	g := NewWithT(t)
	o := NewOrg(t)
	label := func(value string) {
		patch := []byte(`{"metadata":{"labels":{"` + switchboardv1.OrganizationLabel + `":` + value + `}}}`)
		g.Expect(K8s.Patch(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.Ns}},
			client.RawPatch(types.MergePatchType, patch))).To(Succeed())
	}
	status := func() int { return Do(t, "GET", "/v1/calls/call_0", o.Key, nil).Status }

	label("null")
	g.Eventually(status, 5*time.Second, 20*time.Millisecond).Should(Equal(http.StatusUnauthorized))
	label(`"true"`)
	g.Eventually(status, 10*time.Second, 20*time.Millisecond).Should(Equal(http.StatusNotFound))
}

// A platform engineer applies an Agent, a WebhookEndpoint and an API key
// into a new namespace, as the README shows, before making it an
// organization: the key answers a bare 401 (a caller learns nothing of the
// namespace), and the Agent and the endpoint say why, on their Ready
// condition and in a Warning Event. The commands their message gives, run
// in its order, make the namespace an organization: both turn Ready and the
// key works, without a restart.
func TestNewNamespaceSaysWhyItsKeyFails(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := ControlPlane.NewNamespace(t, "new-")
	key := "sk_test_" + RandHex(16)
	g.Expect(K8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "backend-key"},
		Type: switchboardv1.APIKeySecretType, Data: map[string][]byte{switchboardv1.APIKeySecretKey: []byte(key)}})).To(Succeed())
	agent := CreateAgent(t, ns, "reminder", func(*switchboardv1.AgentSpec) {})
	ep := &switchboardv1.WebhookEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "crm"},
		Spec: switchboardv1.WebhookEndpointSpec{URL: NewReceiver(t, nil).URL()}}
	g.Expect(K8s.Create(ctx, ep)).To(Succeed())
	ready := func(obj client.Object, conds *[]metav1.Condition) func(Gomega) metav1.Condition {
		return func(g Gomega) metav1.Condition {
			g.Expect(K8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
			return testsupport.Ready(g, *conds)
		}
	}
	makeIt := switchboardv1.OrganizationRoleBindingCommand(ns) + " && " + switchboardv1.OrganizationLabelCommand(ns)
	notAnOrganization := And(HaveField("Status", metav1.ConditionFalse),
		HaveField("Reason", switchboardv1.ReasonNotAnOrganization), HaveField("Message", HaveSuffix(makeIt)))
	g.Eventually(ready(agent, &agent.Status.Conditions), ResWait, ResPoll).Should(notAnOrganization)
	g.Eventually(ready(ep, &ep.Status.Conditions), ResWait, ResPoll).Should(notAnOrganization)
	for _, name := range []string{agent.Name, ep.Name} {
		g.Eventually(func() []string { return EventReasons(t, ns, name) }, ResWait, ResPoll).
			Should(ContainElement(switchboardv1.ReasonNotAnOrganization), "a Warning Event about %s", name)
	}
	r := Do(t, "GET", "/v1/calls/call_0", key, nil)
	g.Expect(ExpectStringDetail(t, r, http.StatusUnauthorized)).To(Equal("Invalid API key."), "nothing more than 401")

	kc := ControlPlane.Kubectl(t)
	for _, cmd := range strings.Split(makeIt, " && ") {
		kc.MustRun(t, strings.Fields(cmd)[1:]...)
	}
	g.Eventually(ready(agent, &agent.Status.Conditions), ResWait, ResPoll).
		Should(HaveField("Reason", switchboardv1.ReasonReconciled))
	g.Eventually(ready(ep, &ep.Status.Conditions), ResWait, ResPoll).Should(HaveField("Status", metav1.ConditionTrue))
	g.Eventually(func() int { return KeyStatus(t, key) }, ResWait, ResPoll).Should(Equal(http.StatusNotFound),
		"the key is served")
	o := &Org{Ns: ns, Key: key, AgentID: agent.ResolvedID(), Agent: agent}
	ExpectStatusJSON(t, Do(t, "POST", "/v1/calls", key, o.CallBody("+14155551234", nil)), http.StatusCreated)
}
