package history

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
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
	deliveryLog
}

func openPostgres(ctx context.Context, dsn string) (Store, error) {
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("history: postgres address: %w", err)
	}
	s := &postgresStore{pool: pool}
	s.deliveryLog = deliveryLog{db: s, claim: claimPostgres}
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
	known, err := loadMigrations("postgres")
	if err != nil {
		return err
	}
	for {
		done, err := s.migrateOne(ctx, known)
		if err != nil || done {
			return err
		}
	}
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

func (s *postgresStore) SaveCall(ctx context.Context, c *switchboardv1.Call) error {
	r, err := recordOf(c, time.Now())
	if err != nil {
		return err
	}
	if _, err := s.pool.Exec(ctx, upsertCall, r.args()...); err != nil {
		return fmt.Errorf("history: saving call %s: %w", r.callID, err)
	}
	return nil
}

func (s *postgresStore) GetCall(ctx context.Context, namespace, id string) (*switchboardv1.Call, error) {
	var object []byte
	err := s.pool.QueryRow(ctx, selectCall, namespace, id).Scan(&object)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("history: reading call %s: %w", id, err)
	}
	return decodeCall(object)
}

func (s *postgresStore) ListCalls(ctx context.Context, namespace string, q CallQuery) ([]switchboardv1.Call, error) {
	query, args := listQuery(namespace, q)
	rows, _ := s.pool.Query(ctx, query, args...) // CollectRows reports the error
	calls, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (switchboardv1.Call, error) {
		var object []byte
		if err := row.Scan(&object); err != nil {
			return switchboardv1.Call{}, err
		}
		c, err := decodeCall(object)
		if err != nil {
			return switchboardv1.Call{}, err
		}
		return *c, nil
	})
	if err != nil {
		return nil, fmt.Errorf("history: listing calls: %w", err)
	}
	return calls, nil
}

func (s *postgresStore) CallsWithRecordingStoredBefore(ctx context.Context, t time.Time, limit int) ([]switchboardv1.Call, error) {
	return callsWithRecordingStoredBefore(ctx, s, t, limit)
}

func (s *postgresStore) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

func (s *postgresStore) Close() error {
	s.pool.Close()
	return nil
}

// The delivery log's access to the database (deliveryDB).

func (s *postgresStore) exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := s.pool.Exec(ctx, query, args...)
	return tag.RowsAffected(), err
}

func (s *postgresStore) execAll(ctx context.Context, query string, argLists [][]any) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		for _, args := range argLists {
			if _, err := tx.Exec(ctx, query, args...); err != nil {
				return err
			}
		}
		return nil
	})
}

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
