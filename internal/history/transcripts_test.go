package history_test

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/telephony"
)

// A transcript round-trips every field of its turns, is written once (a
// second save, after a restart or concurrently, leaves the first), is
// apart per organization, and is swept by its storage time.
func testTranscriptWrittenOnce(t *testing.T, b backend) {
	ctx := context.Background()
	s := open(t, b.fresh(t))
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	yes := true
	first := history.Transcript{StoredAt: at, Turns: []telephony.Turn{
		{Speaker: "agent", Text: "How many people?", Start: 0, End: 1500 * time.Millisecond},
		{Speaker: "callee", Text: "um, four people", Start: 2 * time.Second, End: 3200 * time.Millisecond,
			Confidence: 0.87, Recognizer: "embedded", Branch: "four", Next: "confirm", Words: []telephony.Word{
				{Text: "four", Start: 2310 * time.Millisecond, End: 2650 * time.Millisecond},
				{Text: "people", Start: 2650 * time.Millisecond, End: 3100 * time.Millisecond}}},
		{Speaker: "callee", Field: "party_size", Digits: "4", Start: 4 * time.Second, End: 4 * time.Second},
		{Speaker: "agent", Text: `(called check_availability {"day":"friday"})`, Note: true,
			Tool: &telephony.ToolCall{ID: "tc_1", Name: "check_availability", Arguments: `{"day":"friday"}`}},
		{Speaker: "agent", Text: "(check_availability answered: 7 pm)", Note: true,
			Tool: &telephony.ToolCall{ID: "tc_1", Name: "check_availability", Answered: true, Result: "7 pm", Successful: &yes}},
		{Speaker: "agent", Mark: "goodbye", Text: "Thank you — goodbye. 👋"},
	}}
	if _, err := s.GetTranscript(ctx, "org-a", "call_1"); !errors.Is(err, history.ErrNotFound) {
		t.Fatalf("a transcript never saved: %v, want ErrNotFound", err)
	}
	var wg sync.WaitGroup
	for i := range len(first.Turns) {
		wg.Go(func() {
			again := history.Transcript{StoredAt: at, Turns: first.Turns[:i+1]}
			if err := s.SaveTranscript(ctx, "org-a", "call_1", again); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, err := s.GetTranscript(ctx, "org-a", "call_1")
	if err != nil {
		t.Fatal(err)
	}
	// Whichever concurrent save came first is kept whole.
	if n := len(got.Turns); n == 0 || !reflect.DeepEqual(got.Turns, first.Turns[:n]) || !got.StoredAt.Equal(at) {
		t.Errorf("concurrent saves: got %+v, want one of them whole", got)
	}
	if err := s.SaveTranscript(ctx, "org-a", "call_1", history.Transcript{StoredAt: at.Add(48 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if again, _ := s.GetTranscript(ctx, "org-a", "call_1"); !reflect.DeepEqual(again, got) {
		t.Errorf("a later save replaced the transcript: %+v", again)
	}
	if err := s.SaveTranscript(ctx, "org-b", "call_2", first); err != nil {
		t.Fatal(err)
	}
	if other, err := s.GetTranscript(ctx, "org-b", "call_2"); err != nil || !reflect.DeepEqual(other.Turns, first.Turns) || !other.StoredAt.Equal(at) {
		t.Errorf("round trip of every field: %+v, %v; want %+v", other, err, first)
	}
	if _, err := s.GetTranscript(ctx, "org-b", "call_1"); !errors.Is(err, history.ErrNotFound) {
		t.Errorf("another organization's transcript: %v, want ErrNotFound", err)
	}
	if err := s.SaveTranscript(ctx, "org-b", "call_3", history.Transcript{StoredAt: at.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	n, err := s.DeleteTranscriptsStoredBefore(ctx, at.Add(30*time.Minute))
	if err != nil || n != 2 {
		t.Errorf("swept %d, %v; want the two stored before the cut", n, err)
	}
	if _, err := s.GetTranscript(ctx, "org-b", "call_2"); !errors.Is(err, history.ErrNotFound) {
		t.Errorf("a swept transcript: %v, want ErrNotFound", err)
	}
	if empty, err := s.GetTranscript(ctx, "org-b", "call_3"); err != nil || len(empty.Turns) != 0 {
		t.Errorf("the transcript after the cut: %+v, %v", empty, err)
	}
}
