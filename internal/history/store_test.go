package history_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver, for raw access
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/history/pgtest"
)

// migrations is how many migrations the store has (migrations/*/NNNN_*.sql).
const migrations = 10

// backend makes fresh, empty databases of one dialect.
type backend struct {
	name  string
	fresh func(t *testing.T) string // the DSN of a new empty database
}

// TestStoreContract runs the same assertions against SQLite and PostgreSQL.
// SQLite's half runs in every tier; PostgreSQL's needs its server, which
// make test-unit (-short) does not start.
func TestStoreContract(t *testing.T) {
	backends := []struct {
		name string
		// start prepares the dialect for one t and returns how to make its
		// fresh databases.
		start func(t *testing.T) func(t *testing.T) string
	}{
		{"sqlite", func(*testing.T) func(t *testing.T) string {
			return func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "history.db") }
		}},
		{"postgres", func(t *testing.T) func(t *testing.T) string {
			pg := pgtest.NewServer(t)
			var databases int
			var mu sync.Mutex
			return func(t *testing.T) string {
				mu.Lock()
				databases++
				name := fmt.Sprintf("contract%d", databases)
				mu.Unlock()
				return pg.CreateDatabase(t, name)
			}
		}},
	}
	cases := []struct {
		name string
		run  func(t *testing.T, b backend)
	}{
		{"RoundTrip", testRoundTrip},
		{"OlderStateNeverOverwrites", testOlderStateNeverOverwrites},
		{"CallVersion", testCallVersion},
		{"NamespaceIsolation", testNamespaceIsolation},
		{"OrderAndCursorPaging", testOrderAndCursorPaging},
		{"Filters", testFilters},
		{"ListStopsAtMaxBytes", testListStopsAtMaxBytes},
		{"CountCalls", testCountCalls},
		{"DurationBackfilled", testDurationBackfilled},
		{"CountDeliveryPhases", testCountDeliveryPhases},
		{"ReopenKeepsDataAndSchema", testReopen},
		{"NewerSchemaRefused", testNewerSchemaRefused},
		{"CorruptMigrationTableRefused", testCorruptMigrationTable},
		{"ConcurrentOpenAndWrites", testConcurrentOpenAndWrites},
		{"RecordingStoredBefore", testRecordingStoredBefore},
		{"RecordingStoredAtBackfilled", testRecordingStoredAtBackfilled},
		{"RecordingBytes", testRecordingBytes},
		{"DeliveryRoundTrip", testDeliveryRoundTrip},
		{"DeliveryStoredShape", testDeliveryStoredShape},
		{"DeliveryTimesKeepTheirOrder", testDeliveryTimesKeepTheirOrder},
		{"EnqueueOnce", testEnqueueOnce},
		{"ClaimOrderLimitAndLease", testClaimOrderLimitAndLease},
		{"SaveSetsDueTime", testSaveSetsDueTime},
		{"RetryWhileLeased", testRetryWhileLeased},
		{"NextDeliveryDue", testNextDeliveryDue},
		{"ConcurrentClaims", testConcurrentClaims},
		{"FairClaimAcrossOrganizations", testFairClaimAcrossOrganizations},
		{"ClaimBoundsInFlight", testClaimBoundsInFlight},
		{"ReserveSharesTheBounds", testReserveSharesTheBounds},
		{"NextDeliveryDueAfter", testNextDeliveryDueAfter},
		{"DeliveryFilters", testDeliveryFilters},
		{"DeliveryPaging", testDeliveryPaging},
		{"DeliveryRetention", testDeliveryRetention},
		{"IdempotencyKeyLifecycle", testIdempotencyKeyLifecycle},
		{"IdempotencyKeyTakeOverAndExpiry", testIdempotencyKeyTakeOverAndExpiry},
		{"IdempotencyKeyConcurrentClaims", testIdempotencyKeyConcurrentClaims},
		{"DialRecordedOnce", testDialRecordedOnce},
		{"TranscriptWrittenOnce", testTranscriptWrittenOnce},
		{"WritesTogether", testWritesTogether},
		{"ContactLifecycle", testContactLifecycle},
		{"ContactWaitingGroups", testContactWaitingGroups},
		{"CallsByCampaign", testCallsByCampaign},
	}
	for _, d := range backends {
		t.Run(d.name, func(t *testing.T) {
			b := backend{name: d.name, fresh: d.start(t)}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) { c.run(t, b) })
			}
		})
	}
}

func testRoundTrip(t *testing.T, b backend) {
	ctx := context.Background()
	s := open(t, b.fresh(t))
	want := richCall()
	if err := s.SaveCall(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetCall(ctx, want.Namespace, want.Status.CallID)
	if err != nil {
		t.Fatal(err)
	}
	want.ManagedFields = nil // not kept: the API server's bookkeeping
	if !equality.Semantic.DeepEqual(got, want) {
		t.Fatalf("stored call differs:\ngot:\n%s\nwant:\n%s", toYAML(t, got), toYAML(t, want))
	}
	// Semantic equality compares the raw JSON bytes too; say so plainly: a
	// caller's metadata comes back with its keys in the order sent.
	if string(got.Spec.Metadata.Raw) != string(want.Spec.Metadata.Raw) {
		t.Errorf("metadata = %s, want %s", got.Spec.Metadata.Raw, want.Spec.Metadata.Raw)
	}
}

func testOlderStateNeverOverwrites(t *testing.T, b backend) {
	s := open(t, b.fresh(t))
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	state := func(rv string, phase switchboardv1.CallPhase) *switchboardv1.Call {
		return newCall("org-a", "call_aaa", base, func(c *switchboardv1.Call) {
			c.ResourceVersion = rv
			c.Status.Phase = phase
		})
	}
	save(t, s, state("10", switchboardv1.CallInProgress))
	save(t, s, state("9", switchboardv1.CallQueued)) // a slow writer's stale state
	assertPhase(t, s, switchboardv1.CallInProgress)
	assertListed(t, s, "org-a", history.CallQuery{Status: "queued"})

	save(t, s, state("100", switchboardv1.CallEnded)) // 100 > 10 as numbers, not as text
	assertPhase(t, s, switchboardv1.CallEnded)
	assertListed(t, s, "org-a", history.CallQuery{Status: "ended"}, "call_aaa")
	assertListed(t, s, "org-a", history.CallQuery{Status: "in_progress"})

	save(t, s, state("", switchboardv1.CallQueued)) // no resourceVersion: oldest of all
	assertPhase(t, s, switchboardv1.CallEnded)
}

// CallVersion says which state of a call the store holds, in its own
// organization only.
func testCallVersion(t *testing.T, b backend) {
	ctx := context.Background()
	s := open(t, b.fresh(t))
	c := newCall("org-a", "call_aaa", time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), func(c *switchboardv1.Call) {
		c.ResourceVersion = "1234"
	})
	if _, err := s.CallVersion(ctx, "org-a", "call_aaa"); !errors.Is(err, history.ErrNotFound) {
		t.Fatalf("before saving: err = %v, want ErrNotFound", err)
	}
	save(t, s, c)
	if v, err := s.CallVersion(ctx, "org-a", "call_aaa"); err != nil || v != "1234" {
		t.Fatalf("CallVersion = %q, %v; want 1234", v, err)
	}
	c.ResourceVersion = "1300"
	save(t, s, c)
	if v, err := s.CallVersion(ctx, "org-a", "call_aaa"); err != nil || v != "1300" {
		t.Fatalf("after a newer state: CallVersion = %q, %v; want 1300", v, err)
	}
	if _, err := s.CallVersion(ctx, "org-b", "call_aaa"); !errors.Is(err, history.ErrNotFound) {
		t.Fatalf("another organization: err = %v, want ErrNotFound", err)
	}
}

func testNamespaceIsolation(t *testing.T, b backend) {
	ctx := context.Background()
	s := open(t, b.fresh(t))
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	save(t, s, newCall("org-a", "call_shared", at, func(c *switchboardv1.Call) { c.Spec.ToNumber = "+14155550001" }))
	save(t, s, newCall("org-b", "call_shared", at, func(c *switchboardv1.Call) { c.Spec.ToNumber = "+14155550002" }))
	save(t, s, newCall("org-a", "call_only_a", at, nil))

	got, err := s.GetCall(ctx, "org-b", "call_shared")
	if err != nil || got.Spec.ToNumber != "+14155550002" {
		t.Fatalf("org-b's call_shared: %v, %v", got, err)
	}
	if _, err := s.GetCall(ctx, "org-b", "call_only_a"); !errors.Is(err, history.ErrNotFound) {
		t.Fatalf("org-b reading org-a's call: err = %v, want ErrNotFound", err)
	}
	if _, err := s.GetCall(ctx, "org-a", "call_missing"); !errors.Is(err, history.ErrNotFound) {
		t.Fatalf("missing call: err = %v, want ErrNotFound", err)
	}
	assertListed(t, s, "org-b", history.CallQuery{}, "call_shared")
	assertListed(t, s, "org-c", history.CallQuery{})
}

func testOrderAndCursorPaging(t *testing.T, b backend) {
	ctx := context.Background()
	s := open(t, b.fresh(t))
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var keys []history.Key
	for i := range 57 {
		// Three calls share each instant, and ids do not follow insertion
		// order, so the call id must break ties.
		at := base.Add(time.Duration(i/3) * time.Millisecond)
		c := newCall("org-a", fmt.Sprintf("call_%04x", (i*37)%101), at, nil)
		save(t, s, c)
		keys = append(keys, history.KeyOf(c))
	}
	save(t, s, newCall("org-b", "call_other", base.Add(time.Hour), nil))
	slices.SortFunc(keys, func(x, y history.Key) int { // newest first
		switch {
		case y.Before(x):
			return -1
		case x.Before(y):
			return 1
		}
		return 0
	})

	var walked []string
	q := history.CallQuery{Limit: 7}
	for page := 0; ; page++ {
		calls, err := s.ListCalls(ctx, "org-a", q)
		if err != nil {
			t.Fatal(err)
		}
		if len(calls) == 0 {
			break
		}
		if len(calls) > 7 || page > 10 {
			t.Fatalf("page %d has %d calls", page, len(calls))
		}
		for i := range calls {
			walked = append(walked, history.KeyOf(&calls[i]).CallID)
		}
		last := history.KeyOf(&calls[len(calls)-1])
		q.After = &last
	}
	var want []string
	for _, k := range keys {
		want = append(want, k.CallID)
	}
	if !slices.Equal(walked, want) {
		t.Fatalf("walking pages of 7 gave\n%v\nwant\n%v", walked, want)
	}

	all, err := s.ListCalls(ctx, "org-a", history.CallQuery{})
	if err != nil || len(all) != 50 {
		t.Fatalf("no limit: %d calls, err %v; want the default page of 50", len(all), err)
	}
}

func testFilters(t *testing.T, b backend) {
	s := open(t, b.fresh(t))
	calls := filterFixture()
	for _, c := range calls {
		save(t, s, c)
	}
	base := calls[0].CreationTimestamp.Time
	queries := map[string]history.CallQuery{
		"status failed":              {Status: "failed"},
		"status queued":              {Status: "queued"},
		"disposition busy":           {Disposition: "busy"},
		"agent, any case":            {AgentID: strings.ToUpper(agentB)},
		"to number":                  {ToNumber: "+14155550002"},
		"source kubectl":             {Source: "kubectl"},
		"status and agent":           {Status: "ended", AgentID: agentA},
		"disposition, to and source": {Disposition: "answered", ToNumber: "+14155550000", Source: "api"},
		"created after (exclusive)":  {CreatedAfter: base.Add(10 * time.Second)},
		"created before (exclusive)": {CreatedBefore: base.Add(10 * time.Second)},
		"created window and status":  {CreatedAfter: base.Add(5 * time.Second), CreatedBefore: base.Add(30 * time.Second), Status: "ended"},
		"no match":                   {Status: "ended", Disposition: "busy", ToNumber: "+19995550000"},
		// Bounds beyond int64 nanoseconds (1677..2262) must compare as
		// times, not wrap around: they once matched every stored call.
		"no match: created after 2263":  {CreatedAfter: time.Date(2263, 1, 1, 0, 0, 0, 0, time.UTC)},
		"no match: created before 1600": {CreatedBefore: time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)},
		"created after 1600":            {CreatedAfter: time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)},
		"created before 2263":           {CreatedBefore: time.Date(2263, 1, 1, 0, 0, 0, 0, time.UTC)},
		"created before 9999-12-31":     {CreatedBefore: time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)},
	}
	for name, q := range queries {
		t.Run(name, func(t *testing.T) {
			var want []string
			for i := len(calls) - 1; i >= 0; i-- { // the fixture is oldest first
				if matches(calls[i], q) {
					want = append(want, history.KeyOf(calls[i]).CallID)
				}
			}
			q.Limit = 1000
			assertListed(t, s, "org-a", q, want...)
			if len(want) == 0 && !strings.HasPrefix(name, "no match") {
				t.Fatal("the fixture has no call for this query: the test would prove nothing")
			}
		})
	}
}

func testReopen(t *testing.T, b backend) {
	ctx := context.Background()
	dsn := b.fresh(t)
	s := open(t, dsn)
	save(t, s, newCall("org-a", "call_kept", time.Now(), nil))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dsn)
	if _, err := s.GetCall(ctx, "org-a", "call_kept"); err != nil {
		t.Fatalf("after reopening: %v", err)
	}
	for v := 1; v <= migrations; v++ {
		if n := queryInt(t, dsn, fmt.Sprintf("SELECT count(*) FROM schema_migrations WHERE version = %d", v)); n != 1 {
			t.Fatalf("migration %d recorded %d times, want once", v, n)
		}
	}
}

func testNewerSchemaRefused(t *testing.T, b backend) {
	dsn := b.fresh(t)
	closeNow(t, open(t, dsn))
	execRaw(t, dsn, "INSERT INTO schema_migrations (version) VALUES (999)")
	assertOpenFails(t, dsn, "history store schema is at version 999, newer than this Switchboard (knows up to ",
		"upgrade Switchboard or point it at another database")
}

func testCorruptMigrationTable(t *testing.T, b backend) {
	cases := map[string]struct{ sql, want string }{
		"no version column": {
			"DROP TABLE schema_migrations; CREATE TABLE schema_migrations (name TEXT); INSERT INTO schema_migrations VALUES ('x')",
			"migration table schema_migrations is unreadable",
		},
		"version not a number": {
			"DROP TABLE schema_migrations; CREATE TABLE schema_migrations (version TEXT); INSERT INTO schema_migrations VALUES ('one')",
			"migration table schema_migrations is unreadable",
		},
		"versions out of sequence": {
			"DELETE FROM schema_migrations WHERE version = 1",
			"migration table schema_migrations is corrupt: it records versions [2",
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dsn := b.fresh(t)
			closeNow(t, open(t, dsn))
			execRaw(t, dsn, c.sql)
			assertOpenFails(t, dsn, c.want)
		})
	}
}

// testRecordingStoredBefore: calls with a recording stored before a time,
// of every organization, oldest first; saving a call without its recording
// (at the same resourceVersion) takes it out.
func testRecordingStoredBefore(t *testing.T, b backend) {
	ctx := context.Background()
	s := open(t, b.fresh(t))
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	recorded := func(ns, id string, stored time.Duration) *switchboardv1.Call {
		return newCall(ns, id, base, func(c *switchboardv1.Call) {
			c.ResourceVersion = "7"
			at := metav1.NewTime(base.Add(stored))
			c.Status.Phase = switchboardv1.CallEnded
			c.Status.Recording = &switchboardv1.CallRecording{
				Key: ns + "/" + id + ".wav", ContentType: "audio/wav", SizeBytes: 4, StoredAt: &at,
			}
		})
	}
	// Saved out of order, in two organizations.
	second := recorded("org-b", "call_second", 2*time.Minute)
	first := recorded("org-a", "call_first", time.Minute)
	for _, c := range []*switchboardv1.Call{
		second, first,
		recorded("org-a", "call_late", 5*time.Minute),
		recorded("org-a", "call_at_cutoff", 3*time.Minute), // not strictly before
		newCall("org-a", "call_none", base, nil),           // no recording
	} {
		save(t, s, c)
	}
	ids := func(before time.Time, limit int) []string {
		t.Helper()
		calls, err := s.CallsWithRecordingStoredBefore(ctx, before, limit)
		if err != nil {
			t.Fatalf("CallsWithRecordingStoredBefore: %v", err)
		}
		var got []string
		for i := range calls {
			got = append(got, calls[i].Namespace+"/"+calls[i].Status.CallID)
			if calls[i].Status.Recording == nil {
				t.Errorf("%s has no recording", calls[i].Status.CallID)
			}
		}
		return got
	}
	cutoff := base.Add(3 * time.Minute)
	if got, want := ids(cutoff, 10), []string{"org-a/call_first", "org-b/call_second"}; !slices.Equal(got, want) {
		t.Fatalf("stored before %s: %v, want %v", cutoff, got, want)
	}
	if got, want := ids(cutoff, 1), []string{"org-a/call_first"}; !slices.Equal(got, want) {
		t.Fatalf("limit 1: %v, want %v", got, want)
	}
	if got := ids(base, 10); len(got) != 0 {
		t.Fatalf("stored before %s: %v, want none", base, got)
	}

	// The recording is deleted: the same state without it replaces the
	// record (same resourceVersion), and the call leaves the list.
	gone := first.DeepCopy()
	gone.Status.Recording = nil
	save(t, s, gone)
	if got, want := ids(cutoff, 10), []string{"org-b/call_second"}; !slices.Equal(got, want) {
		t.Fatalf("after the recording was removed: %v, want %v", got, want)
	}
	got, err := s.GetCall(ctx, "org-a", "call_first")
	if err != nil || got.Status.Recording != nil || got.Status.Phase != switchboardv1.CallEnded {
		t.Fatalf("GetCall after the recording was removed = %+v, %v; want the ended call without a recording", got, err)
	}
	// An older state, still with its recording, does not bring it back.
	older := first.DeepCopy()
	older.ResourceVersion = "6"
	if err := s.SaveCall(ctx, older); err != nil {
		t.Fatal(err)
	}
	if got := ids(cutoff, 10); slices.Contains(got, "org-a/call_first") {
		t.Fatalf("an older state brought the recording back: %v", got)
	}
}

// testRecordingStoredAtBackfilled: calls archived before migration 3 get
// recording_stored_at from their object.
func testRecordingStoredAtBackfilled(t *testing.T, b backend) {
	dsn := b.fresh(t)
	s := open(t, dsn)
	withRecording := richCall() // recording stored 80 s after it was accepted
	save(t, s, withRecording)
	save(t, s, newCall("org-a", "call_none", withRecording.QueueOrder(), nil))
	closeNow(t, s)
	// Back to the schema before migration 3 (and those after it).
	execRaw(t, dsn, undoMigrationsAfter7)
	execRaw(t, dsn, "ALTER TABLE calls DROP COLUMN duration_ms; DELETE FROM schema_migrations WHERE version = 7")
	execRaw(t, dsn, "DROP TABLE dial_attempts; DELETE FROM schema_migrations WHERE version = 6")
	execRaw(t, dsn, "DROP INDEX deliveries_leased; DELETE FROM schema_migrations WHERE version = 5")
	execRaw(t, dsn, "DROP TABLE idempotency_keys; DELETE FROM schema_migrations WHERE version = 4")
	execRaw(t, dsn, "DROP INDEX calls_by_recording_stored; ALTER TABLE calls DROP COLUMN recording_stored_at; DELETE FROM schema_migrations WHERE version = 3")

	s = open(t, dsn)
	stored := withRecording.Status.Recording.StoredAt.Time
	calls, err := s.CallsWithRecordingStoredBefore(context.Background(), stored.Add(time.Second), 10)
	if err != nil || len(calls) != 1 || calls[0].Status.CallID != withRecording.Status.CallID {
		t.Fatalf("after migrating: %d calls (%v), want %s", len(calls), err, withRecording.Status.CallID)
	}
	if calls, err := s.CallsWithRecordingStoredBefore(context.Background(), stored, 10); err != nil || len(calls) != 0 {
		t.Fatalf("stored before the recording's time: %d calls (%v), want none", len(calls), err)
	}
}

// testConcurrentOpenAndWrites: replicas starting together migrate once, and
// their concurrent writes all land.
func testConcurrentOpenAndWrites(t *testing.T, b backend) {
	ctx := context.Background()
	dsn := b.fresh(t)
	const replicas, callsEach = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, replicas*(callsEach+1))
	for r := range replicas {
		wg.Go(func() {
			s, err := history.Open(ctx, dsn)
			if err != nil {
				errs <- err
				return
			}
			defer func() { _ = s.Close() }()
			for i := range callsEach {
				c := newCall("org-a", fmt.Sprintf("call_%d_%d", r, i), time.Now(), nil)
				if err := s.SaveCall(ctx, c); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := queryInt(t, dsn, "SELECT count(*) FROM schema_migrations"); n != migrations {
		t.Errorf("%d migrations recorded, want %d", n, migrations)
	}
	if n := queryInt(t, dsn, "SELECT count(*) FROM calls"); n != replicas*callsEach {
		t.Errorf("%d calls stored, want %d", n, replicas*callsEach)
	}
}

func TestOpenRefusesUnknownAddress(t *testing.T) {
	for _, dsn := range []string{"", "sqlite:", "mysql://user:secret@db/x", "history.db"} {
		_, err := history.Open(context.Background(), dsn)
		if err == nil || !strings.Contains(err.Error(), "postgres://") || !strings.Contains(err.Error(), "sqlite:PATH") {
			t.Errorf("Open(%q) = %v, want an error naming the accepted forms", dsn, err)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("Open(%q) error repeats the password: %v", dsn, err)
		}
	}
}

func TestSQLiteFileSetup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nested", "folder", "history.db")
	s := open(t, "sqlite:"+path)
	save(t, s, newCall("org-a", "call_x", time.Now(), nil))
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database file: %v", err)
	}
	db := rawDB(t, "sqlite:"+path)
	var mode string
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v; want wal", mode, err)
	}
}

func TestSQLiteInMemory(t *testing.T) {
	s := open(t, "sqlite::memory:")
	save(t, s, newCall("org-a", "call_x", time.Now(), nil))
	if _, err := s.GetCall(context.Background(), "org-a", "call_x"); err != nil {
		t.Fatal(err)
	}
}

// Fixtures.

const (
	agentA = "0b7e6c1a-8d3f-4c2e-9a51-3f2d1c0b9a8e"
	agentB = "5f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0"
)

// newCall is a REST API call accepted at at, queued; mutate adjusts it.
func newCall(ns, id string, at time.Time, mutate func(*switchboardv1.Call)) *switchboardv1.Call {
	c := &switchboardv1.Call{
		TypeMeta: metav1.TypeMeta{APIVersion: "switchboard.dev/v1alpha1", Kind: "Call"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace:         ns,
			Name:              strings.ReplaceAll(id, "_", "-"),
			ResourceVersion:   "1",
			CreationTimestamp: metav1.NewTime(at.Truncate(time.Second)),
			Annotations:       map[string]string{switchboardv1.AcceptedAtAnnotation: at.UTC().Format(time.RFC3339Nano)},
		},
		Spec:   switchboardv1.CallSpec{AgentID: agentA, ToNumber: "+14155550001", Source: switchboardv1.SourceAPI},
		Status: switchboardv1.CallStatus{CallID: id, Phase: switchboardv1.CallQueued},
	}
	if mutate != nil {
		mutate(c)
	}
	return c
}

// richCall has every part of a call the REST API renders.
func richCall() *switchboardv1.Call {
	at := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	micro := func(d time.Duration) *metav1.MicroTime {
		m := metav1.NewMicroTime(at.Add(d).Truncate(time.Microsecond))
		return &m
	}
	seconds := func(d time.Duration) *metav1.Time {
		s := metav1.NewTime(at.Add(d).Truncate(time.Second))
		return &s
	}
	duration := int64(64000)
	return newCall("org-a", "call_4f2a9c0e1b3d5a7c9e0f1a2b3c4d5e6f", at, func(c *switchboardv1.Call) {
		c.UID = "7d1c1e0a-2b3c-4d5e-8f90-a1b2c3d4e5f6"
		c.ResourceVersion = "48213"
		c.Generation = 1
		c.Labels = map[string]string{"switchboard.dev/agent": agentA}
		c.Annotations["example.com/campaign"] = "spring <renewals> & more"
		c.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "switchboard", Operation: metav1.ManagedFieldsOperationApply}}
		c.Spec.FromNumber = "+14155559999"
		c.Spec.Variables = &apiextensionsv1.JSON{Raw: []byte(`{"name":"Ada","balance":12.5,"tags":["a","b"],"nested":{"ok":true,"none":null}}`)}
		c.Spec.Metadata = &apiextensionsv1.JSON{Raw: []byte(`{"zeta":1,"alpha":{"b":2,"a":1},"crm_id":"c-42"}`)}
		c.Status = switchboardv1.CallStatus{
			CallID:              "call_4f2a9c0e1b3d5a7c9e0f1a2b3c4d5e6f",
			Phase:               switchboardv1.CallEnded,
			Disposition:         switchboardv1.DispositionAnswered,
			FromNumber:          "+14155559999",
			StartedAt:           micro(time.Second),
			Trunk:               "carrier-east",
			AnsweredAt:          micro(5 * time.Second),
			EndedAt:             micro(69 * time.Second),
			DurationMS:          &duration,
			Duration:            "1m4s",
			DisconnectionReason: "agent_hangup",
			// A transfer that failed (busy): the agent went on and hung up.
			Transfer: &switchboardv1.CallTransfer{To: "+14155550100", Mode: switchboardv1.TransferCold,
				Method: switchboardv1.TransferByBridge, Result: switchboardv1.TransferBusy, SIPStatus: 486,
				Detail: "the person's line was busy (486 Busy Here)", RequestedAt: micro(30 * time.Second)},
			Recording: &switchboardv1.CallRecording{
				Key: "org-a/call_4f2a9c0e1b3d5a7c9e0f1a2b3c4d5e6f.wav", ContentType: "audio/wav",
				SizeBytes: 2048000, StoredAt: seconds(80 * time.Second),
			},
			Analysis: &switchboardv1.CallAnalysis{
				Summary: "Ada confirmed the renewal.",
				ExtractedData: []switchboardv1.ExtractedValue{
					{Name: "renewed", Value: &apiextensionsv1.JSON{Raw: []byte(`true`)}},
					{Name: "reason"}, // not provided: null in the REST API
				},
				AnalyzedAt: seconds(90 * time.Second),
			},
			EmittedEvents:      []string{"call.started", "call.ended"},
			ObservedGeneration: 1,
			Conditions: []metav1.Condition{{
				Type: "Ready", Status: metav1.ConditionTrue, Reason: "Completed",
				Message: "call ended", LastTransitionTime: *seconds(90 * time.Second), ObservedGeneration: 1,
			}},
		}
	})
}

// filterFixture is 40 calls of org-a a second apart, oldest first, spread
// over every filtered column, plus one refused call (failed without a phase).
func filterFixture() []*switchboardv1.Call {
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	phases := []switchboardv1.CallPhase{"queued", "in_progress", "ended", "failed", "ended"}
	dispositions := map[switchboardv1.CallPhase][]switchboardv1.Disposition{
		"ended": {"answered", "busy", "no_answer"}, "failed": {"carrier_failure"},
	}
	var calls []*switchboardv1.Call
	for i := range 40 {
		calls = append(calls, newCall("org-a", fmt.Sprintf("call_%02d", i), base.Add(time.Duration(i)*time.Second), func(c *switchboardv1.Call) {
			c.Status.Phase = phases[i%len(phases)]
			if d := dispositions[c.Status.Phase]; d != nil {
				c.Status.Disposition = d[i%len(d)]
			}
			if i%3 == 0 {
				c.Spec.AgentID = strings.ToUpper(agentB) // stored in any case, matched in lower
			}
			c.Spec.ToNumber = fmt.Sprintf("+1415555000%d", i%4)
			if i%4 == 1 {
				c.Spec.Source = switchboardv1.SourceKubectl
			}
		}))
	}
	calls = append(calls, newCall("org-a", "call_abc123", base.Add(41*time.Second), func(c *switchboardv1.Call) {
		c.Status = switchboardv1.CallStatus{} // its call id comes from its name
		c.Name = "call-abc123"
		c.Annotations[switchboardv1.RefusalCodeAnnotation] = "dnc_blocked"
	}))
	return calls
}

// matches is CallQuery's documented meaning, against which the stores'
// answers are checked.
func matches(c *switchboardv1.Call, q history.CallQuery) bool {
	created := history.KeyOf(c).CreatedAt
	return (q.Status == "" || string(c.CurrentPhase()) == q.Status) &&
		(q.Disposition == "" || string(c.Status.Disposition) == q.Disposition) &&
		(q.AgentID == "" || strings.EqualFold(c.Spec.AgentID, q.AgentID)) &&
		(q.ToNumber == "" || c.Spec.ToNumber == q.ToNumber) &&
		(q.Source == "" || string(c.Spec.Source) == q.Source) &&
		(q.CreatedAfter.IsZero() || created.After(q.CreatedAfter)) &&
		(q.CreatedBefore.IsZero() || created.Before(q.CreatedBefore))
}

// Helpers.

func open(t testing.TB, dsn string) history.Store {
	t.Helper()
	s, err := history.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func closeNow(t *testing.T, s history.Store) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func save(t *testing.T, s history.Store, c *switchboardv1.Call) {
	t.Helper()
	if err := s.SaveCall(context.Background(), c); err != nil {
		t.Fatal(err)
	}
}

func assertPhase(t *testing.T, s history.Store, want switchboardv1.CallPhase) {
	t.Helper()
	got, err := s.GetCall(context.Background(), "org-a", "call_aaa")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != want {
		t.Fatalf("phase = %s, want %s", got.Status.Phase, want)
	}
}

func assertListed(t *testing.T, s history.Store, ns string, q history.CallQuery, want ...string) {
	t.Helper()
	calls, err := s.ListCalls(context.Background(), ns, q)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := range calls {
		got = append(got, history.KeyOf(&calls[i]).CallID)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ListCalls(%s, %+v) =\n%v\nwant\n%v", ns, q, got, want)
	}
}

func assertOpenFails(t *testing.T, dsn string, want ...string) {
	t.Helper()
	s, err := history.Open(context.Background(), dsn)
	if err == nil {
		_ = s.Close()
		t.Fatal("Open succeeded")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("Open error %q does not say %q", err, w)
		}
	}
}

// rawDB opens dsn's database directly, beside the store, to inspect or
// damage it.
func rawDB(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	driver, name := "pgx", dsn
	if path, ok := strings.CutPrefix(dsn, "sqlite:"); ok {
		driver, name = "sqlite", path
	}
	db, err := sql.Open(driver, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func execRaw(t *testing.T, dsn, statements string) {
	t.Helper()
	db := rawDB(t, dsn)
	for stmt := range strings.SplitSeq(statements, ";") {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
}

func queryInt(t *testing.T, dsn, query string) int {
	t.Helper()
	var n int
	if err := rawDB(t, dsn).QueryRow(query).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func toYAML(t *testing.T, v any) string {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// undoMigration10 takes a database back to before the recording sizes'
// migration.
const undoMigration10 = "DROP INDEX calls_recordings_by_namespace; ALTER TABLE calls DROP COLUMN recording_size_bytes; " +
	"DELETE FROM schema_migrations WHERE version = 10; "

// testRecordingBytes: an organization's stored recordings are summed, its
// own only, without those retention deleted; calls archived before
// migration 10 count with the size in their object.
func testRecordingBytes(t *testing.T, b backend) {
	dsn := b.fresh(t)
	s := open(t, dsn)
	ctx := context.Background()
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	recorded := func(ns, id string, size int64) *switchboardv1.Call {
		return newCall(ns, id, base, func(c *switchboardv1.Call) {
			c.ResourceVersion = "7"
			at := metav1.NewTime(base)
			c.Status.Phase = switchboardv1.CallEnded
			c.Status.Recording = &switchboardv1.CallRecording{Key: ns + "/" + id + ".wav", ContentType: "audio/wav",
				SizeBytes: size, StoredAt: &at}
		})
	}
	deleted := recorded("org-a", "call_deleted", 1000)
	for _, c := range []*switchboardv1.Call{recorded("org-a", "call_1", 3<<30), recorded("org-a", "call_2", 44),
		deleted, recorded("org-b", "call_3", 7), newCall("org-a", "call_none", base, nil)} {
		save(t, s, c)
	}
	gone := deleted.DeepCopy()
	gone.Status.Recording = nil
	save(t, s, gone)
	sums := func(s history.Store) [2]int64 {
		t.Helper()
		var out [2]int64
		for i, ns := range []string{"org-a", "org-b"} {
			n, err := s.RecordingBytes(ctx, ns)
			if err != nil {
				t.Fatal(err)
			}
			out[i] = n
		}
		return out
	}
	if got, want := sums(s), [2]int64{3<<30 + 44, 7}; got != want {
		t.Fatalf("recording bytes of org-a and org-b: %v, want %v", got, want)
	}
	closeNow(t, s)
	execRaw(t, dsn, undoMigration10)
	s = open(t, dsn)
	if got, want := sums(s), [2]int64{3<<30 + 44, 7}; got != want {
		t.Fatalf("after migrating from before migration 10: %v, want %v", got, want)
	}
}
