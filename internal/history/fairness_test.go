package history_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/history"
)

// The fair claim: one organization's backlog never sits in front of
// another's deliveries, and no organization or endpoint has more attempts
// in flight than its bound.

// testFairClaimAcrossOrganizations: org-b queued 30 deliveries before
// org-a's 3; a claim of 6 takes them round-robin, not org-b's six oldest.
func testFairClaimAcrossOrganizations(t *testing.T, b backend) {
	s := open(t, b.fresh(t))
	for i := range 30 {
		enqueue(t, s, newDelivery("org-b", fmt.Sprintf("dlv_b%02d", i), deliveryBase.Add(time.Duration(i)*time.Millisecond), nil))
	}
	enqueue(t, s,
		newDelivery("org-a", "dlv_a0", deliveryBase.Add(time.Second), nil),
		newDelivery("org-a", "dlv_a1", deliveryBase.Add(time.Second+time.Millisecond), nil),
		newDelivery("org-a", "dlv_a2", deliveryBase.Add(time.Second+2*time.Millisecond), nil))
	now := deliveryBase.Add(10 * time.Second)
	assertClaimedN(t, s, now, 6, time.Minute, "dlv_b00", "dlv_b01", "dlv_b02", "dlv_a0", "dlv_a1", "dlv_a2")

	// An organization with nothing in flight goes before one with three.
	enqueue(t, s,
		newDelivery("org-c", "dlv_c0", deliveryBase.Add(5*time.Second), nil),
		newDelivery("org-c", "dlv_c1", deliveryBase.Add(6*time.Second), nil))
	assertClaimedN(t, s, now, 2, time.Minute, "dlv_c0", "dlv_c1")
}

// testClaimBoundsInFlight: deliveries over an organization's or an
// endpoint's bound stay queued, are claimed as attempts finish, and none is
// lost; leases that lapsed (a dead worker's) stop counting.
func testClaimBoundsInFlight(t *testing.T, b backend) {
	s := open(t, b.fresh(t))
	const lease = time.Minute
	bounds := history.InFlightLimits{PerOrganization: 5, PerEndpoint: 2}
	queued := map[string]*history.Delivery{}
	for i := range 4 {
		for e := range 3 {
			id := fmt.Sprintf("dlv_e%d_%d", e, i)
			d := newDelivery("org-b", id, deliveryBase.Add(time.Duration(i*3+e)*time.Millisecond), onEndpoint(fmt.Sprintf("ep-%d", e)))
			enqueue(t, s, d)
			queued[id] = d
		}
	}
	queued["dlv_a"] = newDelivery("org-a", "dlv_a", deliveryBase.Add(time.Second), nil)
	enqueue(t, s, queued["dlv_a"])
	now := deliveryBase.Add(10 * time.Second)
	claim := func(now time.Time, want ...string) []*history.Delivery {
		t.Helper()
		return assertClaimedWithin(t, s, now, history.Claim{Limit: 100, Lease: lease, InFlight: bounds}, want...)
	}
	// Two per endpoint would be six: five for the organization.
	claim(now, "dlv_e0_0", "dlv_e1_0", "dlv_e2_0", "dlv_e0_1", "dlv_e1_1", "dlv_a")
	claim(now)
	saveDelivery(t, s, succeeded(queued["dlv_e0_0"]), time.Time{})
	claim(now, "dlv_e2_1") // ep-1 is full; of ep-0's and ep-2's next, the earlier

	// A dead worker's leases lapse: what it held is claimed again, within
	// the bounds.
	later := now.Add(lease)
	inFlight := claim(later, "dlv_e1_0", "dlv_e2_0", "dlv_e0_1", "dlv_e1_1", "dlv_e2_1", "dlv_a")

	// Nothing is lost: finishing what is in flight drains the queue, never
	// more than the bounds at once.
	sent := map[string]bool{"dlv_e0_0": true}
	for len(inFlight) > 0 {
		assertWithinBounds(t, inFlight, bounds)
		for _, d := range inFlight {
			sent[d.Spec.DeliveryID] = true
			saveDelivery(t, s, succeeded(queued[d.Spec.DeliveryID]), time.Time{})
		}
		var err error
		if inFlight, err = s.ClaimDeliveries(context.Background(), later, history.Claim{Limit: 100, Lease: lease, InFlight: bounds}); err != nil {
			t.Fatal(err)
		}
	}
	if len(sent) != len(queued) {
		t.Fatalf("%d of %d deliveries sent: %v", len(sent), len(queued), sent)
	}
}

// testReserveSharesTheBounds: a test send counts as an attempt in flight
// for the claims, and the claims' attempts count for test sends.
func testReserveSharesTheBounds(t *testing.T, b backend) {
	ctx := context.Background()
	s := open(t, b.fresh(t))
	const lease = time.Minute
	bounds := history.InFlightLimits{PerOrganization: 3, PerEndpoint: 2}
	now := deliveryBase.Add(10 * time.Second)
	enqueue(t, s, newDelivery("org-b", "dlv_1", deliveryBase, nil), newDelivery("org-b", "dlv_2", deliveryBase.Add(time.Millisecond), nil))
	assertClaimedWithin(t, s, now, history.Claim{Limit: 10, Lease: lease, InFlight: bounds}, "dlv_1", "dlv_2")

	reserve := func(ns, id, endpoint string, want bool) *history.Delivery {
		t.Helper()
		d := newDelivery(ns, id, now, onEndpoint(endpoint))
		d.Spec.Event = "test"
		got, err := s.ReserveDelivery(ctx, d, now, lease, bounds)
		if err != nil || got != want {
			t.Fatalf("ReserveDelivery(%s, %s on %s) = %t, %v; want %t", ns, id, endpoint, got, err, want)
		}
		return d
	}
	reserve("org-b", "dlv_t1", "ep-a", false) // ep-a has two in flight
	test := reserve("org-b", "dlv_t2", "ep-b", true)
	reserve("org-b", "dlv_t3", "ep-c", false) // org-b has three
	reserve("org-a", "dlv_t4", "ep-a", true)  // another organization is not concerned
	if _, err := s.GetDelivery(ctx, "org-b", "dlv_t1"); err == nil {
		t.Fatal("a refused test send was stored")
	}

	enqueue(t, s, newDelivery("org-b", "dlv_3", deliveryBase.Add(2*time.Millisecond), onEndpoint("ep-c")))
	assertClaimedWithin(t, s, now, history.Claim{Limit: 10, Lease: lease, InFlight: bounds})
	saveDelivery(t, s, succeeded(test), time.Time{}) // the test send is recorded
	assertClaimedWithin(t, s, now, history.Claim{Limit: 10, Lease: lease, InFlight: bounds}, "dlv_3")

	// A reservation never recorded (its sender died) is due once its
	// lease lapses, for the worker to close.
	assertClaimedWithin(t, s, now.Add(lease), history.Claim{Limit: 10, Lease: lease},
		"dlv_1", "dlv_2", "dlv_3", "dlv_t4")
}

func testNextDeliveryDueAfter(t *testing.T, b backend) {
	ctx := context.Background()
	s := open(t, b.fresh(t))
	enqueue(t, s, newDelivery("org-a", "dlv_a", deliveryBase.Add(5*time.Second), nil),
		newDelivery("org-a", "dlv_b", deliveryBase.Add(10*time.Second), nil))
	assertNextDueAfter := func(after, want time.Time) {
		t.Helper()
		next, ok, err := s.NextDeliveryDue(ctx, after)
		if err != nil || ok != !want.IsZero() || !next.Equal(want) {
			t.Fatalf("NextDeliveryDue(%s) = %s, %t, %v; want %s", after, next, ok, err, want)
		}
	}
	assertNextDueAfter(deliveryBase, deliveryBase.Add(5*time.Second))
	assertNextDueAfter(deliveryBase.Add(5*time.Second), deliveryBase.Add(10*time.Second))
	assertNextDueAfter(deliveryBase.Add(10*time.Second), time.Time{})
	assertClaimedN(t, s, deliveryBase.Add(10*time.Second), 1, time.Minute, "dlv_a")
	assertNextDueAfter(deliveryBase.Add(10*time.Second), deliveryBase.Add(70*time.Second)) // dlv_a's lease lapses
}

// Helpers.

func onEndpoint(name string) func(*history.Delivery) {
	return func(d *history.Delivery) {
		d.Spec.EndpointRef.Name = name
		d.Labels[history.DeliveryEndpointLabel] = name
	}
}

func succeeded(d *history.Delivery) *history.Delivery {
	done := d.DeepCopy()
	done.Status.Phase = history.DeliverySucceeded
	return done
}

// assertClaimedWithin claims with c at now and expects want, in due order.
func assertClaimedWithin(t *testing.T, s history.Store, now time.Time, c history.Claim, want ...string) []*history.Delivery {
	t.Helper()
	ds, err := s.ClaimDeliveries(context.Background(), now, c)
	if err != nil {
		t.Fatal(err)
	}
	if got := idsOf(ds); !slices.Equal(got, want) {
		t.Fatalf("ClaimDeliveries(%s, %+v) = %v, want %v", now.Format(time.RFC3339Nano), c, got, want)
	}
	return ds
}

// assertWithinBounds checks that the deliveries in flight, ds, are no more
// per organization and per endpoint than bounds allow.
func assertWithinBounds(t *testing.T, ds []*history.Delivery, bounds history.InFlightLimits) {
	t.Helper()
	perOrg, perEndpoint := map[string]int{}, map[string]int{}
	for _, d := range ds {
		perOrg[d.Namespace]++
		perEndpoint[d.Namespace+"/"+d.Spec.EndpointRef.Name]++
	}
	for org, n := range perOrg {
		if n > bounds.PerOrganization {
			t.Fatalf("%s has %d in flight, over its bound of %d", org, n, bounds.PerOrganization)
		}
	}
	for ep, n := range perEndpoint {
		if n > bounds.PerEndpoint {
			t.Fatalf("%s has %d in flight, over its bound of %d", ep, n, bounds.PerEndpoint)
		}
	}
}

func idsOf(ds []*history.Delivery) []string {
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.Spec.DeliveryID
	}
	return ids
}
