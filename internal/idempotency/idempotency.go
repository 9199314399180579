// Package idempotency makes create-call requests safe to retry: a request
// with an Idempotency-Key places its call once, however often it is sent,
// and every retry gets the first response again (the semantics Stripe and
// Telnyx document). Keys are per organization and kept in the history
// store for a day, so they survive restarts, replicas and the Call's own
// retention in the cluster.
package idempotency

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"

	"github.com/switchboard-dev/switchboard/internal/callid"
	"github.com/switchboard-dev/switchboard/internal/history"
)

// MaxKeyLength bounds a key (Stripe's limit); keys are printable ASCII.
const MaxKeyLength = 255

const (
	// DefaultTTL is how long a key is remembered.
	DefaultTTL = 24 * time.Hour
	// DefaultLease covers a create (an agent lookup, the carrier's
	// acceptance, an apiserver write) many times over.
	DefaultLease = 30 * time.Second
	// DefaultWait lets a retry that races its first request get the
	// first request's response rather than a 409.
	DefaultWait = 10 * time.Second
)

var (
	// ErrKeyReused: the key was used with another request body.
	ErrKeyReused = errors.New("idempotency key reused with a different request")
	// ErrKeyInUse: the first request with the key is still running after
	// Keys.Wait.
	ErrKeyInUse = errors.New("idempotency key in use by a request still running")
)

// ValidKey reports whether key is 1 to MaxKeyLength printable ASCII
// characters.
func ValidKey(key string) bool {
	if key == "" || len(key) > MaxKeyLength {
		return false
	}
	for i := range len(key) {
		if key[i] < 0x20 || key[i] > 0x7e {
			return false
		}
	}
	return true
}

// Response is what a request answered, as it is replayed.
type Response struct {
	Status int
	Body   []byte
	// Placed says that the request created a Call (queued, or a failed
	// record): the response is then the key's for good. A request that
	// created nothing (refused by validation, a limit, an unavailable
	// store) releases the key, so that a retry runs afresh.
	Placed bool
	// Uncertain says that the request may have created its Call though it
	// could not confirm it (the create was sent and its answer did not
	// come in time). The key keeps its call id, and the next request with
	// it takes over at once: it finds that call, or places it.
	Uncertain bool
	// RetryAfter is the Retry-After header of a response that is not kept
	// (a limit's 429).
	RetryAfter string
}

// Keys runs requests once per key.
type Keys struct {
	Store history.IdempotencyKeys
	// TTL is how long a key is remembered (24 hours).
	TTL time.Duration
	// Lease is how long a running request holds its key before another
	// may take over (it died): longer than a create can take.
	Lease time.Duration
	// Wait is how long a retry waits for the first request to finish, and
	// Poll how often it looks meanwhile.
	Wait, Poll time.Duration
	Now        func() time.Time
	// OnError hears of a response that could not be stored.
	OnError func(error)
}

// Do runs place once for (namespace, key): the first request runs it with
// the call id the key places; later ones with the same body get its
// Response again, with replayed set. A different body is ErrKeyReused; a
// first request still running after Wait is ErrKeyInUse.
func (k *Keys) Do(ctx context.Context, namespace, key string, body []byte,
	place func(callID string) Response) (res Response, replayed bool, err error) {
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	deadline := k.Now().Add(k.Wait)
	for {
		now := k.Now()
		rec, claimed, err := k.Store.ClaimIdempotencyKey(ctx, history.IdempotencyRecord{Namespace: namespace, Key: key,
			RequestHash: hash, CallID: callid.New(), LeaseUntil: now.Add(k.Lease), ExpiresAt: now.Add(k.TTL)}, now)
		switch {
		case err != nil:
			return Response{}, false, err
		case rec.RequestHash != hash:
			return Response{}, false, ErrKeyReused
		case claimed:
			return k.run(ctx, rec, place)
		case rec.Completed():
			return Response{Status: rec.Status, Body: rec.Body, Placed: true}, true, nil
		case !k.Now().Before(deadline):
			return Response{}, false, ErrKeyInUse
		}
		select {
		case <-ctx.Done():
			return Response{}, false, ctx.Err()
		case <-time.After(k.Poll):
		}
	}
}

// run places the call of a claimed key and stores or releases the key. A
// response that cannot be stored is still the caller's (OnError hears of
// it): the call exists, and a retry takes the key over after its lease
// and finds that call.
func (k *Keys) run(ctx context.Context, rec history.IdempotencyRecord, place func(string) Response) (Response, bool, error) {
	res := place(rec.CallID)
	store := context.WithoutCancel(ctx)
	var err error
	switch {
	case res.Placed:
		err = k.Store.CompleteIdempotencyKey(store, rec.Namespace, rec.Key, rec.CallID, res.Status, res.Body)
	case res.Uncertain:
		err = k.Store.LapseIdempotencyKey(store, rec.Namespace, rec.Key, rec.CallID)
	default:
		err = k.Store.ReleaseIdempotencyKey(store, rec.Namespace, rec.Key, rec.CallID)
	}
	if err != nil && k.OnError != nil {
		k.OnError(err)
	}
	return res, false, nil
}

// Sweeper removes expired keys every Interval; it runs on the leader.
type Sweeper struct {
	Store    history.IdempotencyKeys
	Interval time.Duration
	Now      func() time.Time
	OnError  func(error)
}

// NeedLeaderElection: one replica sweeps.
func (s *Sweeper) NeedLeaderElection() bool { return true }

// Start sweeps until ctx ends.
func (s *Sweeper) Start(ctx context.Context) error {
	t := time.NewTicker(s.Interval)
	defer t.Stop()
	for {
		if _, err := s.Store.DeleteIdempotencyKeysExpiredBefore(ctx, s.Now()); err != nil && ctx.Err() == nil && s.OnError != nil {
			s.OnError(err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
