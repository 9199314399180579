package controllers_test

// An organization over its recording storage quota has its calls go on,
// their recordings not stored, and says so.

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/quota"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

func TestRecordingsOverTheOrganizationsQuotaAreNotStored(t *testing.T) {
	suite.Need(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns, agentID := newCallOrganization(t)
	var n corev1.Namespace
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: ns}, &n)).To(Succeed())
	patch := client.MergeFrom(n.DeepCopy())
	n.Annotations = map[string]string{quota.RecordingStorageAnnotation: "1Ki"}
	g.Expect(k8s.Patch(ctx, &n, patch)).To(Succeed())

	// Under the quota (nothing stored yet): stored, and archived.
	testsupport.CreateCall(t, k8s, ns, "first", agentID, "+14155551234")
	first := testsupport.WaitCallFinished(t, k8s, ns, "first")
	g.Expect(first.Status.Recording).NotTo(BeNil())
	g.Eventually(func() (int64, error) { return historyStore.RecordingBytes(ctx, ns) }, resWait, resPoll).
		To(Equal(first.Status.Recording.SizeBytes))
	g.Expect(first.Status.Recording.SizeBytes).To(BeNumerically(">", 1024))

	// Over it: the call completes, its recording is not stored, and
	// kubectl describe says why.
	testsupport.CreateCall(t, k8s, ns, "second", agentID, "+14155551234")
	second := testsupport.WaitCallFinished(t, k8s, ns, "second")
	g.Expect(second.Status.Phase).To(Equal(switchboardv1.CallEnded))
	g.Expect(second.Status.Disposition).To(Equal(switchboardv1.DispositionAnswered))
	g.Expect(second.Status.Recording).To(BeNil())
	g.Expect(second.Status.Analysis).NotTo(BeNil())
	g.Eventually(warnings("Call", second), resWait, resPoll).To(ContainElement("RecordingNotStored"))
	out := controlPlane.Kubectl(t).MustRun(t, "describe", "call", "second", "-n", ns).Stdout
	g.Expect(out).To(ContainSubstring("quota is 1Ki"))
	g.Expect(historyStore.RecordingBytes(ctx, ns)).To(Equal(first.Status.Recording.SizeBytes))
}
