package history

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/history/pgtest"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// benchContactsEnv sets how many contacts BenchmarkContacts stores in its
// campaign; a few thousand make a quick run.
const benchContactsEnv = "SWITCHBOARD_CONTACTS_BENCH"

// BenchmarkContacts stores a campaign of a million contacts (beside one of
// a tenth as many), most of them waiting for their window over the next
// day, and times what the campaign runner and reconciler ask of it: the
// next due contacts (every 200 ms while it runs), a claim, and the
// counters (every 5 s).
func BenchmarkContacts(b *testing.B) {
	n := testsupport.BenchCount(b, benchContactsEnv, 1_000_000)
	for _, st := range []struct {
		name string
		dsn  func() string
	}{
		{"sqlite", func() string { return "sqlite:" + b.TempDir() + "/history.db" }},
		{"postgres", func() string { return pgtest.Start(b) }},
	} {
		b.Run(st.name, func(b *testing.B) {
			s, err := Open(context.Background(), st.dsn())
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = s.Close() }()
			now := time.Date(2026, 11, 23, 15, 0, 0, 0, time.UTC)
			start := time.Now()
			seedContacts(b, s, "bench", n, now)
			seedContacts(b, s, "other", n/10, now)
			took := time.Since(start)
			b.Logf("%s: stored %d + %d contacts in %s (%.0f a second)", st.name, n, n/10, took.Round(time.Millisecond),
				float64(n+n/10)/took.Seconds())
			benchContactReads(b, s, n, now)
		})
	}
}

// seedContacts stores n contacts, one in ten due now, the others spread
// over the next day.
func seedContacts(b *testing.B, s Store, campaign string, n int, now time.Time) {
	rng := rand.New(rand.NewPCG(3, 4))
	const chunk = 10_000
	for from := 0; from < n; from += chunk {
		cs := make([]Contact, 0, chunk)
		for i := from; i < min(from+chunk, n); i++ {
			due := now
			if i%10 != 0 {
				due = now.Add(time.Duration(rng.IntN(86400)) * time.Second)
			}
			cs = append(cs, Contact{Seq: int64(i), ToNumber: fmt.Sprintf("+1212%07d", i), Zones: []string{"America/New_York"},
				Variables: []byte(`{"customer_name":"Ada"}`), DueAt: due})
		}
		if _, err := s.AddContacts(context.Background(), "org-bench", campaign, cs, now); err != nil {
			b.Fatal(err)
		}
	}
}

func benchContactReads(b *testing.B, s Store, n int, now time.Time) {
	ctx := context.Background()
	b.Run("next-200-due", func(b *testing.B) {
		testsupport.Measure(b, func() error {
			due, err := s.DueContacts(ctx, "org-bench", "bench", now, 200)
			if err == nil && len(due) != 200 {
				err = fmt.Errorf("%d due", len(due))
			}
			return err
		})
	})
	seq := 0
	b.Run("claim-and-finish", func(b *testing.B) {
		testsupport.Measure(b, func() error {
			c := Contact{Seq: int64(seq * 10), Attempts: 0}
			seq++
			id := fmt.Sprintf("call_bench%d", c.Seq)
			if ok, err := s.ClaimContact(ctx, "org-bench", "bench", c, id, "2026-11-23", now); !ok || err != nil {
				return fmt.Errorf("claim %d: %v, %v", c.Seq, ok, err)
			}
			_, err := s.FinishAttempt(ctx, "org-bench", "bench", c.Seq, id, ContactUpdate{State: ContactDone, Outcome: "answered"}, now)
			return err
		})
	})
	b.Run("counters", func(b *testing.B) {
		testsupport.Measure(b, func() error {
			counts, err := s.CountContacts(ctx, "org-bench", "bench", now)
			if err == nil && counts.Total() != int64(n) {
				err = fmt.Errorf("counted %d", counts.Total())
			}
			return err
		})
	})
}
