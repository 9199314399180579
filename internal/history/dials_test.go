package history_test

import (
	"context"
	"sync"
	"testing"
	"time"
)

// The first attempt to dial a call is kept: a later one (a new leader
// finding the call not yet marked dialed) learns when it was, concurrent
// ones agree, other organizations' calls of the same id are apart, and old
// attempts are swept.
func testDialRecordedOnce(t *testing.T, b backend) {
	ctx := context.Background()
	s := open(t, b.fresh(t))
	first := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	if _, ok, err := s.DialedAt(ctx, "org-a", "call_1"); ok || err != nil {
		t.Fatalf("a call never dialed reads as dialed: %v, %v", ok, err)
	}
	var wg sync.WaitGroup
	got := make([]time.Time, 10)
	for i := range got {
		wg.Go(func() {
			at, err := s.RecordDial(ctx, "org-a", "call_1", first.Add(time.Duration(i)*time.Second))
			if err != nil {
				t.Error(err)
			}
			got[i] = at
		})
	}
	wg.Wait()
	for _, at := range got[1:] {
		if !at.Equal(got[0]) {
			t.Fatalf("concurrent attempts disagree on the first: %v", got)
		}
	}
	if at, ok, err := s.DialedAt(ctx, "org-a", "call_1"); !ok || err != nil || !at.Equal(got[0]) {
		t.Errorf("DialedAt = %v, %v, %v; want %v", at, ok, err, got[0])
	}
	again, err := s.RecordDial(ctx, "org-a", "call_1", first.Add(time.Hour))
	if err != nil || !again.Equal(got[0]) {
		t.Errorf("a later attempt = %v, %v; want the first, %v", again, err, got[0])
	}
	other, err := s.RecordDial(ctx, "org-b", "call_1", first.Add(time.Hour))
	if err != nil || !other.Equal(first.Add(time.Hour)) {
		t.Errorf("another organization's call = %v, %v; want its own attempt", other, err)
	}
	n, err := s.DeleteDialsBefore(ctx, first.Add(30*time.Minute))
	if err != nil || n != 1 {
		t.Errorf("swept %d, %v; want the one before the cut", n, err)
	}
	fresh, _ := s.RecordDial(ctx, "org-a", "call_1", first.Add(2*time.Hour))
	if !fresh.Equal(first.Add(2 * time.Hour)) {
		t.Errorf("after the sweep, the attempt is new: got %v", fresh)
	}
}
