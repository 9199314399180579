package idempotency_test

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/idempotency"
)

func keys(t *testing.T) (*idempotency.Keys, history.Store) {
	t.Helper()
	s, err := history.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return &idempotency.Keys{Store: s, TTL: time.Hour, Lease: 200 * time.Millisecond, Wait: 100 * time.Millisecond,
		Poll: 10 * time.Millisecond, Now: time.Now}, s
}

// A request that died holding its key (the process was killed after the
// call was created) is taken over after its lease, with the same call id:
// the cluster then refuses to create that call a second time.
func TestTakeOverKeepsTheCallID(t *testing.T) {
	k, s := keys(t)
	ctx := context.Background()
	body := []byte(`{"to_number":"+14155550100"}`)
	died := make(chan string, 1)
	// The first request claims the key and "dies": Do never sees place
	// return, so nothing is completed or released.
	go func() {
		_, _, _ = k.Do(ctx, "org", "k", body, func(id string) idempotency.Response {
			died <- id
			select {} // never returns
		})
	}()
	first := <-died
	_, _, err := k.Do(ctx, "org", "k", body, func(string) idempotency.Response {
		t.Fatal("placed while the first request still held the key")
		return idempotency.Response{}
	})
	if !errors.Is(err, idempotency.ErrKeyInUse) {
		t.Fatalf("while held: %v, want ErrKeyInUse", err)
	}
	time.Sleep(250 * time.Millisecond) // the lease lapses
	var second string
	res, replayed, err := k.Do(ctx, "org", "k", body, func(id string) idempotency.Response {
		second = id
		return idempotency.Response{Status: http.StatusCreated, Body: []byte(`{"call_id":"` + id + `"}`), Placed: true}
	})
	if err != nil || replayed || second != first || res.Status != http.StatusCreated {
		t.Fatalf("take-over: %v replayed=%v call %q, want the first request's call %q", err, replayed, second, first)
	}
	rec, _, err := s.ClaimIdempotencyKey(ctx, history.IdempotencyRecord{Namespace: "org", Key: "k", RequestHash: "x",
		CallID: "call_other", LeaseUntil: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}, time.Now())
	if err != nil || rec.Status != http.StatusCreated {
		t.Fatalf("stored response: %+v, %v", rec, err)
	}
}

func TestNothingPlacedReleasesTheKey(t *testing.T) {
	k, _ := keys(t)
	ctx := context.Background()
	refused := func(string) idempotency.Response {
		return idempotency.Response{Status: http.StatusTooManyRequests, Body: []byte(`{}`)}
	}
	if res, _, err := k.Do(ctx, "org", "k", []byte(`a`), refused); err != nil || res.Status != http.StatusTooManyRequests {
		t.Fatalf("%+v, %v", res, err)
	}
	placed := false
	_, replayed, err := k.Do(ctx, "org", "k", []byte(`b`), func(string) idempotency.Response {
		placed = true
		return idempotency.Response{Status: http.StatusCreated, Placed: true}
	})
	if err != nil || replayed || !placed {
		t.Fatalf("after a refusal the key is free: placed=%v replayed=%v err=%v", placed, replayed, err)
	}
}

func TestUncertainOutcomeKeepsTheCallForTheRetry(t *testing.T) {
	k, _ := keys(t)
	ctx := context.Background()
	var first string
	unconfirmed := func(id string) idempotency.Response {
		first = id
		return idempotency.Response{Status: http.StatusServiceUnavailable, Body: []byte(`{}`), Uncertain: true}
	}
	if res, _, err := k.Do(ctx, "org", "k", []byte(`a`), unconfirmed); err != nil || res.Status != http.StatusServiceUnavailable {
		t.Fatalf("%+v, %v", res, err)
	}
	var retried string
	res, replayed, err := k.Do(ctx, "org", "k", []byte(`a`), func(id string) idempotency.Response {
		retried = id
		return idempotency.Response{Status: http.StatusCreated, Placed: true}
	})
	if err != nil || replayed || res.Status != http.StatusCreated || retried != first {
		t.Fatalf("the retry placed %q (first %q): %+v replayed=%v err=%v", retried, first, res, replayed, err)
	}
	if _, _, err := k.Do(ctx, "org", "k2", []byte(`a`), unconfirmed); err != nil {
		t.Fatal(err)
	}
	if _, _, err := k.Do(ctx, "org", "k2", []byte(`b`), unconfirmed); !errors.Is(err, idempotency.ErrKeyReused) {
		t.Fatalf("another body after an unconfirmed create: %v, want ErrKeyReused", err)
	}
}

func TestValidKey(t *testing.T) {
	for key, want := range map[string]bool{"a": true, "order-7/retry 2": true, "": false, "\t": false, "é": false,
		string(make([]byte, 256)): false} {
		if got := idempotency.ValidKey(key); got != want {
			t.Errorf("ValidKey(%q) = %v, want %v", key, got, want)
		}
	}
}
