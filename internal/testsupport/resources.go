package testsupport

import (
	"context"
	"testing"
	"time"

	"github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// How long the resource helpers wait for a reconciler: long enough for a
// whole answered call on the simulated carrier (ring, talk, recording,
// analysis), polled often.
const (
	ResourceWait = 20 * time.Second
	ResourcePoll = 25 * time.Millisecond
)

// AgentFrom is the caller id of the agents CreateAgent makes.
const AgentFrom = "+14155550100"

// CreateAgent creates an outbound Agent that requires customer_name and
// extracts three fields, after mutate has adjusted its spec.
func CreateAgent(t testing.TB, c client.Client, ns, name string, mutate func(*switchboardv1.AgentSpec)) *switchboardv1.Agent {
	t.Helper()
	a := &switchboardv1.Agent{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: switchboardv1.AgentSpec{
			FromNumber:        AgentFrom,
			Greeting:          "Hello from the test clinic.",
			RequiredVariables: []string{"customer_name"},
			ExtractedData: []switchboardv1.ExtractedDataField{
				{Name: "customer_name", Type: switchboardv1.ExtractedString},
				{Name: "confirmed", Type: switchboardv1.ExtractedBoolean},
				{Name: "party_size", Type: switchboardv1.ExtractedNumber},
			},
		},
	}
	mutate(&a.Spec)
	gomega.NewWithT(t).Expect(c.Create(context.Background(), a)).To(gomega.Succeed())
	return a
}

// CreateCall creates a Call the way a platform team does: a resource with
// no source and no call id, named by them.
func CreateCall(t testing.TB, c client.Client, ns, name, agentID, to string) *switchboardv1.Call {
	t.Helper()
	call := &switchboardv1.Call{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: switchboardv1.CallSpec{AgentID: agentID, ToNumber: to,
			Variables: &apiextensionsv1.JSON{Raw: []byte(`{"customer_name":"Ada"}`)}},
	}
	gomega.NewWithT(t).Expect(c.Create(context.Background(), call)).To(gomega.Succeed())
	return call
}

// WaitCallFinished waits until the Call is final and its Ready condition
// says it is fully processed (Completed) or failed, and returns it.
func WaitCallFinished(t testing.TB, c client.Client, ns, name string) *switchboardv1.Call {
	t.Helper()
	var call switchboardv1.Call
	gomega.NewWithT(t).Eventually(func(g gomega.Gomega) {
		g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &call)).To(gomega.Succeed())
		ready := apimeta.FindStatusCondition(call.Status.Conditions, switchboardv1.ReadyCondition)
		g.Expect(ready).NotTo(gomega.BeNil())
		g.Expect(ready.Reason).To(gomega.BeElementOf(switchboardv1.ReasonCompleted, switchboardv1.ReasonFailed))
	}, ResourceWait, ResourcePoll).Should(gomega.Succeed(), "Call %s/%s never finished", ns, name)
	return &call
}

// Ready returns the Ready condition of conds, failing g when there is none.
func Ready(g gomega.Gomega, conds []metav1.Condition) metav1.Condition {
	ready := apimeta.FindStatusCondition(conds, switchboardv1.ReadyCondition)
	g.Expect(ready).NotTo(gomega.BeNil(), "no Ready condition in %v", conds)
	return *ready
}

// ExpectAbsent checks that obj's kind holds nothing named ns/name: what a
// refused apply must leave behind.
func ExpectAbsent(t testing.TB, c client.Client, obj client.Object, ns, name string) {
	t.Helper()
	err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj)
	gomega.NewWithT(t).Expect(apierrors.IsNotFound(err)).To(gomega.BeTrue(),
		"%T %s/%s exists after a refused apply (err %v)", obj, ns, name, err)
}

// CreateTrunk creates a SIPTrunk at address, with the credentials of the
// Secret named secret ("" for none).
func CreateTrunk(t testing.TB, c client.Client, ns, name, address, secret string) *switchboardv1.SIPTrunk {
	t.Helper()
	tr := &switchboardv1.SIPTrunk{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: switchboardv1.SIPTrunkSpec{Address: address}}
	if secret != "" {
		tr.Spec.CredentialsSecretRef = &switchboardv1.SecretReference{Name: secret}
	}
	gomega.NewWithT(t).Expect(c.Create(context.Background(), tr)).To(gomega.Succeed())
	DeleteOnCleanup(t, c, tr)
	return tr
}

// DeleteOnCleanup deletes obj when the test ends. A SIPTrunk left behind
// is probed for the rest of the suite, and its probes, each waiting for
// an answer that never comes once the test's peer is gone, would delay the
// probes of the trunks later tests create.
func DeleteOnCleanup(t testing.TB, c client.Client, obj client.Object) {
	t.Cleanup(func() {
		if err := c.Delete(context.Background(), obj); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting %s/%s: %v", obj.GetNamespace(), obj.GetName(), err)
		}
	})
}
