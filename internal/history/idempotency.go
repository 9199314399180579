package history

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// IdempotencyKeys remembers create-call requests by their Idempotency-Key,
// per organization, so that a request retried (by a client, an SDK, a
// proxy) places its call once and is answered as the first time.
type IdempotencyKeys interface {
	// ClaimIdempotencyKey claims (namespace, key) at now for the request c
	// describes. claimed is true when the caller is now the one to run the
	// request: the key is new, its earlier use has expired (it then gets
	// c.CallID), or the request that held it stopped answering before its
	// lease ran out (the record keeps its call id and request hash).
	// Otherwise the record is the key's current use: completed (Status set)
	// or still running elsewhere.
	ClaimIdempotencyKey(ctx context.Context, c IdempotencyRecord, now time.Time) (rec IdempotencyRecord, claimed bool, err error)
	// CompleteIdempotencyKey stores the response of the claim that placed
	// callID, to be replayed until the key expires.
	CompleteIdempotencyKey(ctx context.Context, namespace, key, callID string, status int, body []byte) error
	// ReleaseIdempotencyKey forgets a claim whose request placed nothing (it
	// was refused before any call was created), so that the key can be
	// used again at once.
	ReleaseIdempotencyKey(ctx context.Context, namespace, key, callID string) error
	// LapseIdempotencyKey ends the lease of a claim whose request does not
	// know whether it placed its call (the create was sent and its answer
	// lost), keeping the call id and request hash: the next request with
	// the key takes it over at once and places, or finds, that same call.
	LapseIdempotencyKey(ctx context.Context, namespace, key, callID string) error
	// DeleteIdempotencyKeysExpiredBefore removes the keys expired before t.
	DeleteIdempotencyKeysExpiredBefore(ctx context.Context, t time.Time) (int64, error)
}

// IdempotencyRecord is one key's use.
type IdempotencyRecord struct {
	Namespace, Key string
	// RequestHash identifies the request body (SHA-256, hex).
	RequestHash string
	// CallID is the call the key places.
	CallID string
	// Status is the HTTP status of the stored response; 0 while the request
	// that claimed the key runs.
	Status int
	Body   []byte
	// LeaseUntil is when a running claim lapses; ExpiresAt when the key is
	// forgotten.
	LeaseUntil, ExpiresAt time.Time
}

// Completed reports whether the record holds a response to replay.
func (r IdempotencyRecord) Completed() bool { return r.Status != 0 }

const idempotencyColumns = `namespace, key, request_hash, call_id, status, body, lease_until, expires_at`

// claimNewKey ($9: now) inserts the key, or reuses the row of an expired
// use of it; RETURNING yields no row when the key is in use.
const claimNewKey = `
INSERT INTO idempotency_keys (` + idempotencyColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (namespace, key) DO UPDATE SET
    request_hash = excluded.request_hash,
    call_id = excluded.call_id,
    status = excluded.status,
    body = excluded.body,
    lease_until = excluded.lease_until,
    expires_at = excluded.expires_at
WHERE idempotency_keys.expires_at <= $9
RETURNING ` + idempotencyColumns

// takeOverKey ($3 the new lease, $4 now) takes a claim whose holder's
// lease ran out, keeping its call id and request hash.
const takeOverKey = `
UPDATE idempotency_keys SET lease_until = $3
WHERE namespace = $1 AND key = $2 AND status = 0 AND lease_until <= $4
RETURNING ` + idempotencyColumns

const selectKey = `SELECT ` + idempotencyColumns + ` FROM idempotency_keys WHERE namespace = $1 AND key = $2`

const completeKey = `
UPDATE idempotency_keys SET status = $4, body = $5, lease_until = 0
WHERE namespace = $1 AND key = $2 AND call_id = $3`

const releaseKey = `DELETE FROM idempotency_keys WHERE namespace = $1 AND key = $2 AND call_id = $3 AND status = 0`

const lapseKey = `UPDATE idempotency_keys SET lease_until = 0 WHERE namespace = $1 AND key = $2 AND call_id = $3 AND status = 0`

const deleteExpiredKeys = `DELETE FROM idempotency_keys WHERE expires_at <= $1`

// idempotencyLog implements IdempotencyKeys over either database.
type idempotencyLog struct{ db database }

func (l idempotencyLog) ClaimIdempotencyKey(ctx context.Context, c IdempotencyRecord, at time.Time) (IdempotencyRecord, bool, error) {
	if c.Namespace == "" || c.Key == "" || c.CallID == "" {
		return IdempotencyRecord{}, false, errors.New("history: an idempotency claim needs a namespace, a key and a call id")
	}
	now := at.UnixNano()
	rec, found, err := l.one(ctx, true, claimNewKey, c.Namespace, c.Key, c.RequestHash, c.CallID, 0, nil,
		c.LeaseUntil.UnixNano(), c.ExpiresAt.UnixNano(), now)
	if err != nil || found {
		return rec, found, wrapKeyErr(err)
	}
	rec, found, err = l.one(ctx, true, takeOverKey, c.Namespace, c.Key, c.LeaseUntil.UnixNano(), now)
	if err != nil || found {
		return rec, found, wrapKeyErr(err)
	}
	rec, found, err = l.one(ctx, false, selectKey, c.Namespace, c.Key)
	if err == nil && !found {
		// Released or expired and removed between the statements: the
		// caller tries again.
		err = errors.New("the key changed hands while it was claimed; retry")
	}
	return rec, false, wrapKeyErr(err)
}

func wrapKeyErr(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("history: claiming an idempotency key: %w", err)
}

func (l idempotencyLog) one(ctx context.Context, write bool, query string, args ...any) (IdempotencyRecord, bool, error) {
	var rec IdempotencyRecord
	found := false
	err := l.db.query(ctx, write, query, args, func(row rowScanner) error {
		var body *string
		var lease, expires int64
		if err := row.Scan(&rec.Namespace, &rec.Key, &rec.RequestHash, &rec.CallID, &rec.Status, &body,
			&lease, &expires); err != nil {
			return err
		}
		if body != nil {
			rec.Body = []byte(*body)
		}
		rec.LeaseUntil, rec.ExpiresAt = time.Unix(0, lease), time.Unix(0, expires)
		found = true
		return nil
	})
	return rec, found, err
}

func (l idempotencyLog) CompleteIdempotencyKey(ctx context.Context, namespace, key, callID string, status int, body []byte) error {
	if _, err := l.db.exec(ctx, completeKey, namespace, key, callID, status, string(body)); err != nil {
		return fmt.Errorf("history: storing the response of an idempotent request: %w", err)
	}
	return nil
}

func (l idempotencyLog) ReleaseIdempotencyKey(ctx context.Context, namespace, key, callID string) error {
	if _, err := l.db.exec(ctx, releaseKey, namespace, key, callID); err != nil {
		return fmt.Errorf("history: releasing an idempotency key: %w", err)
	}
	return nil
}

func (l idempotencyLog) LapseIdempotencyKey(ctx context.Context, namespace, key, callID string) error {
	if _, err := l.db.exec(ctx, lapseKey, namespace, key, callID); err != nil {
		return fmt.Errorf("history: ending the lease of an idempotency key: %w", err)
	}
	return nil
}

func (l idempotencyLog) DeleteIdempotencyKeysExpiredBefore(ctx context.Context, t time.Time) (int64, error) {
	n, err := l.db.exec(ctx, deleteExpiredKeys, t.UnixNano())
	if err != nil {
		return 0, fmt.Errorf("history: removing expired idempotency keys: %w", err)
	}
	return n, nil
}
