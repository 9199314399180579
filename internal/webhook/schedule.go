package webhook

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// maxRetryAfter caps how long a receiver can push back the next attempt,
// so a bogus Retry-After cannot park a delivery forever.
const maxRetryAfter = 24 * time.Hour

// Schedule is the delays before attempt 1, 2, 3, ... of a delivery; the
// first is normally 0.
type Schedule []time.Duration

// DefaultSchedule spreads eight attempts over about a day, so a receiver
// that is down for a deploy or an outage still gets its events.
var DefaultSchedule = Schedule{0, 5 * time.Second, 5 * time.Minute, 30 * time.Minute,
	2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}

// ParseSchedule reads a comma-separated list of durations like
// "0s,5s,5m,30m,2h": at least one, none negative.
func ParseSchedule(s string) (Schedule, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("retry schedule is empty; want durations like 0s,5s,5m,30m")
	}
	items := strings.Split(s, ",")
	sched := make(Schedule, 0, len(items))
	for i, item := range items {
		d, err := time.ParseDuration(strings.TrimSpace(item))
		if err != nil {
			return nil, fmt.Errorf("retry schedule item %d (%q) is not a duration like 5s or 30m", i+1, item)
		}
		if d < 0 {
			return nil, fmt.Errorf("retry schedule item %d (%q) is negative", i+1, item)
		}
		sched = append(sched, d)
	}
	return sched, nil
}

// String formats s the way ParseSchedule reads it, e.g. "0s,5s,5m,30m,2h".
func (s Schedule) String() string {
	items := make([]string, len(s))
	for i, d := range s {
		items[i] = shortDuration(d)
	}
	return strings.Join(items, ",")
}

// shortDuration drops the zero tails of time.Duration's format, which is
// how people write schedules: "5m0s" is "5m", "2h0m0s" is "2h".
func shortDuration(d time.Duration) string {
	s := d.String()
	// The unit check keeps "10s" and "10m" whole.
	for _, tail := range []struct{ zero, unit string }{{"0s", "m"}, {"0m", "h"}} {
		if trimmed, ok := strings.CutSuffix(s, tail.zero); ok && strings.HasSuffix(trimmed, tail.unit) {
			s = trimmed
		}
	}
	return s
}

// Next returns the delay before the next attempt after made attempts, and
// false when the schedule is exhausted. A receiver's Retry-After raises the
// delay to at least retryAfter, capped at 24 hours.
func (s Schedule) Next(made int, retryAfter time.Duration) (time.Duration, bool) {
	made = max(made, 0)
	if made >= len(s) {
		return 0, false
	}
	return max(s[made], min(retryAfter, maxRetryAfter)), true
}
