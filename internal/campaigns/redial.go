package campaigns

import (
	"time"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/callpolicy"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/telephony"
)

// Outcomes of a contact that was never dialed, besides the call policy's
// codes (dnc_blocked, number_blocked) and canceled.
const (
	// OutcomeNoWindow: its time zones never share an open hour of the
	// calling window, or the campaign's endAt came first.
	OutcomeNoWindow = "window_closed"
	// OutcomeCallInvalid: the apiserver refused the contact's Call as
	// invalid (its variables or metadata over the Call's bounds): final,
	// as it would be refused again.
	OutcomeCallInvalid = "call_invalid"
)

// Rule is one outcome's redial rule.
type Rule struct {
	Attempts int
	MinGap   time.Duration
	PerDay   int // 0: no bound
}

// Policy is a campaign's redial rules by outcome.
type Policy struct {
	rules map[string]Rule
}

// PolicyOf reads a campaign's redial policy. carrierFailure also covers
// calls the carrier did not accept.
func PolicyOf(spec switchboardv1.RedialPolicy) Policy {
	p := Policy{rules: map[string]Rule{}}
	add := func(r *switchboardv1.RedialRule, outcomes ...string) {
		if r == nil {
			return
		}
		rule := Rule{Attempts: max(1, int(r.Attempts)), PerDay: int(r.PerDay)}
		if r.MinGap != nil {
			rule.MinGap = r.MinGap.Duration
		}
		for _, o := range outcomes {
			p.rules[o] = rule
		}
	}
	add(spec.Busy, string(switchboardv1.DispositionBusy))
	add(spec.NoAnswer, string(switchboardv1.DispositionNoAnswer))
	add(spec.AnsweringMachine, string(switchboardv1.DispositionAnsweringMachine))
	add(spec.CarrierFailure, string(switchboardv1.DispositionCarrierFailure),
		telephony.CodeDispatchError, telephony.CodeDispatchFailed)
	return p
}

// After says what becomes of contact c (its Attempts counting the attempt
// that just ended) whose attempt ended with outcome at now: pending again
// for a redial, or final.
func (p Policy) After(c history.Contact, outcome string, now time.Time, zones []*time.Location) history.ContactUpdate {
	switch outcome {
	case callpolicy.CodeDNCBlocked, callpolicy.CodeNumberBlocked:
		return history.ContactUpdate{State: history.ContactSkipped, Outcome: outcome}
	}
	rule, ok := p.rules[outcome]
	if !ok || c.Attempts >= rule.Attempts {
		return history.ContactUpdate{State: history.ContactDone, Outcome: outcome}
	}
	due := now.Add(rule.MinGap)
	if rule.PerDay > 0 && c.AttemptsToday >= rule.PerDay && LocalDay(due, zones) == c.Day {
		due = nextLocalMidnight(due, zones)
	}
	return history.ContactUpdate{State: history.ContactPending, DueAt: due, Outcome: outcome}
}

// IsLastAttempt reports whether the next attempt of c is its last under the
// rule of its last outcome.
func (p Policy) IsLastAttempt(c history.Contact) bool {
	rule, ok := p.rules[c.Outcome]
	return ok && c.Attempts > 0 && c.Attempts+1 == rule.Attempts
}

// nextLocalMidnight is the start of the day after t's in the first zone;
// the calling window then moves the contact to its opening.
func nextLocalMidnight(t time.Time, zones []*time.Location) time.Time {
	z := time.UTC
	if len(zones) > 0 {
		z = zones[0]
	}
	l := t.In(z)
	return time.Date(l.Year(), l.Month(), l.Day()+1, 0, 0, 0, 0, z).UTC()
}
