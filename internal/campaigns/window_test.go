package campaigns

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

func mustZones(t *testing.T, number, tz string) []*time.Location {
	t.Helper()
	names, err := ZonesOf(number, tz)
	if err != nil {
		t.Fatal(err)
	}
	return locations(names)
}

// Each contact is called inside 08:00-21:00 of its own time zone, found
// from its number unless given; a number whose prefix spans zones waits
// for an hour open in all of them, or never gets one.
func TestNextOpen(t *testing.T) {
	w, err := WindowOf(switchboardv1.CallingWindow{})
	if err != nil {
		t.Fatal(err)
	}
	// Monday 2026-11-23 15:00 UTC: 10:00 in New York, 07:00 in Los Angeles,
	// 05:00 in Honolulu, 02:00 Tuesday in Sydney.
	now := time.Date(2026, 11, 23, 15, 0, 0, 0, time.UTC)
	tests := []struct {
		name, number, tz string
		want             time.Time // zero: open now
		never            bool
	}{
		{"new york, open", "+12125550100", "", now, false},
		{"los angeles, an hour to go", "+13105550100", "", time.Date(2026, 11, 23, 16, 0, 0, 0, time.UTC), false},
		{"honolulu", "+18085550100", "", time.Date(2026, 11, 23, 18, 0, 0, 0, time.UTC), false},
		{"sydney, the next evening's morning", "+61255550100", "", time.Date(2026, 11, 23, 21, 0, 0, 0, time.UTC), false},
		{"explicit zone wins over the number", "+12125550100", "Pacific/Honolulu", time.Date(2026, 11, 23, 18, 0, 0, 0, time.UTC), false},
		{"toll-free spans Guam to Adak: 08:00 in Guam", "+18005550100", "", time.Date(2026, 11, 23, 22, 0, 0, 0, time.UTC), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := w.NextOpen(now, mustZones(t, tt.number, tt.tz))
			if ok == tt.never || (!tt.never && !got.Equal(tt.want)) {
				t.Fatalf("NextOpen = %v, %v; want %v, %v", got, ok, tt.want, !tt.never)
			}
		})
	}
}

// A window of two US zones opens when both are: 08:00 in Los Angeles,
// and closes at 21:00 in New York.
func TestNextOpenAcrossZones(t *testing.T) {
	w, _ := WindowOf(switchboardv1.CallingWindow{})
	zones := append(mustZones(t, "+12125550100", ""), mustZones(t, "+13105550100", "")...)
	now := time.Date(2026, 11, 24, 1, 30, 0, 0, time.UTC) // 20:30 New York, 17:30 Los Angeles
	if got, _ := w.NextOpen(now, zones); !got.Equal(now) {
		t.Errorf("open in both at %v, got %v", now, got)
	}
	late := time.Date(2026, 11, 24, 2, 0, 0, 0, time.UTC) // 21:00 New York
	if got, _ := w.NextOpen(late, zones); !got.Equal(time.Date(2026, 11, 24, 16, 0, 0, 0, time.UTC)) {
		t.Errorf("after New York closes: %v; want 08:00 Los Angeles", got)
	}
}

// Days of the week, start and end times, and daylight saving time.
func TestWindowBounds(t *testing.T) {
	ny := mustZones(t, "+12125550100", "")
	weekdays, err := WindowOf(switchboardv1.CallingWindow{Start: "09:30", End: "17:00",
		Days: []switchboardv1.Weekday{"mon", "tue", "wed", "thu", "fri"}})
	if err != nil {
		t.Fatal(err)
	}
	saturday := time.Date(2026, 11, 28, 15, 0, 0, 0, time.UTC)
	if got, _ := weekdays.NextOpen(saturday, ny); !got.Equal(time.Date(2026, 11, 30, 14, 30, 0, 0, time.UTC)) {
		t.Errorf("from Saturday: %v; want Monday 09:30 New York", got)
	}
	// 2026-03-08 is the spring change in New York: 09:30 is EDT (UTC-4).
	if got, _ := weekdays.NextOpen(time.Date(2026, 3, 8, 12, 0, 0, 0, time.UTC), ny); !got.Equal(time.Date(2026, 3, 9, 13, 30, 0, 0, time.UTC)) {
		t.Errorf("after the change to daylight saving time: %v", got)
	}
	narrow, _ := WindowOf(switchboardv1.CallingWindow{Start: "09:00", End: "12:00"})
	if got, ok := narrow.NextOpen(saturday, mustZones(t, "+18005550100", "")); ok {
		t.Errorf("three hours a day in zones 20 hours apart opened at %v", got)
	}
	start := metav1.NewTime(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)) // 22:00 in New York
	end := metav1.NewTime(time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC))
	bounded, _ := WindowOf(switchboardv1.CallingWindow{StartAt: &start, EndAt: &end})
	if got, ok := bounded.NextOpen(saturday, ny); !ok || !got.Equal(time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC)) {
		t.Errorf("before startAt: %v, %v", got, ok)
	}
	if got, ok := bounded.NextOpen(end.Time, ny); ok {
		t.Errorf("after endAt it opened at %v", got)
	}
	for _, bad := range []switchboardv1.CallingWindow{{Start: "21:00", End: "08:00"}, {Start: "8am"}, {Days: []switchboardv1.Weekday{"funday"}}} {
		if _, err := WindowOf(bad); err == nil {
			t.Errorf("WindowOf(%+v) accepted", bad)
		}
	}
}

func TestZonesOf(t *testing.T) {
	if _, err := ZonesOf("+12125550100", "Mars/Olympus"); err == nil {
		t.Error("an unknown time zone was accepted")
	}
	if z, _ := ZonesOf("+61255550100", ""); len(z) != 1 || z[0] != "Australia/Sydney" {
		t.Errorf("Sydney's number maps to %v", z)
	}
}
