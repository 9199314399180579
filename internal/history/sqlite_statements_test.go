package history

import (
	"context"
	"database/sql"
	"testing"
)

// The statement cache keeps one statement per query text, and a query that
// finds it full still runs, in and out of a transaction.
func TestStatementsPrepareOnceAndRunWhenFull(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1) // as the store's writer: a transaction holds the only connection
	t.Cleanup(func() { _ = db.Close() })
	c := newStatements(db)
	c.limit = 2
	t.Cleanup(func() { _ = c.close() })

	mustExec := func(query string, args ...any) {
		t.Helper()
		if _, err := c.execContext(ctx, query, args...); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
	}
	mustExec(`CREATE TABLE t (v INTEGER)`)
	for i := range 3 {
		mustExec(`INSERT INTO t (v) VALUES ($1)`, i)
	}
	if len(c.byQuery) != 2 {
		t.Fatalf("cached %d statements for 2 distinct queries, want 2", len(c.byQuery))
	}

	// Full: a third query text runs unprepared, and so does one in a
	// transaction on the only connection.
	const count = `SELECT count(*) FROM t WHERE v >= $1`
	rows, err := c.queryContext(ctx, count, 1)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for rows.Next() {
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	if n != 2 || len(c.byQuery) != 2 {
		t.Fatalf("count = %d with %d cached, want 2 with 2 cached", n, len(c.byQuery))
	}
	const del = `DELETE FROM t WHERE v = $1`
	prepared, err := c.prepared(ctx, del)
	if err != nil || prepared != nil {
		t.Fatalf("prepared on a full cache = %v, %v; want nil, nil", prepared, err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	stmt, err := inTx(ctx, tx, prepared, del)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stmt.ExecContext(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM t`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("rows left = %d, %v; want 2", n, err)
	}
}
