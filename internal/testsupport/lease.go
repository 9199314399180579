package testsupport

import (
	"context"
	"testing"
	"time"

	"github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-dev/switchboard/internal/devenv"
)

// WaitLeaseHolder waits until a replica other than previous ("" for any)
// holds Switchboard's leader-election lease and returns who holds it. A
// failure adds what explain returns then (the replicas' output, say), when
// it is not nil.
func WaitLeaseHolder(t testing.TB, c client.Client, previous string, explain func() string) string {
	t.Helper()
	var holder string
	gomega.NewWithT(t).Eventually(func() string {
		var lease coordinationv1.Lease
		_ = c.Get(context.Background(), client.ObjectKey{Namespace: devenv.LeaderElectionNamespace, Name: "switchboard.dev"}, &lease)
		holder = ptr.Deref(lease.Spec.HolderIdentity, "")
		return holder
	}, time.Minute, 50*time.Millisecond).Should(gomega.And(gomega.Not(gomega.BeEmpty()), gomega.Not(gomega.Equal(previous))),
		func() string {
			if explain == nil {
				return "no replica took the lease"
			}
			return "no replica took the lease\n" + explain()
		})
	return holder
}
