package campaigns

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/history"
)

func TestRedialPolicy(t *testing.T) {
	p := PolicyOf(switchboardv1.RedialPolicy{
		Busy:           &switchboardv1.RedialRule{Attempts: 3, MinGap: &metav1.Duration{Duration: 10 * time.Minute}},
		NoAnswer:       &switchboardv1.RedialRule{Attempts: 4, PerDay: 2},
		CarrierFailure: &switchboardv1.RedialRule{Attempts: 2},
	})
	ny := mustZones(t, "+12125550100", "")
	now := time.Date(2026, 11, 23, 15, 0, 0, 0, time.UTC) // 10:00 in New York
	today := LocalDay(now, ny)
	tests := []struct {
		name    string
		c       history.Contact
		outcome string
		want    history.ContactUpdate
	}{
		{"answered is done", history.Contact{Attempts: 1}, "answered",
			history.ContactUpdate{State: history.ContactDone, Outcome: "answered"}},
		{"busy waits its gap", history.Contact{Attempts: 1}, "busy",
			history.ContactUpdate{State: history.ContactPending, DueAt: now.Add(10 * time.Minute), Outcome: "busy"}},
		{"busy out of attempts", history.Contact{Attempts: 3}, "busy",
			history.ContactUpdate{State: history.ContactDone, Outcome: "busy"}},
		{"no answer, day's attempts used: tomorrow", history.Contact{Attempts: 2, AttemptsToday: 2, Day: today}, "no_answer",
			history.ContactUpdate{State: history.ContactPending, DueAt: time.Date(2026, 11, 24, 5, 0, 0, 0, time.UTC), Outcome: "no_answer"}},
		{"no answer, yesterday's attempts do not count", history.Contact{Attempts: 2, AttemptsToday: 2, Day: "2026-11-22"}, "no_answer",
			history.ContactUpdate{State: history.ContactPending, DueAt: now, Outcome: "no_answer"}},
		{"dispatch failure follows carrier_failure", history.Contact{Attempts: 1}, "dispatch_error",
			history.ContactUpdate{State: history.ContactPending, DueAt: now, Outcome: "dispatch_error"}},
		{"no rule: final", history.Contact{Attempts: 1}, "answering_machine",
			history.ContactUpdate{State: history.ContactDone, Outcome: "answering_machine"}},
		{"do-not-call: skipped", history.Contact{Attempts: 1}, "dnc_blocked",
			history.ContactUpdate{State: history.ContactSkipped, Outcome: "dnc_blocked"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := p.After(tt.c, tt.outcome, now, ny); got != tt.want {
				t.Errorf("After = %+v; want %+v", got, tt.want)
			}
		})
	}
	if !p.IsLastAttempt(history.Contact{Attempts: 2, Outcome: "busy"}) || p.IsLastAttempt(history.Contact{Attempts: 1, Outcome: "busy"}) {
		t.Error("the third busy attempt is the last, the second is not")
	}
}
