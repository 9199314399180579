package apptest

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-dev/switchboard/internal/history"
)

// EventReasons lists the reasons of the Kubernetes Events about an object.
func EventReasons(t testing.TB, ns, name string) []string {
	t.Helper()
	var list eventsv1.EventList
	NewWithT(t).Expect(K8s.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Name == name {
			out = append(out, e.Reason)
		}
	}
	return out
}

// SucceededAt reports whether the delivery with id is recorded as succeeded.
func SucceededAt(t testing.TB, ns, id string) bool {
	d, err := HistoryStore.GetDelivery(context.Background(), ns, id)
	return err == nil && d.Status.Phase == history.DeliverySucceeded
}
