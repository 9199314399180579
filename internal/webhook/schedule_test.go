package webhook_test

import (
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/webhook"
)

func TestScheduleRoundTrip(t *testing.T) {
	const text = "0s,5s,5m,30m,2h,5h,10h,10h"
	if got := webhook.DefaultSchedule.String(); got != text {
		t.Fatalf("DefaultSchedule.String() = %q", got)
	}
	parsed, err := webhook.ParseSchedule(text)
	if err != nil || parsed.String() != text || len(parsed) != len(webhook.DefaultSchedule) {
		t.Fatalf("ParseSchedule(%q) = %v, %v", text, parsed, err)
	}
	for i := range parsed {
		if parsed[i] != webhook.DefaultSchedule[i] {
			t.Fatalf("item %d = %s, want %s", i, parsed[i], webhook.DefaultSchedule[i])
		}
	}
	odd := webhook.Schedule{10 * time.Second, 10 * time.Minute, 90 * time.Minute, 1500 * time.Millisecond, 100 * time.Hour}
	if got := odd.String(); got != "10s,10m,1h30m,1.5s,100h" {
		t.Fatalf("String() = %q", got)
	}
	back, err := webhook.ParseSchedule(odd.String())
	if err != nil || back.String() != odd.String() {
		t.Fatalf("round trip of %q = %v, %v", odd.String(), back, err)
	}
}

func TestParseScheduleAcceptsSpaces(t *testing.T) {
	s, err := webhook.ParseSchedule(" 1s , 2m ")
	if err != nil || len(s) != 2 || s[0] != time.Second || s[1] != 2*time.Minute {
		t.Fatalf("got %v, %v", s, err)
	}
}

func TestParseScheduleErrors(t *testing.T) {
	for in, wantPart := range map[string]string{
		"":         "empty",
		"  ":       "empty",
		"5s,,5m":   `item 2 ("")`,
		"5s,":      `item 2 ("")`,
		"5":        `item 1 ("5")`,
		"0s,-5s":   `item 2 ("-5s") is negative`,
		"0s,5 min": `item 2 ("5 min")`,
	} {
		if _, err := webhook.ParseSchedule(in); err == nil || !strings.Contains(err.Error(), wantPart) {
			t.Errorf("ParseSchedule(%q) error = %v; want one mentioning %s", in, err, wantPart)
		}
	}
}

func TestScheduleNext(t *testing.T) {
	s := webhook.DefaultSchedule
	for made := 1; made < len(s); made++ {
		if d, ok := s.Next(made, 0); !ok || d != s[made] {
			t.Errorf("Next(%d) = %s, %v; want %s", made, d, ok, s[made])
		}
	}
	for _, made := range []int{len(s), len(s) + 1} {
		if d, ok := s.Next(made, time.Hour); ok || d != 0 {
			t.Errorf("Next(%d) = %s, %v; want exhausted", made, d, ok)
		}
	}
	if _, ok := (webhook.Schedule{0}).Next(1, 0); ok {
		t.Error("a one-attempt schedule allowed a retry")
	}
}

func TestScheduleNextRetryAfter(t *testing.T) {
	s := webhook.DefaultSchedule // s[1] is 5s, s[4] is 2h
	for _, tc := range []struct {
		made       int
		retryAfter time.Duration
		want       time.Duration
	}{
		{1, 7 * time.Second, 7 * time.Second},           // raised
		{1, 2 * time.Second, 5 * time.Second},           // never lowered
		{4, time.Hour, 2 * time.Hour},                   // never lowered
		{1, 48 * time.Hour, 24 * time.Hour},             // capped
		{1, 24*time.Hour + time.Second, 24 * time.Hour}, // capped
	} {
		if d, ok := s.Next(tc.made, tc.retryAfter); !ok || d != tc.want {
			t.Errorf("Next(%d, %s) = %s, %v; want %s", tc.made, tc.retryAfter, d, ok, tc.want)
		}
	}
	long := webhook.Schedule{0, 30 * time.Hour}
	if d, _ := long.Next(1, 48*time.Hour); d != 30*time.Hour {
		t.Errorf("the cap lowered a scheduled delay: %s", d)
	}
}
