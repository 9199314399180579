package quota

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/workers"
)

// leases stands for the other workers' Leases.
type leases []workers.Published

func (l *leases) Calls(context.Context, string) ([]workers.Published, error) { return *l, nil }

// With several replicas, the active-calls limit counts the other workers'
// calls from their Leases, and a call placed here on another worker until
// that worker's Lease counts it (its resourceVersion reached), once.
func TestActiveCallsCountOtherWorkersLeases(t *testing.T) {
	a, _, _ := newAdmission(t, map[string]string{ActiveCallsAnnotation: "5"})
	other := leases{{Worker: "w2", OrganizationCalls: workers.OrganizationCalls{Queued: 1, Live: 2}, AsOf: 100}}
	a.Self, a.Elsewhere = "w1", &other
	ctx := context.Background()
	active := func() int {
		t.Helper()
		u, err := a.Usage(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		return u.Queued + u.Live
	}
	if n := active(); n != 3 {
		t.Fatalf("the other worker's Lease says 3, counted %d", n)
	}
	ticket, err := a.Admit(ctx, "acme")
	if _, code := exceeded(t, err); code != "" {
		t.Fatalf("the fourth call: %s", code)
	}
	ticket.PlacedCall(&switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Namespace: "acme", Name: "placed",
		ResourceVersion: "120", Labels: map[string]string{switchboardv1.WorkerLabel: "w2"}}})
	if n := active(); n != 4 {
		t.Fatalf("a call placed on w2, not in its Lease yet: counted %d, want 4", n)
	}
	other[0].Queued, other[0].AsOf = 2, 119 // the Lease counts another call, not this one yet
	if n := active(); n != 5 {
		t.Fatalf("counted %d, want 5", n)
	}
	if _, err := a.Admit(ctx, "acme"); err == nil {
		t.Fatal("a sixth call admitted over the limit of 5")
	}
	other[0].Queued, other[0].AsOf = 3, 120 // the Lease now counts the placed call: it is not counted twice
	if n := active(); n != 5 {
		t.Fatalf("once w2's Lease counts the placed call: counted %d, want 5", n)
	}
	other[0].Queued = 2 // it ended there
	if n := active(); n != 4 {
		t.Fatalf("after it ended on w2: counted %d, want 4", n)
	}
	other = nil // w2 is gone: its calls count where they move
	if n := active(); n != 0 {
		t.Fatalf("with w2 gone: counted %d, want 0", n)
	}
}
