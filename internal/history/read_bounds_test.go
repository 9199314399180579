package history_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/history"
)

// A list with MaxBytes ends once the objects read reach it, so that a
// reader of large calls holds a bounded chunk of them; the first call is
// always read, however large.
func testListStopsAtMaxBytes(t *testing.T, b backend) {
	s := open(t, b.fresh(t))
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var ids []string
	for i := range 5 {
		id := fmt.Sprintf("call_%03d", i)
		save(t, s, newCall("org-a", id, base.Add(time.Duration(i)*time.Second), func(c *switchboardv1.Call) {
			c.Spec.Metadata = &apiextensionsv1.JSON{Raw: []byte(`{"pad":"` + strings.Repeat("x", 10_000) + `"}`)}
		}))
		ids = append([]string{id}, ids...)
	}
	assertListed(t, s, "org-a", history.CallQuery{Limit: 10, MaxBytes: 25_000}, ids[:3]...)
	assertListed(t, s, "org-a", history.CallQuery{Limit: 10, MaxBytes: 1}, ids[:1]...)
	assertListed(t, s, "org-a", history.CallQuery{Limit: 10}, ids...)
}

// CountCalls counts a namespace's calls of a range by hour, status and
// disposition and sums their talk time, in the database.
func testCountCalls(t *testing.T, b backend) {
	s := open(t, b.fresh(t))
	from := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	answered := func(ms int64) func(*switchboardv1.Call) {
		return func(c *switchboardv1.Call) {
			c.Status.Phase, c.Status.Disposition, c.Status.DurationMS = switchboardv1.CallEnded, switchboardv1.DispositionAnswered, &ms
		}
	}
	busy := func(c *switchboardv1.Call) {
		c.Status.Phase, c.Status.Disposition = switchboardv1.CallEnded, switchboardv1.DispositionBusy
	}
	save(t, s, newCall("org-a", "call_a1", from, answered(1000)))
	save(t, s, newCall("org-a", "call_a2", from.Add(59*time.Minute), answered(3000)))
	save(t, s, newCall("org-a", "call_a3", from.Add(time.Hour), answered(5000)))
	save(t, s, newCall("org-a", "call_b1", from.Add(90*time.Minute), busy))
	save(t, s, newCall("org-a", "call_early", from.Add(-time.Nanosecond), busy))
	save(t, s, newCall("org-a", "call_late", from.Add(24*time.Hour), busy))
	save(t, s, newCall("org-b", "call_other", from, busy))
	counts, err := s.CountCalls(t.Context(), "org-a", from, from.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	got := map[history.CallCount]bool{}
	for _, c := range counts {
		got[c] = true
	}
	want := map[history.CallCount]bool{
		{Hour: 0, Status: "ended", Disposition: "answered", Calls: 2, DurationMS: 4000}: true,
		{Hour: 1, Status: "ended", Disposition: "answered", Calls: 1, DurationMS: 5000}: true,
		{Hour: 1, Status: "ended", Disposition: "busy", Calls: 1}:                       true,
	}
	if !maps.Equal(got, want) {
		t.Fatalf("counts %+v, want %+v", counts, want)
	}
	var ids []string
	if err := s.EachCallIDSince(t.Context(), "org-a", from.Add(time.Hour), func(id string) { ids = append(ids, id) }); err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"call_a3", "call_b1", "call_late"}) {
		t.Fatalf("ids since %v: %v", from.Add(time.Hour), ids)
	}
}

// Calls archived before the talk time had a column of its own get it from
// their object.
func testDurationBackfilled(t *testing.T, b backend) {
	dsn := b.fresh(t)
	s := open(t, dsn)
	call := richCall()
	save(t, s, call)
	closeNow(t, s)
	execRaw(t, dsn, undoMigrationsAfter7)
	execRaw(t, dsn, "ALTER TABLE calls DROP COLUMN duration_ms; DELETE FROM schema_migrations WHERE version = 7")
	s = open(t, dsn)
	from := call.QueueOrder().Truncate(time.Hour)
	counts, err := s.CountCalls(t.Context(), call.Namespace, from, from.Add(time.Hour))
	if err != nil || len(counts) != 1 || counts[0].DurationMS != *call.Status.DurationMS {
		t.Fatalf("after migrating: %+v %v, want %d ms", counts, err, *call.Status.DurationMS)
	}
}

// CountDeliveryPhases counts a namespace's deliveries since a time by
// phase, leaving one event out, as the deliveries' own phases say, and the
// pending ones an attempt of which failed (waiting for a retry).
func testCountDeliveryPhases(t *testing.T, b backend) {
	s := open(t, b.fresh(t))
	ds := storeDeliveryFixture(t, s)
	since := deliveryBase.Add(10 * time.Second)
	retrying := newDelivery("org-a", "dlv_retrying", deliveryBase.Add(time.Minute), func(d *history.Delivery) {
		d.Status.Phase, d.Status.AttemptCount = history.DeliveryPending, 2
	})
	delivered := newDelivery("org-a", "dlv_delivered", deliveryBase.Add(time.Minute), func(d *history.Delivery) {
		d.Status.Phase, d.Status.AttemptCount = history.DeliverySucceeded, 1
	})
	enqueue(t, s, retrying, delivered)
	saveDelivery(t, s, retrying, time.Time{})
	saveDelivery(t, s, delivered, time.Time{})
	want := history.DeliveryPhaseCounts{ByPhase: map[history.DeliveryPhase]int{}, Retrying: 1}
	for _, d := range append(ds, retrying, delivered) {
		if d.Namespace == "org-a" && !d.CreationTimestamp.Time.Before(since) && d.Spec.Event != "test" {
			want.ByPhase[d.CurrentPhase()]++
		}
	}
	got, err := s.CountDeliveryPhases(t.Context(), "org-a", since, "test")
	if err != nil || !maps.Equal(got.ByPhase, want.ByPhase) || got.Retrying != want.Retrying {
		t.Fatalf("counts %+v %v, want %+v", got, err, want)
	}
}
