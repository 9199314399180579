package history

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// statements prepares each distinct query once per database handle and
// keeps it. SQLite compiles every statement before it runs; without this,
// each call saved and each delivery claimed or saved paid the compile again
// (about a tenth of the operator's CPU under the webhook benchmark's load,
// read from a CPU profile). PostgreSQL needs none of it: pgx caches
// prepared statements per connection itself.
//
// Every query the store runs is built from constant text with $n
// parameters, so the distinct texts are few; maxStatements only guards
// against a future query that is not, which then runs unprepared (limit).
type statements struct {
	db      *sql.DB
	limit   int
	mu      sync.Mutex
	byQuery map[string]*sql.Stmt
}

const maxStatements = 512

func newStatements(db *sql.DB) *statements {
	return &statements{db: db, limit: maxStatements, byQuery: map[string]*sql.Stmt{}}
}

// prepared returns query's statement, preparing it on first use, or nil
// when the cache is full. The lock is not held while preparing, which may
// wait for the writer's one connection.
func (c *statements) prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	stmt, ok := c.byQuery[query]
	full := len(c.byQuery) >= c.limit
	c.mu.Unlock()
	if ok || full {
		return stmt, nil
	}
	stmt, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if first, ok := c.byQuery[query]; ok { // prepared meanwhile by another caller
		_ = stmt.Close() // unused: the other caller's is kept
		return first, nil
	}
	c.byQuery[query] = stmt
	return stmt, nil
}

func (c *statements) execContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	stmt, err := c.prepared(ctx, query)
	switch {
	case err != nil:
		return nil, err
	case stmt == nil:
		return c.db.ExecContext(ctx, query, args...)
	}
	return stmt.ExecContext(ctx, args...)
}

func (c *statements) queryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	stmt, err := c.prepared(ctx, query)
	switch {
	case err != nil:
		return nil, err
	case stmt == nil:
		return c.db.QueryContext(ctx, query, args...)
	}
	return stmt.QueryContext(ctx, args...)
}

// inTx is prepared (from statements.prepared) for use inside tx, or query
// prepared on tx's connection when the cache had no room.
func inTx(ctx context.Context, tx *sql.Tx, prepared *sql.Stmt, query string) (*sql.Stmt, error) {
	if prepared == nil {
		return tx.PrepareContext(ctx, query)
	}
	return tx.StmtContext(ctx, prepared), nil
}

// close releases the statements; the database handle stays open.
func (c *statements) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for query, stmt := range c.byQuery {
		errs = append(errs, stmt.Close())
		delete(c.byQuery, query)
	}
	return errors.Join(errs...)
}
