package history_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/history"
)

// undoMigrationsAfter7 takes a database back to before the recording sizes'
// migration, the contacts' and the transcripts' (migrations 10, 9 and 8).
const undoMigrationsAfter7 = undoMigration10 + "DROP INDEX calls_by_campaign; ALTER TABLE calls DROP COLUMN campaign; " +
	"DROP TABLE campaign_contacts; DELETE FROM schema_migrations WHERE version = 9; " +
	// and the transcripts' before it.
	"DROP TABLE transcripts; DELETE FROM schema_migrations WHERE version = 8"

func contactsOf(n int, due time.Time) []history.Contact {
	cs := make([]history.Contact, n)
	for i := range cs {
		cs[i] = history.Contact{Seq: int64(i), ToNumber: fmt.Sprintf("+1212555%04d", i),
			Zones: []string{"America/New_York"}, DueAt: due, Variables: []byte(`{"name":"Ann"}`)}
	}
	return cs
}

// A campaign's contacts: a number is added once however often it is sent,
// due ones come earliest first, an attempt is claimed by one claimer of
// many and its outcome recorded once, and the counters add up.
func testContactLifecycle(t *testing.T, b backend) {
	ctx := context.Background()
	s := open(t, b.fresh(t))
	now := time.Date(2026, 11, 23, 15, 0, 0, 0, time.UTC)
	cs := contactsOf(1200, now)
	cs[5].DueAt = now.Add(-time.Minute) // the earliest due
	cs[7].DueAt = now.Add(time.Hour)    // waits for its window
	added, err := s.AddContacts(ctx, "org-a", "cmp_1", cs, now)
	if err != nil || added != 1200 {
		t.Fatalf("added %d, %v; want 1200", added, err)
	}
	again := append(contactsOf(2, now), history.Contact{Seq: 5000, ToNumber: "+12125550000"})
	if added, err := s.AddContacts(ctx, "org-a", "cmp_1", again, now); err != nil || added != 0 {
		t.Fatalf("adding the same contacts again added %d, %v; want 0", added, err)
	}
	if added, _ := s.AddContacts(ctx, "org-b", "cmp_1", contactsOf(3, now), now); added != 3 {
		t.Fatalf("another organization's campaign of the same id added %d; want 3", added)
	}
	if seq, err := s.MaxContactSeq(ctx, "org-a", "cmp_1"); err != nil || seq != 1199 {
		t.Fatalf("MaxContactSeq = %d, %v; want 1199", seq, err)
	}
	due, err := s.DueContacts(ctx, "org-a", "cmp_1", now, 3)
	if err != nil || len(due) != 3 || due[0].Seq != 5 || due[1].Seq != 0 || due[2].Seq != 1 {
		t.Fatalf("due = %+v, %v; want seqs 5, 0, 1", due, err)
	}
	if string(due[1].Variables) != `{"name":"Ann"}` || due[1].Zones[0] != "America/New_York" {
		t.Errorf("contact read back as %+v", due[1])
	}

	var claimed atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			ok, err := s.ClaimContact(ctx, "org-a", "cmp_1", due[0], "call_a5_1", "2026-11-23", now)
			if err != nil {
				t.Error(err)
			}
			if ok {
				claimed.Add(1)
			}
		})
	}
	wg.Wait()
	if claimed.Load() != 1 {
		t.Fatalf("%d claimers got the attempt; want 1", claimed.Load())
	}
	dialing, err := s.DialingContacts(ctx, "org-a", "cmp_1")
	if err != nil || len(dialing) != 1 || dialing[0].CallID != "call_a5_1" || dialing[0].Attempts != 1 || dialing[0].AttemptsToday != 1 {
		t.Fatalf("dialing = %+v, %v", dialing, err)
	}
	redial := history.ContactUpdate{State: history.ContactPending, DueAt: now.Add(10 * time.Minute), Outcome: "busy"}
	if ok, err := s.FinishAttempt(ctx, "org-a", "cmp_1", 5, "call_a5_1", redial, now); !ok || err != nil {
		t.Fatalf("finishing the attempt: %v, %v", ok, err)
	}
	if ok, _ := s.FinishAttempt(ctx, "org-a", "cmp_1", 5, "call_a5_1", redial, now); ok {
		t.Fatal("an attempt's outcome was recorded twice")
	}
	later := now.Add(11 * time.Minute)
	c := findContact(t, s, later, 5)
	if c.Attempts != 1 || c.Outcome != "busy" {
		t.Fatalf("after a busy attempt: %+v", c)
	}
	// The second attempt, released unplaced: it is not counted.
	if ok, _ := s.ClaimContact(ctx, "org-a", "cmp_1", c, "call_a5_2", "2026-11-23", later); !ok {
		t.Fatal("the redial could not be claimed")
	}
	if ok, _ := s.ReleaseAttempt(ctx, "org-a", "cmp_1", 5, "call_a5_2", later, later); !ok {
		t.Fatal("the redial could not be released")
	}
	if c := findContact(t, s, later, 5); c.Attempts != 1 || c.AttemptsToday != 1 || c.State != history.ContactPending {
		t.Fatalf("after a release: %+v", c)
	}
	if ok, _ := s.ClaimContact(ctx, "org-a", "cmp_1", c, "call_a5_2", "2026-11-24", later); !ok {
		t.Fatal("the redial could not be claimed after its release")
	}
	if c := dialingContact(t, s, 5); c.Attempts != 2 || c.AttemptsToday != 1 || c.Day != "2026-11-24" {
		t.Fatalf("an attempt on a new day: %+v", c)
	}
	done := history.ContactUpdate{State: history.ContactDone, Outcome: "answered"}
	if ok, _ := s.FinishAttempt(ctx, "org-a", "cmp_1", 5, "call_a5_2", done, later); !ok {
		t.Fatal("the redial's outcome was not recorded")
	}

	counts, err := s.CountContacts(ctx, "org-a", "cmp_1", now)
	if err != nil || counts.Total() != 1200 || counts.ByState[history.ContactDone] != 1 ||
		counts.ByOutcome["answered"] != 1 || counts.Waiting != 1 || !counts.NextDue.Equal(now.Add(time.Hour)) {
		t.Fatalf("counts = %+v, %v", counts, err)
	}
	later2 := []history.Deferral{{Seq: 0, DueAt: now.Add(2 * time.Hour)}, {Seq: 1, DueAt: now.Add(3 * time.Hour)}}
	if err := s.DeferContacts(ctx, "org-a", "cmp_1", later2, now); err != nil {
		t.Fatal(err)
	}
	if counts, _ := s.CountContacts(ctx, "org-a", "cmp_1", now); counts.Waiting != 3 {
		t.Fatalf("deferred contacts do not wait: %+v", counts)
	}
	if ok, err := s.SkipContact(ctx, "org-a", "cmp_1", 2, "window_closed", now); !ok || err != nil {
		t.Fatalf("skipping: %v, %v", ok, err)
	}
	if counts, _ := s.CountContacts(ctx, "org-a", "cmp_1", now); counts.ByOutcome["window_closed"] != 1 ||
		counts.ByState[history.ContactSkipped] != 1 {
		t.Fatalf("a skipped contact is not counted: %+v", counts)
	}
	n, err := s.CancelContacts(ctx, "org-a", "cmp_1", now)
	if err != nil || n != 1198 {
		t.Fatalf("canceled %d, %v; want the 1198 pending", n, err)
	}
	if due, _ := s.DueContacts(ctx, "org-a", "cmp_1", now.Add(24*time.Hour), 10); len(due) != 0 {
		t.Fatalf("a canceled campaign has due contacts: %+v", due)
	}
	if n, err := s.DeleteContacts(ctx, "org-a", "cmp_1"); err != nil || n != 1200 {
		t.Fatalf("deleted %d, %v", n, err)
	}
	if counts, _ := s.CountContacts(ctx, "org-b", "cmp_1", now); counts.Total() != 3 {
		t.Fatalf("deleting one organization's campaign touched another's: %+v", counts)
	}
}

func findContact(t *testing.T, s history.Store, now time.Time, seq int64) history.Contact {
	t.Helper()
	due, err := s.DueContacts(context.Background(), "org-a", "cmp_1", now, 5000)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range due {
		if c.Seq == seq {
			return c
		}
	}
	t.Fatalf("contact %d is not due at %v", seq, now)
	return history.Contact{}
}

func dialingContact(t *testing.T, s history.Store, seq int64) history.Contact {
	t.Helper()
	dialing, err := s.DialingContacts(context.Background(), "org-a", "cmp_1")
	if err != nil || len(dialing) != 1 || dialing[0].Seq != seq {
		t.Fatalf("dialing = %+v, %v; want contact %d", dialing, err, seq)
	}
	return dialing[0]
}

// A campaign's calls are listed by the campaign's label.
func testCallsByCampaign(t *testing.T, b backend) {
	s := open(t, b.fresh(t))
	at := time.Date(2026, 11, 23, 15, 0, 0, 0, time.UTC)
	for i, campaign := range []string{"spring", "autumn", "spring", ""} {
		save(t, s, newCall("org-a", fmt.Sprintf("call_%d", i), at.Add(time.Duration(i)*time.Second), func(c *switchboardv1.Call) {
			if campaign != "" {
				c.Labels = map[string]string{switchboardv1.CampaignLabel: campaign}
			}
		}))
	}
	got, err := s.ListCalls(context.Background(), "org-a", history.CallQuery{Campaign: "spring", Limit: 10})
	if err != nil || len(got) != 2 || got[0].Status.CallID != "call_2" || got[1].Status.CallID != "call_0" {
		t.Fatalf("spring's calls = %d, %v", len(got), err)
	}
}

// The waiting contacts are counted by their zones, the group that opens
// first first, at most MaxWaitingGroups groups.
func testContactWaitingGroups(t *testing.T, b backend) {
	ctx := context.Background()
	s := open(t, b.fresh(t))
	now := time.Date(2026, 11, 23, 15, 0, 0, 0, time.UTC)
	cs := contactsOf(40, now)
	for i := range cs {
		switch {
		case i < 3: // due now: not waiting
		case i < 6:
			cs[i].Zones, cs[i].DueAt = []string{"Pacific/Honolulu"}, now.Add(time.Duration(i)*time.Hour)
		case i < 8:
			cs[i].Zones, cs[i].DueAt = []string{"America/Adak", "Pacific/Guam"}, now.Add(30*time.Minute)
		default: // one zone each, opening later and later
			cs[i].Zones, cs[i].DueAt = []string{fmt.Sprintf("Etc/GMT+%d", i%12)}, now.Add(time.Duration(i)*24*time.Hour)
			cs[i].Zones[0] += fmt.Sprint("-", i)
		}
	}
	if _, err := s.AddContacts(ctx, "org-a", "cmp_1", cs, now); err != nil {
		t.Fatal(err)
	}
	counts, err := s.CountContacts(ctx, "org-a", "cmp_1", now)
	if err != nil || counts.Waiting != 37 {
		t.Fatalf("counts = %+v, %v; want 37 waiting", counts, err)
	}
	g := counts.WaitingGroups
	if len(g) != history.MaxWaitingGroups {
		t.Fatalf("%d groups, want at most %d: %+v", len(g), history.MaxWaitingGroups, g)
	}
	if fmt.Sprint(g[0].Zones) != "[America/Adak Pacific/Guam]" || g[0].Count != 2 || !g[0].NextDue.Equal(now.Add(30*time.Minute)) {
		t.Errorf("first group = %+v, want Adak and Guam, 2, in 30 minutes", g[0])
	}
	if fmt.Sprint(g[1].Zones) != "[Pacific/Honolulu]" || g[1].Count != 3 || !g[1].NextDue.Equal(now.Add(3*time.Hour)) {
		t.Errorf("second group = %+v, want Honolulu, 3, in 3 hours", g[1])
	}
	if g[2].Count != 1 || !g[2].NextDue.Equal(now.Add(8*24*time.Hour)) {
		t.Errorf("third group = %+v, want the contact due in 8 days", g[2])
	}
}
