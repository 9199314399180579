package history_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/switchboard-dev/switchboard/internal/history"
)

// deliveryBase is the fixtures' creation time. It has nanoseconds, which a
// record's JSON does not keep.
var deliveryBase = time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)

func testDeliveryRoundTrip(t *testing.T, b backend) {
	ctx := context.Background()
	s := open(t, b.fresh(t))
	want := richDelivery()
	enqueue(t, s, want)
	got, err := s.GetDelivery(ctx, want.Namespace, want.Spec.DeliveryID)
	if err != nil {
		t.Fatal(err)
	}
	want.ManagedFields = nil // not kept: the API server's bookkeeping
	if !equality.Semantic.DeepEqual(got, want) {
		t.Fatalf("stored delivery differs:\ngot:\n%s\nwant:\n%s", toYAML(t, got), toYAML(t, want))
	}
	if history.DeliveryKeyOf(got) != history.DeliveryKeyOf(want) {
		t.Fatalf("key = %+v, want %+v: the creation time lost precision", history.DeliveryKeyOf(got), history.DeliveryKeyOf(want))
	}
	listed := listDeliveries(t, s, want.Namespace, history.DeliveryQuery{})
	if len(listed) != 1 || history.DeliveryKeyOf(&listed[0]) != history.DeliveryKeyOf(want) {
		t.Fatalf("listed %v, want the delivery at its exact key", listed)
	}
}

// deliveryRecordJSON is richDelivery's record as the store writes it: the
// shape of the WebhookDelivery resource it was (less apiVersion and kind),
// which the rows already in users' databases hold. Whatever Go type holds
// a delivery, it must write and read exactly this.
const deliveryRecordJSON = `{
	"metadata": {
		"name": "dlv-4f2a9c0e1b3d5a7c",
		"namespace": "org-a",
		"uid": "7d1c1e0a-2b3c-4d5e-8f90-a1b2c3d4e5f6",
		"creationTimestamp": "2026-03-01T12:00:00Z",
		"labels": {
			"switchboard.dev/call": "call-1",
			"switchboard.dev/endpoint": "ep-a",
			"switchboard.dev/event": "call.started"
		},
		"annotations": {
			"example.com/note": "a \u003cnote\u003e \u0026 more"
		}
	},
	"spec": {
		"deliveryID": "dlv_4f2a9c0e1b3d5a7c",
		"event": "call.started",
		"endpointRef": {
			"name": "ep-a"
		},
		"endpointID": "we_1",
		"callRef": {
			"name": "call-1"
		},
		"callID": "call_1"
	},
	"status": {
		"phase": "failed",
		"attemptCount": 3,
		"scheduledAttempts": 2,
		"attempts": [
			{
				"attemptedAt": "2026-03-01T12:00:01.123456Z",
				"statusCode": 503,
				"durationMS": 120,
				"response": "busy",
				"trigger": "scheduled"
			},
			{
				"attemptedAt": "2026-03-01T12:01:00.123456Z",
				"error": "dial tcp: connection refused",
				"trigger": "scheduled"
			},
			{
				"attemptedAt": "2026-03-01T13:00:00.123456Z",
				"statusCode": 500,
				"trigger": "manual"
			}
		],
		"nextAttemptAt": "2026-03-01T12:01:00.123456Z",
		"lastStatusCode": 500,
		"lastError": "HTTP 500",
		"completedAt": "2026-03-01T13:00:00Z",
		"retryHandled": "2026-03-01T12:30:00Z"
	}
}`

// testDeliveryStoredShape: a delivery is stored in the fixed shape, and a
// record of that shape already stored reads back whole, with or without
// the apiVersion and kind a resource carried.
func testDeliveryStoredShape(t *testing.T, b backend) {
	ctx := context.Background()
	dsn := b.fresh(t)
	s := open(t, dsn)
	want := richDelivery()
	enqueue(t, s, want)
	want.ManagedFields = nil // not kept: the API server's bookkeeping
	db := rawDB(t, dsn)
	var object string
	if err := db.QueryRow(`SELECT object FROM deliveries WHERE delivery_id = $1`, want.Spec.DeliveryID).Scan(&object); err != nil {
		t.Fatal(err)
	}
	shape := compactJSON(t, deliveryRecordJSON)
	if object != shape {
		t.Errorf("stored record:\n%s\nwant:\n%s", object, shape)
	}

	for _, old := range []string{shape, `{"kind":"WebhookDelivery","apiVersion":"switchboard.dev/v1alpha1",` + shape[1:]} {
		if _, err := db.Exec(`UPDATE deliveries SET object = $1 WHERE delivery_id = $2`, old, want.Spec.DeliveryID); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetDelivery(ctx, want.Namespace, want.Spec.DeliveryID)
		if err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("record %s read back as:\n%s\nwant:\n%s", old, toYAML(t, got), toYAML(t, want))
		}
	}
}

// testDeliveryTimesKeepTheirOrder: a delivery completed by its attempt
// reads back completed when the attempt was made, to the nanosecond, and
// never before it or before its own creation (the record's JSON keeps only
// seconds of completedAt).
func testDeliveryTimesKeepTheirOrder(t *testing.T, b backend) {
	s := open(t, b.fresh(t))
	created := time.Date(2026, 11, 26, 13, 31, 1, 40_000_000, time.UTC)
	attempted := created.Add(52 * time.Millisecond)
	d := newDelivery("org-a", "dlv_01", created, func(d *history.Delivery) {
		d.Status = history.DeliveryStatus{Phase: history.DeliverySucceeded, AttemptCount: 1,
			Attempts: []history.DeliveryAttempt{{AttemptedAt: metav1.NewMicroTime(attempted), StatusCode: 204,
				Trigger: history.TriggerTest}},
			CompletedAt: &metav1.Time{Time: attempted}}
	})
	enqueue(t, s, d)
	saveDelivery(t, s, d, time.Time{})
	got, err := s.GetDelivery(context.Background(), "org-a", "dlv_01")
	if err != nil {
		t.Fatal(err)
	}
	listed := listDeliveries(t, s, "org-a", history.DeliveryQuery{})
	for _, r := range []*history.Delivery{got, &listed[0]} {
		c, a, done := r.CreationTimestamp.Time, r.Status.Attempts[0].AttemptedAt.Time, r.Status.CompletedAt.Time
		if !done.Equal(attempted) || a.Before(c) || done.Before(a) {
			t.Fatalf("read back created %s, attempted %s, completed %s; want completed %s, in that order",
				c.Format(time.RFC3339Nano), a.Format(time.RFC3339Nano), done.Format(time.RFC3339Nano),
				attempted.Format(time.RFC3339Nano))
		}
	}
}

// testEnqueueOnce: an emit redone after a crash neither duplicates nor
// resets a delivery.
func testEnqueueOnce(t *testing.T, b backend) {
	ctx := context.Background()
	s := open(t, b.fresh(t))
	first := newDelivery("org-a", "dlv_01", deliveryBase, nil)
	enqueue(t, s, first, newDelivery("org-a", "dlv_01", deliveryBase.Add(time.Hour), nil))
	enqueue(t, s, newDelivery("org-a", "dlv_01", deliveryBase.Add(2*time.Hour), func(d *history.Delivery) {
		d.Spec.Event = "call.ended"
	}))
	assertDeliveries(t, s, "org-a", history.DeliveryQuery{}, "dlv_01")
	got, err := s.GetDelivery(ctx, "org-a", "dlv_01")
	if err != nil {
		t.Fatal(err)
	}
	if history.DeliveryKeyOf(got) != history.DeliveryKeyOf(first) || got.Spec.Event != first.Spec.Event {
		t.Fatalf("got %+v created %s, want the first enqueued", got.Spec, got.CreationTimestamp)
	}

	finished := first.DeepCopy()
	finished.Status.Phase = history.DeliverySucceeded
	saveDelivery(t, s, finished, time.Time{})
	enqueue(t, s, first)
	assertClaimed(t, s, deliveryBase.Add(time.Hour))
	assertDeliveries(t, s, "org-a", history.DeliveryQuery{Phase: "succeeded"}, "dlv_01")
}

func testClaimOrderLimitAndLease(t *testing.T, b backend) {
	s := open(t, b.fresh(t))
	enqueue(t, s,
		newDelivery("org-a", "dlv_03", deliveryBase.Add(3*time.Second), nil),
		newDelivery("org-b", "dlv_01", deliveryBase.Add(1*time.Second), nil),
		newDelivery("org-a", "dlv_02", deliveryBase.Add(2*time.Second), nil))
	const lease = 30 * time.Second
	assertClaimed(t, s, deliveryBase) // due when created: none yet
	now := deliveryBase.Add(10 * time.Second)
	assertClaimedN(t, s, now, 2, lease, "dlv_01", "dlv_02")
	assertClaimedN(t, s, now, 2, lease, "dlv_03")
	assertClaimedN(t, s, now.Add(lease-time.Nanosecond), 10, lease) // all leased
	assertNextDue(t, s, now.Add(lease))
	assertClaimedN(t, s, now.Add(lease), 10, lease, "dlv_01", "dlv_02", "dlv_03") // the leases lapsed
}

func testSaveSetsDueTime(t *testing.T, b backend) {
	s := open(t, b.fresh(t))
	d := newDelivery("org-a", "dlv_01", deliveryBase, nil)
	enqueue(t, s, d)
	assertClaimedN(t, s, deliveryBase, 1, time.Hour, "dlv_01")

	// A failed attempt: due again in a minute, though leased for an hour.
	d.Status.AttemptCount = 1
	saveDelivery(t, s, d, deliveryBase.Add(time.Minute))
	assertNextDue(t, s, deliveryBase.Add(time.Minute))
	assertClaimed(t, s, deliveryBase.Add(time.Minute-time.Nanosecond))
	assertClaimed(t, s, deliveryBase.Add(time.Minute), "dlv_01")

	d.Status.Phase = history.DeliverySucceeded
	saveDelivery(t, s, d, time.Time{})
	assertClaimed(t, s, deliveryBase.AddDate(100, 0, 0))
	assertNoneDue(t, s)

	// A delivery saved before it was ever enqueued is stored too.
	saveDelivery(t, s, newDelivery("org-a", "dlv_02", deliveryBase, nil), deliveryBase.Add(time.Hour))
	assertClaimed(t, s, deliveryBase.Add(time.Hour), "dlv_02")
}

// testRetryWhileLeased: a retry requested while a worker holds the delivery
// is not lost to the worker's save, and stops being forced once a save has
// handled it.
func testRetryWhileLeased(t *testing.T, b backend) {
	ctx := context.Background()
	s := open(t, b.fresh(t))
	// The store makes a requested retry due at its own clock's now.
	base := time.Now()
	later := base.Add(time.Hour)
	d := newDelivery("org-a", "dlv_01", base, nil)
	enqueue(t, s, d)
	assertClaimedN(t, s, base, 1, 2*time.Hour, "dlv_01")

	at := time.Date(2026, 3, 1, 12, 0, 0, 987654321, time.FixedZone("CET", 3600))
	requested, err := s.RequestDeliveryRetry(ctx, "org-a", "dlv_01", at)
	if err != nil {
		t.Fatal(err)
	}
	wantAnnotation := "2026-03-01T11:00:00.987654321Z"
	assertRetryAnnotation(t, requested, wantAnnotation)
	assertClaimed(t, s, later) // still leased to the worker

	d.Status.Phase = history.DeliverySucceeded // the worker's attempt, begun before the request
	saveDelivery(t, s, d, time.Time{})
	claimed := assertClaimed(t, s, later, "dlv_01")
	assertRetryAnnotation(t, claimed[0], wantAnnotation)

	handled := claimed[0].DeepCopy()
	handled.Status.RetryHandled = handled.Annotations[history.DeliveryRetryAnnotation]
	saveDelivery(t, s, handled, time.Time{})
	assertNoneDue(t, s)
	got, err := s.GetDelivery(ctx, "org-a", "dlv_01")
	if err != nil {
		t.Fatal(err)
	}
	assertRetryAnnotation(t, got, wantAnnotation)

	if _, err := s.RequestDeliveryRetry(ctx, "org-a", "dlv_01", at.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	assertClaimed(t, s, later, "dlv_01")
	if _, err := s.RequestDeliveryRetry(ctx, "org-a", "dlv_missing", at); !errors.Is(err, history.ErrNotFound) {
		t.Fatalf("retrying a missing delivery: err = %v, want ErrNotFound", err)
	}
}

func testNextDeliveryDue(t *testing.T, b backend) {
	s := open(t, b.fresh(t))
	assertNoneDue(t, s)
	a := newDelivery("org-a", "dlv_a", deliveryBase.Add(5*time.Second), nil)
	enqueue(t, s, a, newDelivery("org-a", "dlv_b", deliveryBase.Add(10*time.Second), nil))
	assertNextDue(t, s, deliveryBase.Add(5*time.Second))
	assertClaimedN(t, s, deliveryBase.Add(5*time.Second), 1, time.Minute, "dlv_a")
	assertNextDue(t, s, deliveryBase.Add(10*time.Second))
	assertClaimedN(t, s, deliveryBase.Add(10*time.Second), 1, time.Minute, "dlv_b")
	assertNextDue(t, s, deliveryBase.Add(65*time.Second)) // dlv_a's lease lapses
	saveDelivery(t, s, a, time.Time{})
	assertNextDue(t, s, deliveryBase.Add(70*time.Second)) // dlv_b's
	saveDelivery(t, s, a, deliveryBase.Add(20*time.Second))
	assertNextDue(t, s, deliveryBase.Add(20*time.Second))
}

// testConcurrentClaims: claimers in several goroutines of two stores on one
// database never receive the same delivery while its lease runs.
func testConcurrentClaims(t *testing.T, b backend) {
	ctx := context.Background()
	dsn := b.fresh(t)
	stores := []history.Store{open(t, dsn), open(t, dsn)}
	const n = 300
	var ds []*history.Delivery
	for i := range n {
		ds = append(ds, newDelivery("org-a", fmt.Sprintf("dlv_%04d", i), deliveryBase.Add(time.Duration(i%7)*time.Millisecond), nil))
	}
	enqueue(t, stores[0], ds...)

	var (
		mu      sync.Mutex
		claimed = map[string]int{}
		wg      sync.WaitGroup
	)
	for w := range 8 {
		wg.Go(func() {
			s := stores[w%len(stores)]
			for {
				// One instant for all, within every lease.
				got, err := s.ClaimDeliveries(ctx, deliveryBase.Add(time.Second), history.Claim{Limit: 7, Lease: time.Hour})
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, d := range got {
					claimed[d.Spec.DeliveryID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(claimed) != n {
		t.Errorf("%d deliveries claimed, want %d", len(claimed), n)
	}
	for id, times := range claimed {
		if times != 1 {
			t.Errorf("%s claimed %d times within its lease", id, times)
		}
	}
}

func testDeliveryFilters(t *testing.T, b backend) {
	ctx := context.Background()
	s := open(t, b.fresh(t))
	ds := storeDeliveryFixture(t, s)
	queries := map[string]history.DeliveryQuery{
		"endpoint":                 {Endpoint: "ep-b"},
		"endpoint id, or none":     {Endpoint: "ep-a", EndpointID: "we_2"},
		"endpoint id of another":   {EndpointID: "we_1"},
		"call name":                {CallName: "call-3"},
		"call name from its ref":   {CallName: "call-ref"},
		"event":                    {Event: "call.ended"},
		"phase pending (or empty)": {Phase: "pending"},
		"phase failed":             {Phase: "failed"},
		"endpoint, event, phase":   {Endpoint: "ep-a", Event: "call.started", Phase: "succeeded"},
		"no match":                 {Endpoint: "ep-a", Event: "test"},
	}
	for name, q := range queries {
		t.Run(name, func(t *testing.T) {
			var want []string
			for i := len(ds) - 1; i >= 0; i-- { // the fixture is oldest first
				if ds[i].Namespace == "org-a" && deliveryMatches(ds[i], q) {
					want = append(want, ds[i].Spec.DeliveryID)
				}
			}
			q.Limit = 1000
			assertDeliveries(t, s, "org-a", q, want...)
			if len(want) == 0 && name != "no match" {
				t.Fatal("the fixture has no delivery for this query: the test would prove nothing")
			}
		})
	}

	got, err := s.GetDelivery(ctx, "org-b", "dlv_00")
	if err != nil || got.Spec.EndpointRef.Name != "ep-other" {
		t.Fatalf("org-b's dlv_00: %v, %v", got, err)
	}
	if _, err := s.GetDelivery(ctx, "org-b", "dlv_01"); !errors.Is(err, history.ErrNotFound) {
		t.Fatalf("org-b reading org-a's delivery: err = %v, want ErrNotFound", err)
	}
	assertDeliveries(t, s, "org-b", history.DeliveryQuery{}, "dlv_00")
	assertDeliveries(t, s, "org-c", history.DeliveryQuery{})
}

func testDeliveryPaging(t *testing.T, b backend) {
	s := open(t, b.fresh(t))
	var keys []history.DeliveryKey
	var ds []*history.Delivery
	for i := range 57 {
		// Three deliveries share each instant, nanoseconds apart from the
		// next, and ids do not follow insertion order.
		at := deliveryBase.Add(time.Duration(i/3) * time.Nanosecond)
		d := newDelivery("org-a", fmt.Sprintf("dlv_%04x", (i*37)%101), at, nil)
		ds = append(ds, d)
		keys = append(keys, history.DeliveryKeyOf(d))
	}
	ds = append(ds, newDelivery("org-b", "dlv_other", deliveryBase.Add(time.Hour), nil))
	enqueue(t, s, ds...)
	slices.SortFunc(keys, func(x, y history.DeliveryKey) int { // newest first
		if c := y.CreatedAt.Compare(x.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(y.DeliveryID, x.DeliveryID)
	})

	var walked []history.DeliveryKey
	q := history.DeliveryQuery{Limit: 7}
	for page := 0; ; page++ {
		got := listDeliveries(t, s, "org-a", q)
		if len(got) == 0 {
			break
		}
		if len(got) > 7 || page > 10 {
			t.Fatalf("page %d has %d deliveries", page, len(got))
		}
		for i := range got {
			walked = append(walked, history.DeliveryKeyOf(&got[i]))
		}
		last := history.DeliveryKeyOf(&got[len(got)-1])
		q.After = &last
	}
	if !slices.Equal(walked, keys) {
		t.Fatalf("walking pages of 7 gave\n%v\nwant\n%v", walked, keys)
	}
	if all := listDeliveries(t, s, "org-a", history.DeliveryQuery{}); len(all) != 50 {
		t.Fatalf("no limit: %d deliveries; want the default page of 50", len(all))
	}
}

func testDeliveryRetention(t *testing.T, b backend) {
	ctx := context.Background()
	s := open(t, b.fresh(t))
	completed := func(id string, at time.Duration) *history.Delivery {
		return newDelivery("org-a", id, deliveryBase, func(d *history.Delivery) {
			d.Status.Phase = history.DeliveryFailed
			done := metav1.NewTime(deliveryBase.Add(at))
			d.Status.CompletedAt = &done
		})
	}
	for _, d := range []*history.Delivery{completed("dlv_old", time.Minute), completed("dlv_new", 3*time.Minute), completed("dlv_retried", time.Minute)} {
		saveDelivery(t, s, d, time.Time{})
	}
	enqueue(t, s, newDelivery("org-a", "dlv_pending", deliveryBase, nil))
	if _, err := s.RequestDeliveryRetry(ctx, "org-a", "dlv_retried", deliveryBase); err != nil {
		t.Fatal(err)
	}
	for _, want := range []int64{1, 0} {
		n, err := s.DeleteDeliveriesCompletedBefore(ctx, deliveryBase.Add(2*time.Minute))
		if err != nil || n != want {
			t.Fatalf("deleted %d, %v; want %d", n, err, want)
		}
	}
	assertDeliveries(t, s, "org-a", history.DeliveryQuery{}, "dlv_retried", "dlv_pending", "dlv_new")
}

// Delivery fixtures.

// newDelivery is a delivery of a call.started event to endpoint ep-a,
// created at at and not yet attempted; mutate adjusts it.
func newDelivery(ns, id string, at time.Time, mutate func(*history.Delivery)) *history.Delivery {
	d := &history.Delivery{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:         ns,
			Name:              strings.ReplaceAll(id, "_", "-"),
			CreationTimestamp: metav1.NewTime(at),
			Labels: map[string]string{
				history.DeliveryEndpointLabel: "ep-a",
				history.DeliveryCallLabel:     "call-1",
				history.DeliveryEventLabel:    "call.started",
			},
		},
		Spec: history.DeliverySpec{
			DeliveryID:  id,
			Event:       "call.started",
			EndpointRef: history.ObjectName{Name: "ep-a"},
			EndpointID:  "we_1",
			CallRef:     &history.ObjectName{Name: "call-1"},
			CallID:      "call_1",
		},
	}
	if mutate != nil {
		mutate(d)
	}
	return d
}

// richDelivery has every part of a delivery the REST API renders.
func richDelivery() *history.Delivery {
	micro := func(d time.Duration) metav1.MicroTime {
		return metav1.NewMicroTime(deliveryBase.Add(d).Truncate(time.Microsecond))
	}
	next := micro(time.Minute)
	completed := metav1.NewTime(deliveryBase.Add(time.Hour).Truncate(time.Second))
	return newDelivery("org-a", "dlv_4f2a9c0e1b3d5a7c", deliveryBase, func(d *history.Delivery) {
		d.UID = "7d1c1e0a-2b3c-4d5e-8f90-a1b2c3d4e5f6"
		d.Annotations = map[string]string{"example.com/note": "a <note> & more"}
		d.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "switchboard", Operation: metav1.ManagedFieldsOperationApply}}
		d.Status = history.DeliveryStatus{
			Phase:             history.DeliveryFailed,
			AttemptCount:      3,
			ScheduledAttempts: 2,
			Attempts: []history.DeliveryAttempt{
				{AttemptedAt: micro(time.Second), StatusCode: 503, DurationMS: 120, Response: "busy", Trigger: history.TriggerScheduled},
				{AttemptedAt: micro(time.Minute), Error: "dial tcp: connection refused", Trigger: history.TriggerScheduled},
				{AttemptedAt: micro(time.Hour), StatusCode: 500, Trigger: history.TriggerManual},
			},
			NextAttemptAt:  &next,
			LastStatusCode: 500,
			LastError:      "HTTP 500",
			CompletedAt:    &completed,
			RetryHandled:   "2026-03-01T12:30:00Z",
		}
	})
}

// deliveryFixture is 40 deliveries of org-a a second apart, oldest first,
// spread over every filtered column, and one of org-b.
func deliveryFixture() []*history.Delivery {
	events := []string{"call.started", "call.ended", "call.analyzed", "test"}
	phases := []history.DeliveryPhase{"", "pending", "succeeded", "failed", "succeeded"}
	endpointIDs := []string{"we_1", "we_2", ""}
	var ds []*history.Delivery
	for i := range 40 {
		ds = append(ds, newDelivery("org-a", fmt.Sprintf("dlv_%02d", i), deliveryBase.Add(time.Duration(i)*time.Second), func(d *history.Delivery) {
			d.Spec.Event = events[i%len(events)]
			d.Status.Phase = phases[i%len(phases)]
			d.Spec.EndpointID = endpointIDs[i%len(endpointIDs)]
			if i%2 == 1 {
				d.Spec.EndpointRef.Name = "ep-b"
			}
			d.Labels[history.DeliveryCallLabel] = fmt.Sprintf("call-%d", i%6)
			if i%10 == 9 { // built without labels: the call is its ref
				d.Labels = nil
				d.Spec.CallRef.Name = "call-ref"
			}
		}))
	}
	return append(ds, newDelivery("org-b", "dlv_00", deliveryBase, func(d *history.Delivery) {
		d.Spec.EndpointRef.Name = "ep-other"
	}))
}

// storeDeliveryFixture stores deliveryFixture, each delivery in its phase.
func storeDeliveryFixture(t *testing.T, s history.Store) []*history.Delivery {
	t.Helper()
	ds := deliveryFixture()
	enqueue(t, s, ds...)
	for _, d := range ds {
		if d.Status.Phase != "" {
			saveDelivery(t, s, d, time.Time{})
		}
	}
	return ds
}

// deliveryMatches is DeliveryQuery's documented meaning.
func deliveryMatches(d *history.Delivery, q history.DeliveryQuery) bool {
	call := d.Labels[history.DeliveryCallLabel]
	if call == "" {
		call = d.Spec.CallRef.Name
	}
	return (q.Endpoint == "" || d.Spec.EndpointRef.Name == q.Endpoint) &&
		(q.EndpointID == "" || d.Spec.EndpointID == q.EndpointID || d.Spec.EndpointID == "") &&
		(q.CallName == "" || call == q.CallName) &&
		(q.Event == "" || d.Spec.Event == q.Event) &&
		(q.Phase == "" || string(d.CurrentPhase()) == q.Phase)
}

// Delivery helpers.

// compactJSON is s without the spaces between its tokens, keys in the
// order written.
func compactJSON(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func enqueue(t *testing.T, s history.Store, ds ...*history.Delivery) {
	t.Helper()
	if err := s.EnqueueDeliveries(context.Background(), ds); err != nil {
		t.Fatal(err)
	}
}

func saveDelivery(t *testing.T, s history.Store, d *history.Delivery, due time.Time) {
	t.Helper()
	if err := s.SaveDelivery(context.Background(), d, due); err != nil {
		t.Fatal(err)
	}
}

// assertClaimed claims everything due at now, for a minute.
func assertClaimed(t *testing.T, s history.Store, now time.Time, want ...string) []*history.Delivery {
	t.Helper()
	return assertClaimedN(t, s, now, 100, time.Minute, want...)
}

func assertClaimedN(t *testing.T, s history.Store, now time.Time, limit int, lease time.Duration, want ...string) []*history.Delivery {
	t.Helper()
	ds, err := s.ClaimDeliveries(context.Background(), now, history.Claim{Limit: limit, Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range ds {
		got = append(got, d.Spec.DeliveryID)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ClaimDeliveries(%s, %d) = %v, want %v", now.Format(time.RFC3339Nano), limit, got, want)
	}
	return ds
}

func assertNextDue(t *testing.T, s history.Store, want time.Time) {
	t.Helper()
	next, ok, err := s.NextDeliveryDue(context.Background(), time.Time{})
	if err != nil || !ok || !next.Equal(want) {
		t.Fatalf("NextDeliveryDue = %s, %t, %v; want %s", next.Format(time.RFC3339Nano), ok, err, want.Format(time.RFC3339Nano))
	}
}

func assertNoneDue(t *testing.T, s history.Store) {
	t.Helper()
	next, ok, err := s.NextDeliveryDue(context.Background(), time.Time{})
	if err != nil || ok {
		t.Fatalf("NextDeliveryDue = %s, %t, %v; want nothing due", next, ok, err)
	}
}

func assertRetryAnnotation(t *testing.T, d *history.Delivery, want string) {
	t.Helper()
	if got := d.Annotations[history.DeliveryRetryAnnotation]; got != want {
		t.Fatalf("retry annotation = %q, want %q", got, want)
	}
}

func listDeliveries(t *testing.T, s history.Store, ns string, q history.DeliveryQuery) []history.Delivery {
	t.Helper()
	ds, err := s.ListDeliveries(context.Background(), ns, q)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func assertDeliveries(t *testing.T, s history.Store, ns string, q history.DeliveryQuery, want ...string) {
	t.Helper()
	var got []string
	for _, d := range listDeliveries(t, s, ns, q) {
		got = append(got, d.Spec.DeliveryID)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ListDeliveries(%s, %+v) =\n%v\nwant\n%v", ns, q, got, want)
	}
}
