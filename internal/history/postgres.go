package history

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

const postgresMigrationTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    BIGINT PRIMARY KEY,
    applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
)`

// migrationLock is the advisory lock key replicas take around migrations
// (an arbitrary constant: "switchboard history" in ASCII, truncated).
const migrationLock int64 = 0x7377686973746f72

// postgresStore keeps calls and deliveries in PostgreSQL.
type postgresStore struct {
	pool *pgxpool.Pool
	callLog
	deliveryLog
	idempotencyLog
	dialLog
	transcriptLog
	contactLog
}

func openPostgres(ctx context.Context, dsn string) (Store, error) {
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("history: postgres address: %w", err)
	}
	s := &postgresStore{pool: pool}
	s.callLog, s.deliveryLog, s.idempotencyLog = callLog{db: s}, deliveryLog{db: s, indexes: postgresIndexes}, idempotencyLog{db: s}
	s.dialLog, s.transcriptLog, s.contactLog = dialLog{db: s}, transcriptLog{db: s}, contactLog{db: s, indexes: postgresContactIndexes}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("history: opening postgres: %w", err)
	}
	return s, nil
}

// migrate applies the pending migrations one transaction each. Each
// transaction first takes the advisory lock and only then reads the
// recorded versions, so replicas starting together apply every migration
// exactly once, one after the other.
func (s *postgresStore) migrate(ctx context.Context) error {
	return migrateAll("postgres", func(known []migration) (bool, error) { return s.migrateOne(ctx, known) })
}

func (s *postgresStore) migrateOne(ctx context.Context, known []migration) (done bool, err error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer func() { _ = tx.Rollback(ctx) }() // a no-op after Commit
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrationLock); err != nil {
		return false, err
	}
	if _, err := tx.Exec(ctx, postgresMigrationTable); err != nil {
		return false, err
	}
	rows, _ := tx.Query(ctx, readMigrations) // CollectRows reports the error
	recorded, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return false, unreadableMigrations(err)
	}
	next, err := nextMigration(recorded, known)
	if err != nil || next == nil {
		return true, err
	}
	if _, err := tx.Exec(ctx, next.sql); err != nil {
		return false, fmt.Errorf("migration %s: %w", next.name, err)
	}
	if _, err := tx.Exec(ctx, recordMigration, next.version); err != nil {
		return false, err
	}
	return false, tx.Commit(ctx)
}
func (s *postgresStore) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

func (s *postgresStore) Close() error {
	s.pool.Close()
	return nil
}

// The call and delivery logs' access to the database (see database).

func (s *postgresStore) exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := s.pool.Exec(ctx, query, args...)
	return tag.RowsAffected(), err
}

func (s *postgresStore) execAll(ctx context.Context, query string, argLists [][]any) error {
	return s.execEach(ctx, repeated(query, argLists))
}

// execEach sends the statements in one batch (one round trip) inside the
// transaction.
func (s *postgresStore) execEach(ctx context.Context, stmts []statement) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var b pgx.Batch
		for _, st := range stmts {
			b.Queue(st.query, st.args...)
		}
		results := tx.SendBatch(ctx, &b)
		for range stmts {
			if _, err := results.Exec(); err != nil {
				_ = results.Close()
				return err
			}
		}
		return results.Close()
	})
}

// Write stores w in one transaction.
func (s *postgresStore) Write(ctx context.Context, w *Writes) error { return writeAll(ctx, s, w) }

// query needs no writer: every connection of the pool writes.
func (s *postgresStore) query(ctx context.Context, _ bool, query string, args []any, scan func(rowScanner) error) error {
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
