package history

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-dev/switchboard/internal/history/pgtest"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// benchCallsEnv sets how many calls BenchmarkStore stores in its main
// organization; a few thousand make a quick run.
const benchCallsEnv = "SWITCHBOARD_HISTORY_BENCH_CALLS"

// BenchmarkStore measures the REST API's reads over an organization of a
// million archived calls (plus a smaller second one), on both stores, and
// reports their latency percentiles.
func BenchmarkStore(b *testing.B) {
	n := testsupport.BenchCount(b, benchCallsEnv, 1_000_000)
	stores := []struct {
		name string
		dsn  func() string
	}{
		{"sqlite", func() string { return "sqlite:" + b.TempDir() + "/history.db" }},
		{"postgres", func() string { return pgtest.Start(b) }},
	}
	for _, st := range stores {
		s, err := Open(context.Background(), st.dsn())
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		seed(b, s, "org-bench", n)
		seed(b, s, "org-other", n/10)
		b.Logf("%s: seeded %d + %d calls in %s", st.name, n, n/10, time.Since(start).Round(time.Second))
		benchReads(b, st.name, s, n)
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

func benchReads(b *testing.B, name string, s Store, n int) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	deepKey := func() *Key { // somewhere in the oldest tenth: far down the newest-first order
		k := KeyOf(testsupport.BenchCall("org-bench", 50+rng.IntN(n/10)))
		return &k
	}
	lists := []struct {
		name  string
		query func() CallQuery
	}{
		{"first-page", func() CallQuery { return CallQuery{Limit: 50} }},
		{"status-failed-page", func() CallQuery { return CallQuery{Status: "failed", Limit: 50} }},
		{"to-number-page", func() CallQuery { return CallQuery{ToNumber: testsupport.BenchNumber(rng.IntN(n)), Limit: 50} }},
		{"deep-page-by-cursor", func() CallQuery { return CallQuery{After: deepKey(), Limit: 50} }},
	}
	for _, l := range lists {
		b.Logf("%s %s plan: %s", name, l.name, explain(b, s, l.query()))
		b.Run(name+"/"+l.name, func(b *testing.B) {
			testsupport.Measure(b, func() error {
				calls, err := s.ListCalls(ctx, "org-bench", l.query())
				if err == nil && len(calls) == 0 {
					err = fmt.Errorf("%s: empty page", l.name)
				}
				return err
			})
		})
	}
	b.Run(name+"/get-random-call", func(b *testing.B) {
		testsupport.Measure(b, func() error {
			_, err := s.GetCall(ctx, "org-bench", KeyOf(testsupport.BenchCall("org-bench", rng.IntN(n))).CallID)
			return err
		})
	})
}

// seed stores n calls of ns in bulk: through one transaction of multi-row
// inserts on SQLite, through COPY on PostgreSQL.
func seed(b *testing.B, s Store, ns string, n int) {
	ctx := context.Background()
	now := time.Now()
	records := func(from, to int) [][]any {
		rows := make([][]any, 0, to-from)
		for i := from; i < to; i++ {
			r, err := recordOf(testsupport.BenchCall(ns, i), now)
			if err != nil {
				b.Fatal(err)
			}
			rows = append(rows, r.args())
		}
		return rows
	}
	const batch = 500
	switch s := s.(type) {
	case *sqliteStore:
		tx, err := s.writer.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		for from := 0; from < n; from += batch {
			rows := records(from, min(from+batch, n))
			if _, err := tx.ExecContext(ctx, multiRowInsert(len(rows)), slices.Concat(rows...)...); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		if _, err := s.writer.ExecContext(ctx, "ANALYZE"); err != nil {
			b.Fatal(err)
		}
	case *postgresStore:
		columns := []string{"namespace", "call_id", "created_at", "status", "disposition", "agent_id",
			"to_number", "source", "ended_at", "resource_version", "object", "updated_at", "recording_stored_at"}
		for from := 0; from < n; from += 100 * batch {
			rows := records(from, min(from+100*batch, n))
			if _, err := s.pool.CopyFrom(ctx, pgx.Identifier{"calls"}, columns, pgx.CopyFromRows(rows)); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := s.pool.Exec(ctx, "ANALYZE calls"); err != nil {
			b.Fatal(err)
		}
	}
}

// multiRowInsert is upsertCall's INSERT for rows rows at once. Its
// placeholders are plain ?: SQLite looks $N names up linearly, which turns
// quadratic over thousands of parameters.
func multiRowInsert(rows int) string {
	head, _, _ := strings.Cut(upsertCall, "VALUES")
	row := "(" + strings.Repeat("?, ", len(record{}.args())-1) + "?)"
	return head + "VALUES " + strings.Repeat(row+", ", rows-1) + row
}

// explain is the database's plan for a page, to show it is an index range
// scan rather than a sort of the organization's calls.
func explain(b *testing.B, s Store, q CallQuery) string {
	ctx := context.Background()
	query, args := listQuery("org-bench", q)
	var lines []string
	switch s := s.(type) {
	case *sqliteStore:
		rows, err := s.reader.QueryContext(ctx, "EXPLAIN QUERY PLAN "+query, args...)
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				b.Fatal(err)
			}
			lines = append(lines, detail)
		}
	case *postgresStore:
		rows, _ := s.pool.Query(ctx, "EXPLAIN "+query, args...)
		var err error
		if lines, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			b.Fatal(err)
		}
	}
	return strings.Join(lines, " | ")
}
