package campaigns

import (
	"fmt"
	"strings"
	"time"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// Window is when a contact may be called, in its own time zones: from
// Start to End (time of day, End exclusive) on Days, between NotBefore and
// NotAfter (zero: unbounded).
type Window struct {
	Start, End          time.Duration // since local midnight
	Days                [7]bool       // by time.Weekday
	NotBefore, NotAfter time.Time
}

// The default window: 08:00 to 21:00 local, every day (the US rule for
// telephone solicitation).
const (
	defaultStart = 8 * time.Hour
	defaultEnd   = 21 * time.Hour
)

var weekdays = map[switchboardv1.Weekday]time.Weekday{"sun": time.Sunday, "mon": time.Monday,
	"tue": time.Tuesday, "wed": time.Wednesday, "thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday}

// WindowOf reads a campaign's calling window.
func WindowOf(spec switchboardv1.CallingWindow) (Window, error) {
	w := Window{Start: defaultStart, End: defaultEnd}
	var err error
	if spec.Start != "" {
		if w.Start, err = timeOfDay(spec.Start); err != nil {
			return Window{}, err
		}
	}
	if spec.End != "" {
		if w.End, err = timeOfDay(spec.End); err != nil {
			return Window{}, err
		}
	}
	if w.Start >= w.End {
		return Window{}, fmt.Errorf("calling window start %s is not before its end %s", spec.Start, spec.End)
	}
	for _, d := range spec.Days {
		wd, ok := weekdays[switchboardv1.Weekday(strings.ToLower(string(d)))]
		if !ok {
			return Window{}, fmt.Errorf("unknown day %q: use mon, tue, wed, thu, fri, sat, sun", d)
		}
		w.Days[wd] = true
	}
	if len(spec.Days) == 0 {
		w.Days = [7]bool{true, true, true, true, true, true, true}
	}
	if spec.StartAt != nil {
		w.NotBefore = spec.StartAt.Time
	}
	if spec.EndAt != nil {
		w.NotAfter = spec.EndAt.Time
	}
	return w, nil
}

// timeOfDay parses HH:MM (24:00 is the end of the day).
func timeOfDay(s string) (time.Duration, error) {
	var h, m int
	if _, err := fmt.Sscanf(s, "%2d:%2d", &h, &m); err != nil || len(s) != 5 || h < 0 || m < 0 || m > 59 ||
		h > 24 || (h == 24 && m != 0) {
		return 0, fmt.Errorf("time of day %q is not HH:MM", s)
	}
	return time.Duration(h)*time.Hour + time.Duration(m)*time.Minute, nil
}

// searchDays bounds the search for an opening: a window open on at least
// one day of the week opens within 8 days in every zone, unless its zones
// never share an hour.
const searchDays = 8

// NextOpen returns the earliest instant at or after now at which the window
// is open in every one of zones, and false when there is none (the zones
// never share an open hour, or NotAfter comes first).
func (w Window) NextOpen(now time.Time, zones []*time.Location) (time.Time, bool) {
	t := now
	if t.Before(w.NotBefore) {
		t = w.NotBefore
	}
	limit := t.Add(searchDays * 24 * time.Hour)
	for !t.After(limit) {
		later := t
		for _, z := range zones {
			if open := w.nextOpenIn(t, z); open.After(later) {
				later = open
			}
		}
		if later.Equal(t) {
			return t, w.NotAfter.IsZero() || t.Before(w.NotAfter)
		}
		t = later // open in one zone from then: check the others again
	}
	return time.Time{}, false
}

// nextOpenIn is the earliest instant at or after t at which the window is
// open in zone z.
func (w Window) nextOpenIn(t time.Time, z *time.Location) time.Time {
	local := t.In(z)
	for day := 0; day <= searchDays; day++ {
		d := local.AddDate(0, 0, day)
		midnight := time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, z)
		if !w.Days[midnight.Weekday()] {
			continue
		}
		start, end := atTimeOfDay(midnight, w.Start), atTimeOfDay(midnight, w.End)
		switch {
		case !t.Before(end):
			continue
		case t.Before(start):
			return start
		default:
			return t
		}
	}
	return t.Add(searchDays * 24 * time.Hour * 2) // never: past any limit
}

// atTimeOfDay is the wall-clock time of day d of midnight's date, so that a
// day of 23 or 25 hours (a change of daylight saving time) keeps 08:00 at
// 08:00.
func atTimeOfDay(midnight time.Time, d time.Duration) time.Time {
	h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
	return time.Date(midnight.Year(), midnight.Month(), midnight.Day(), h, m, 0, 0, midnight.Location())
}

// LocalDay is the contact's date at t in its first zone, YYYY-MM-DD: the
// day its attempts per day are counted on.
func LocalDay(t time.Time, zones []*time.Location) string {
	if len(zones) == 0 {
		return t.UTC().Format(time.DateOnly)
	}
	return t.In(zones[0]).Format(time.DateOnly)
}
