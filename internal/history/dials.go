package history

import (
	"context"
	"fmt"
	"time"
)

// Dials remembers the first attempt to dial each call, so that a call is
// never dialed twice, even by a new leader after the one that dialed it
// died before recording it in the Call's status.
type Dials interface {
	// RecordDial records that callID of namespace is being dialed at at,
	// unless an attempt is recorded already, and returns the first
	// attempt's time: at when this is the first.
	RecordDial(ctx context.Context, namespace, callID string, at time.Time) (time.Time, error)
	// DialedAt returns the recorded first attempt to dial callID, if any.
	DialedAt(ctx context.Context, namespace, callID string) (at time.Time, ok bool, err error)
	// DeleteDialsBefore removes the attempts recorded before t.
	DeleteDialsBefore(ctx context.Context, t time.Time) (int64, error)
}

// recordDial inserts the attempt, or leaves the first one; either way
// RETURNING yields the first attempt's time (the no-op update makes the
// existing row returnable, in SQLite and PostgreSQL alike).
const recordDial = `
INSERT INTO dial_attempts (namespace, call_id, attempted_at) VALUES ($1, $2, $3)
ON CONFLICT (namespace, call_id) DO UPDATE SET attempted_at = dial_attempts.attempted_at
RETURNING attempted_at`

// insertDial records an attempt unless one is recorded (Writes.RecordDial).
const insertDial = `
INSERT INTO dial_attempts (namespace, call_id, attempted_at) VALUES ($1, $2, $3)
ON CONFLICT (namespace, call_id) DO NOTHING`

const dialedAt = `SELECT attempted_at FROM dial_attempts WHERE namespace = $1 AND call_id = $2`

const deleteDialsBefore = `DELETE FROM dial_attempts WHERE attempted_at < $1`

// dialLog implements Dials over either database.
type dialLog struct {
	db database
}

func (l dialLog) RecordDial(ctx context.Context, namespace, callID string, at time.Time) (time.Time, error) {
	var first int64
	err := l.db.query(ctx, true, recordDial, []any{namespace, callID, at.UnixNano()}, func(row rowScanner) error {
		return row.Scan(&first)
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("history: recording the dial of %s/%s: %w", namespace, callID, err)
	}
	return time.Unix(0, first), nil
}

func (l dialLog) DialedAt(ctx context.Context, namespace, callID string) (time.Time, bool, error) {
	var at int64
	found := false
	err := l.db.query(ctx, false, dialedAt, []any{namespace, callID}, func(row rowScanner) error {
		found = true
		return row.Scan(&at)
	})
	if err != nil {
		return time.Time{}, false, fmt.Errorf("history: reading the dial of %s/%s: %w", namespace, callID, err)
	}
	return time.Unix(0, at), found, nil
}

func (l dialLog) DeleteDialsBefore(ctx context.Context, t time.Time) (int64, error) {
	n, err := l.db.exec(ctx, deleteDialsBefore, t.UnixNano())
	if err != nil {
		return 0, fmt.Errorf("history: removing old dial attempts: %w", err)
	}
	return n, nil
}
