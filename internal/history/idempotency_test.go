package history_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/history"
)

var keyBase = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func claimAt(ns, key, hash, callID string, at time.Time) history.IdempotencyRecord {
	return history.IdempotencyRecord{Namespace: ns, Key: key, RequestHash: hash, CallID: callID,
		LeaseUntil: at.Add(30 * time.Second), ExpiresAt: at.Add(24 * time.Hour)}
}

func claim(t *testing.T, s history.Store, c history.IdempotencyRecord, at time.Time) (history.IdempotencyRecord, bool) {
	t.Helper()
	rec, claimed, err := s.ClaimIdempotencyKey(context.Background(), c, at)
	if err != nil {
		t.Fatal(err)
	}
	return rec, claimed
}

func testIdempotencyKeyLifecycle(t *testing.T, b backend) {
	ctx := context.Background()
	s := open(t, b.fresh(t))
	first := claimAt("org-a", "k1", "hash-1", "call_1", keyBase)
	if rec, claimed := claim(t, s, first, keyBase); !claimed || rec.CallID != "call_1" || rec.Completed() {
		t.Fatalf("a new key: claimed %v, %+v", claimed, rec)
	}
	// While the first request runs, a second sees it running.
	rec, claimed := claim(t, s, claimAt("org-a", "k1", "hash-1", "call_2", keyBase), keyBase.Add(time.Second))
	if claimed || rec.Completed() || rec.CallID != "call_1" || rec.RequestHash != "hash-1" {
		t.Fatalf("a key in use: claimed %v, %+v", claimed, rec)
	}
	body := []byte(`{"call_id":"call_1","status":"queued"}`)
	if err := s.CompleteIdempotencyKey(ctx, "org-a", "k1", "call_1", 201, body); err != nil {
		t.Fatal(err)
	}
	rec, claimed = claim(t, s, claimAt("org-a", "k1", "hash-other", "call_3", keyBase), keyBase.Add(time.Hour))
	if claimed || rec.Status != 201 || string(rec.Body) != string(body) || rec.RequestHash != "hash-1" {
		t.Fatalf("a completed key: claimed %v, %+v (%s)", claimed, rec, rec.Body)
	}
	// The same key in another organization is another key.
	if _, claimed := claim(t, s, claimAt("org-b", "k1", "hash-1", "call_4", keyBase), keyBase); !claimed {
		t.Fatal("org-b could not claim a key org-a uses")
	}
	// A released claim frees the key at once.
	claim(t, s, claimAt("org-a", "k2", "hash-1", "call_5", keyBase), keyBase)
	if err := s.ReleaseIdempotencyKey(ctx, "org-a", "k2", "call_5"); err != nil {
		t.Fatal(err)
	}
	if rec, claimed := claim(t, s, claimAt("org-a", "k2", "hash-2", "call_6", keyBase), keyBase); !claimed || rec.CallID != "call_6" {
		t.Fatalf("a released key: claimed %v, %+v", claimed, rec)
	}
	// A lapsed claim is taken over at once, for the same call and body.
	claim(t, s, claimAt("org-a", "k3", "hash-1", "call_7", keyBase), keyBase)
	if err := s.LapseIdempotencyKey(ctx, "org-a", "k3", "call_7"); err != nil {
		t.Fatal(err)
	}
	if rec, claimed := claim(t, s, claimAt("org-a", "k3", "hash-1", "call_8", keyBase), keyBase); !claimed ||
		rec.CallID != "call_7" || rec.RequestHash != "hash-1" {
		t.Fatalf("a lapsed key: claimed %v, %+v", claimed, rec)
	}
}

func testIdempotencyKeyTakeOverAndExpiry(t *testing.T, b backend) {
	ctx := context.Background()
	s := open(t, b.fresh(t))
	claim(t, s, claimAt("org-a", "k", "hash-1", "call_1", keyBase), keyBase)
	// The holder died: after its lease the next request takes over the same call.
	late := keyBase.Add(31 * time.Second)
	rec, claimed := claim(t, s, claimAt("org-a", "k", "hash-1", "call_2", late), late)
	if !claimed || rec.CallID != "call_1" || !rec.LeaseUntil.Equal(late.Add(30*time.Second)) {
		t.Fatalf("take-over: claimed %v, %+v", claimed, rec)
	}
	// The first holder's late completion is for the same call and is kept.
	if err := s.CompleteIdempotencyKey(ctx, "org-a", "k", "call_1", 201, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	// A completed key is never taken over, however old its lease.
	if _, claimed := claim(t, s, claimAt("org-a", "k", "hash-1", "call_3", late.Add(time.Hour)), late.Add(time.Hour)); claimed {
		t.Fatal("a completed key was claimed again before it expired")
	}
	// After expiry the key is new again, for a new call.
	expired := keyBase.Add(25 * time.Hour)
	if rec, claimed := claim(t, s, claimAt("org-a", "k", "hash-9", "call_9", expired), expired); !claimed ||
		rec.CallID != "call_9" || rec.RequestHash != "hash-9" || rec.Completed() {
		t.Fatalf("an expired key: claimed %v, %+v", claimed, rec)
	}
	claim(t, s, claimAt("org-a", "old", "h", "call_10", keyBase), keyBase)
	n, err := s.DeleteIdempotencyKeysExpiredBefore(ctx, keyBase.Add(24*time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("expired keys removed: %d, %v; want 1", n, err)
	}
}

func testIdempotencyKeyConcurrentClaims(t *testing.T, b backend) {
	s := open(t, b.fresh(t))
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			_, claimed, err := s.ClaimIdempotencyKey(context.Background(),
				claimAt("org-a", "same", "hash", fmt.Sprintf("call_%d", i), keyBase), keyBase)
			if err != nil {
				t.Error(err)
			}
			if claimed {
				wins.Add(1)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d of 20 concurrent requests claimed one key, want exactly 1", wins.Load())
	}
}
