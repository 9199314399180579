package pgtest_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-dev/switchboard/internal/history/pgtest"
)

// TestServerSurvivesRestart: data written before Stop is there after Start,
// at the same DSN, and the server refuses connections while stopped.
func TestServerSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	srv := pgtest.NewServer(t)
	exec(t, srv.DSN(), "CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)")

	srv.Stop()
	if conn, err := pgx.Connect(ctx, srv.DSN()); err == nil {
		_ = conn.Close(ctx)
		t.Fatal("connected to a stopped server")
	}
	srv.Start()

	conn, err := pgx.Connect(ctx, srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(ctx) }()
	var v int
	if err := conn.QueryRow(ctx, "SELECT v FROM kept").Scan(&v); err != nil || v != 42 {
		t.Fatalf("after restart: v=%d, err=%v", v, err)
	}
}

func exec(t *testing.T, dsn, sql string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(ctx) }()
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatal(err)
	}
}
