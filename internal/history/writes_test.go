package history_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/telephony"
)

// What one pass of a call stores (its dial, its transcript, the
// deliveries of its events) is written in one transaction: all of it, or
// nothing of it when one write fails. Written again (a pass redone after
// a restart), the first dial and transcript stay and no delivery is
// queued twice.
func testWritesTogether(t *testing.T, b backend) {
	ctx := context.Background()
	s := open(t, b.fresh(t))
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	transcript := history.Transcript{StoredAt: at, Turns: []telephony.Turn{{Speaker: "agent", Text: "Hello"}}}
	pass := func(dialedAt time.Time, t0 history.Transcript) *history.Writes {
		t.Helper()
		w := &history.Writes{}
		w.RecordDial("org-a", "call_1", dialedAt)
		if err := w.SaveTranscript("org-a", "call_1", t0); err != nil {
			t.Fatal(err)
		}
		if err := w.EnqueueDeliveries([]*history.Delivery{newDelivery("org-a", "dlv_01", at, nil),
			newDelivery("org-a", "dlv_02", at, nil)}); err != nil {
			t.Fatal(err)
		}
		return w
	}

	failing := pass(at, transcript)
	history.FailLast(failing)
	if err := s.Write(ctx, failing); err == nil {
		t.Fatal("a write that failed half way reported success")
	}
	if _, ok, err := s.DialedAt(ctx, "org-a", "call_1"); ok || err != nil {
		t.Errorf("after a failed write the dial is stored (%v, %v), want none of its writes", ok, err)
	}
	if _, err := s.GetTranscript(ctx, "org-a", "call_1"); !errors.Is(err, history.ErrNotFound) {
		t.Errorf("after a failed write the transcript reads %v, want ErrNotFound", err)
	}
	assertNoneDue(t, s)

	if err := s.Write(ctx, pass(at, transcript)); err != nil {
		t.Fatal(err)
	}
	later := history.Transcript{StoredAt: at.Add(time.Hour), Turns: []telephony.Turn{{Speaker: "agent", Text: "Again"}}}
	if err := s.Write(ctx, pass(at.Add(time.Hour), later)); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := s.DialedAt(ctx, "org-a", "call_1"); !ok || err != nil || !got.Equal(at) {
		t.Errorf("dial = %v, %v, %v; want the first, at %v", got, ok, err, at)
	}
	if got, err := s.GetTranscript(ctx, "org-a", "call_1"); err != nil || len(got.Turns) != 1 || got.Turns[0].Text != "Hello" {
		t.Errorf("transcript = %+v, %v; want the first", got, err)
	}
	assertDeliveries(t, s, "org-a", history.DeliveryQuery{}, "dlv_02", "dlv_01")
	assertClaimed(t, s, at.Add(time.Minute), "dlv_01", "dlv_02")
	if err := s.Write(ctx, &history.Writes{}); err != nil {
		t.Errorf("an empty write: %v", err)
	}
}
