package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

const sqliteMigrationTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    applied_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
)`

// sqliteStore keeps calls and deliveries in an embedded SQLite file.
type sqliteStore struct {
	// writer has a single connection: SQLite has one writer at a time, and
	// queueing writes here is cheaper and fairer than busy-waiting on the
	// file lock. Its transactions begin IMMEDIATE so that they take the
	// write lock up front rather than failing to upgrade a read lock.
	writer *sql.DB
	// reader has several read-only connections, which WAL lets run
	// alongside the writer.
	reader *sql.DB
	// writes and reads are their statements, prepared once (see
	// statements); one cache when writer and reader are one handle.
	writes, reads *statements
	callLog
	deliveryLog
	idempotencyLog
	dialLog
	transcriptLog
	contactLog
}

// openSQLite opens (creating it, and its folder, if needed) the database at
// path, or a private in-memory database when path is ":memory:".
func openSQLite(ctx context.Context, path string) (Store, error) {
	const pragmas = "_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)"
	s := &sqliteStore{}
	s.callLog, s.deliveryLog, s.idempotencyLog = callLog{db: s}, deliveryLog{db: s, indexes: sqliteIndexes}, idempotencyLog{db: s}
	s.dialLog, s.transcriptLog, s.contactLog = dialLog{db: s}, transcriptLog{db: s}, contactLog{db: s, indexes: sqliteContactIndexes}
	if path == ":memory:" {
		// Every connection to :memory: is a database of its own, so one
		// connection serves reads and writes alike.
		db, err := sql.Open("sqlite", ":memory:?"+pragmas+"&_txlock=immediate")
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(1)
		s.writer, s.reader = db, db
		s.writes = newStatements(db)
		s.reads = s.writes
	} else {
		if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
			return nil, fmt.Errorf("history: creating the folder of %s: %w", path, err)
		}
		writer, err := sql.Open("sqlite", path+"?"+pragmas+
			"&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate")
		if err != nil {
			return nil, err
		}
		writer.SetMaxOpenConns(1)
		reader, err := sql.Open("sqlite", path+"?"+pragmas+"&_pragma=query_only(1)")
		if err != nil {
			return nil, errors.Join(err, writer.Close())
		}
		s.writer, s.reader = writer, reader
		s.writes, s.reads = newStatements(writer), newStatements(reader)
		if err := firstContact(ctx, writer); err != nil {
			return nil, errors.Join(fmt.Errorf("history: opening sqlite:%s: %w", path, err), s.Close())
		}
	}
	if err := s.migrate(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("history: opening sqlite:%s: %w", path, err), s.Close())
	}
	return s, nil
}

// firstContact opens the writer's connection. The first connection to a
// new file switches it to WAL, which needs the file to itself, and SQLite's
// busy handler does not wait for that: processes opening one new file at
// once (replicas starting together) may be told it is busy. They retry.
func firstContact(ctx context.Context, db *sql.DB) error {
	for try := 0; ; try++ {
		err := db.PingContext(ctx)
		if err == nil || try == 100 || !strings.Contains(err.Error(), "SQLITE_BUSY") {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// migrate applies the pending migrations one transaction each. The
// IMMEDIATE transaction holds the write lock from its start, so two
// processes opening one file migrate one after the other.
func (s *sqliteStore) migrate(ctx context.Context) error {
	return migrateAll("sqlite", func(known []migration) (bool, error) { return s.migrateOne(ctx, known) })
}

func (s *sqliteStore) migrateOne(ctx context.Context, known []migration) (done bool, err error) {
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	if _, err := tx.ExecContext(ctx, sqliteMigrationTable); err != nil {
		return false, err
	}
	recorded, err := sqliteVersions(ctx, tx)
	if err != nil {
		return false, unreadableMigrations(err)
	}
	next, err := nextMigration(recorded, known)
	if err != nil || next == nil {
		return true, err
	}
	if _, err := tx.ExecContext(ctx, next.sql); err != nil {
		return false, fmt.Errorf("migration %s: %w", next.name, err)
	}
	if _, err := tx.ExecContext(ctx, recordMigration, next.version); err != nil {
		return false, err
	}
	return false, tx.Commit()
}

func sqliteVersions(ctx context.Context, tx *sql.Tx) ([]int64, error) {
	rows, err := tx.QueryContext(ctx, readMigrations)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	var versions []int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		versions = append(versions, v)
	}
	return versions, rows.Err()
}

// Ping checks the writer: the connection every change goes through.
func (s *sqliteStore) Ping(ctx context.Context) error { return s.writer.PingContext(ctx) }

func (s *sqliteStore) Close() error {
	if s.reader == s.writer {
		return errors.Join(s.writes.close(), s.writer.Close())
	}
	return errors.Join(s.reads.close(), s.writes.close(), s.reader.Close(), s.writer.Close())
}

// The call and delivery logs' access to the database (see database).

func (s *sqliteStore) exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := s.writes.execContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (s *sqliteStore) execAll(ctx context.Context, query string, argLists [][]any) error {
	return s.execEach(ctx, repeated(query, argLists))
}

// execEach's transaction is IMMEDIATE (see writer), so it never fails to
// upgrade to a write lock half way.
func (s *sqliteStore) execEach(ctx context.Context, stmts []statement) error {
	// Prepared before the transaction takes the writer's one connection.
	prepared := make(map[string]*sql.Stmt, 2)
	for _, st := range stmts {
		if _, ok := prepared[st.query]; ok {
			continue
		}
		p, err := s.writes.prepared(ctx, st.query)
		if err != nil {
			return err
		}
		prepared[st.query] = p
	}
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	inside := make(map[string]*sql.Stmt, len(prepared))
	for _, st := range stmts {
		stmt, ok := inside[st.query]
		if !ok {
			if stmt, err = inTx(ctx, tx, prepared[st.query], st.query); err != nil {
				return err
			}
			inside[st.query] = stmt
		}
		if _, err := stmt.ExecContext(ctx, st.args...); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// Write stores w in one transaction.
func (s *sqliteStore) Write(ctx context.Context, w *Writes) error { return writeAll(ctx, s, w) }

// query runs a write on the writer: a single statement takes the write
// lock before it reads, so UPDATE ... RETURNING is atomic even between
// processes.
func (s *sqliteStore) query(ctx context.Context, write bool, query string, args []any, scan func(rowScanner) error) error {
	stmts := s.reads
	if write {
		stmts = s.writes
	}
	rows, err := stmts.queryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
