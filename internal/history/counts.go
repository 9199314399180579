package history

import (
	"context"
	"fmt"
	"time"
)

// countCalls groups by ordinal: both dialects accept it, and PostgreSQL
// would not take the hour's expression, with its parameter, as the same in
// SELECT and GROUP BY. The range is a scan of calls_by_created.
const countCalls = `
SELECT (created_at - $2) / 3600000000000, status, disposition, COUNT(*), CAST(COALESCE(SUM(duration_ms), 0) AS BIGINT)
FROM calls
WHERE namespace = $1 AND created_at >= $2 AND created_at < $3
GROUP BY 1, 2, 3`

// selectCallIDsSince reads only calls_by_created.
const selectCallIDsSince = `SELECT call_id FROM calls WHERE namespace = $1 AND created_at >= $2`

func (l callLog) CountCalls(ctx context.Context, namespace string, from, to time.Time) ([]CallCount, error) {
	var counts []CallCount
	err := l.db.query(ctx, false, countCalls, []any{namespace, from.UnixNano(), to.UnixNano()}, func(row rowScanner) error {
		var c CallCount
		var hour, calls int64
		if err := row.Scan(&hour, &c.Status, &c.Disposition, &calls, &c.DurationMS); err != nil {
			return err
		}
		c.Hour, c.Calls = int(hour), int(calls)
		counts = append(counts, c)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("history: counting calls: %w", err)
	}
	return counts, nil
}

func (l callLog) EachCallIDSince(ctx context.Context, namespace string, from time.Time, f func(id string)) error {
	err := l.db.query(ctx, false, selectCallIDsSince, []any{namespace, from.UnixNano()}, func(row rowScanner) error {
		var id string
		if err := row.Scan(&id); err != nil {
			return err
		}
		f(id)
		return nil
	})
	if err != nil {
		return fmt.Errorf("history: listing call ids: %w", err)
	}
	return nil
}

// DeliveryPhaseCounts are a namespace's deliveries counted by phase.
type DeliveryPhaseCounts struct {
	ByPhase map[DeliveryPhase]int
	// Retrying counts the pending deliveries with an attempt made: one
	// failed, and they wait for a retry (a pending one without an attempt
	// is not due yet or in its first attempt).
	Retrying int
}

// countDeliveryPhases scans the namespace's deliveries (no index orders
// them by creation alone), reading three columns of each. attemptCount is
// left out of the record until an attempt is made; -> and ->> read it
// alike in SQLite and PostgreSQL.
const countDeliveryPhases = `
SELECT phase, CASE WHEN object -> 'status' ->> 'attemptCount' IS NULL THEN 0 ELSE 1 END, COUNT(*) FROM deliveries
WHERE namespace = $1 AND created_at >= $2 AND event <> $3
GROUP BY 1, 2`

func (l deliveryLog) CountDeliveryPhases(ctx context.Context, namespace string, since time.Time, except string) (
	DeliveryPhaseCounts, error) {
	counts := DeliveryPhaseCounts{ByPhase: map[DeliveryPhase]int{}}
	args := []any{namespace, since.UnixNano(), except}
	err := l.db.query(ctx, false, countDeliveryPhases, args, func(row rowScanner) error {
		var phase string
		var attempted, n int64
		if err := row.Scan(&phase, &attempted, &n); err != nil {
			return err
		}
		counts.ByPhase[DeliveryPhase(phase)] += int(n)
		if DeliveryPhase(phase) == DeliveryPending && attempted == 1 {
			counts.Retrying += int(n)
		}
		return nil
	})
	if err != nil {
		return DeliveryPhaseCounts{}, fmt.Errorf("history: counting deliveries: %w", err)
	}
	return counts, nil
}

// sumRecordingBytes reads calls_recordings_by_namespace's rows.
const sumRecordingBytes = `
SELECT CAST(COALESCE(SUM(recording_size_bytes), 0) AS BIGINT) FROM calls
WHERE namespace = $1 AND recording_stored_at IS NOT NULL`

func (l callLog) RecordingBytes(ctx context.Context, namespace string) (int64, error) {
	var total int64
	err := l.db.query(ctx, false, sumRecordingBytes, []any{namespace}, func(row rowScanner) error {
		return row.Scan(&total)
	})
	if err != nil {
		return 0, fmt.Errorf("history: summing recordings: %w", err)
	}
	return total, nil
}
