package controllers_test

// The reconcilers in a namespace that is no organization: they may not read
// its Secrets, and say so.

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/devenv"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// A WebhookEndpoint or SIPTrunk applied in a namespace that is no
// organization says why it cannot work, and recovers once the namespace is
// made one.
func TestResourcesOutsideOrganizationsSayWhy(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controlPlane.NewNamespace(t, "plain-")
	ep := &switchboardv1.WebhookEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "receiver"},
		Spec: switchboardv1.WebhookEndpointSpec{URL: newTestReceiver(t).srv.URL + "/hooks"}}
	g.Expect(k8s.Create(ctx, ep)).To(Succeed())
	readyOf := func(obj client.Object, conds *[]metav1.Condition) func(Gomega) metav1.Condition {
		return func(g Gomega) metav1.Condition {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
			return testsupport.Ready(g, *conds)
		}
	}
	denied := And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", switchboardv1.ReasonSecretAccessDenied),
		HaveField("Message", ContainSubstring(switchboardv1.OrganizationLabel+"=true")),
		HaveField("Message", ContainSubstring(switchboardv1.OrganizationClusterRole)))
	g.Eventually(readyOf(ep, &ep.Status.Conditions), 10*time.Second, 50*time.Millisecond).Should(denied)

	g.Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "carrier"},
		Data: map[string][]byte{switchboardv1.SIPUsernameKey: []byte("u"), switchboardv1.SIPPasswordKey: []byte("p")}})).To(Succeed())
	testsupport.CreateTrunk(t, k8s, ns, "carrier", "sip:127.0.0.1:5999", "carrier")
	trunk := &switchboardv1.SIPTrunk{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "carrier"}}
	g.Eventually(readyOf(trunk, &trunk.Status.Conditions), 10*time.Second, 50*time.Millisecond).Should(denied)

	g.Expect(devenv.AddOrganization(ctx, k8s, controlPlane.RBACDir, ns)).To(Succeed())
	g.Eventually(readyOf(trunk, &trunk.Status.Conditions), 20*time.Second, 50*time.Millisecond).
		ShouldNot(HaveField("Reason", switchboardv1.ReasonSecretAccessDenied), "the trunk reads its credentials")
	g.Eventually(readyOf(ep, &ep.Status.Conditions), 45*time.Second, 100*time.Millisecond).
		Should(HaveField("Status", metav1.ConditionTrue), "the endpoint has its signing Secret")
}
