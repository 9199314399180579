// Package campaignview renders a Campaign as the REST API's campaign object,
// which the campaign.* webhook events carry too.
package campaignview

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/callview"
	"github.com/switchboard-dev/switchboard/internal/campaigns"
)

// Created is the 201 body of POST /v1/campaigns (OpenAPI:
// CampaignCreatedResponse).
type Created struct {
	CampaignID string `json:"campaign_id"`
	Status     string `json:"status"`
	AgentID    string `json:"agent_id"`
	Name       string `json:"name"`
	// Contacts were accepted; Duplicates left out as repeated numbers.
	Contacts   int    `json:"contacts"`
	Duplicates int    `json:"duplicates"`
	CreatedAt  string `json:"created_at"`
}

// CreatedOf is the 201 body of a created campaign.
func CreatedOf(c *campaigns.Created) Created {
	return Created{CampaignID: c.Campaign.Name, Status: Status(c.Campaign), AgentID: c.Campaign.Spec.AgentID,
		Name: c.Campaign.Spec.DisplayName, Contacts: c.Contacts, Duplicates: c.Duplicates,
		CreatedAt: callview.Timestamp(c.Campaign.CreationTimestamp.Time)}
}

// ContactsAdded is the 200 body of POST /v1/campaigns/{id}/contacts
// (OpenAPI: CampaignContactsAddedResponse).
type ContactsAdded struct {
	CampaignID string `json:"campaign_id"`
	Status     string `json:"status"`
	// Added were stored; Duplicates left out as repeated numbers, of the
	// list or of the campaign's contacts.
	Added      int `json:"added"`
	Duplicates int `json:"duplicates"`
}

// AddedOf is the 200 body of contacts added.
func AddedOf(a *campaigns.Added) ContactsAdded {
	return ContactsAdded{CampaignID: a.Campaign.Name, Status: Status(a.Campaign), Added: a.Added, Duplicates: a.Duplicates}
}

// Campaign is the campaign object (OpenAPI: Campaign).
type Campaign struct {
	CampaignID    string           `json:"campaign_id"`
	Name          string           `json:"name"`
	AgentID       string           `json:"agent_id"`
	Status        string           `json:"status"`
	CreatedAt     string           `json:"created_at"`
	StartedAt     *string          `json:"started_at"`
	CompletedAt   *string          `json:"completed_at"`
	CallingWindow windowView       `json:"calling_window"`
	Pacing        pacingView       `json:"pacing"`
	Redial        map[string]any   `json:"redial"`
	Contacts      contactCounts    `json:"contacts"`
	Outcomes      map[string]int64 `json:"outcomes"`
}

type windowView struct {
	Start   string   `json:"start"`
	End     string   `json:"end"`
	Days    []string `json:"days"`
	StartAt *string  `json:"start_at"`
	EndAt   *string  `json:"end_at"`
}

type pacingView struct {
	CallsPerMinute int32 `json:"calls_per_minute"`
	MaxConcurrent  int32 `json:"max_concurrent"`
}

// contactCounts: waiting contacts are outside their calling window or
// redial gap until next_due_at.
type contactCounts struct {
	Total     int64   `json:"total"`
	Pending   int64   `json:"pending"`
	Dialing   int64   `json:"dialing"`
	Done      int64   `json:"done"`
	Answered  int64   `json:"answered"`
	Skipped   int64   `json:"skipped"`
	Waiting   int64   `json:"waiting"`
	NextDueAt *string `json:"next_due_at"`
	// WaitingGroups are the waiting contacts by time zones, the group
	// that opens first first (at most 10).
	WaitingGroups []WaitingGroup `json:"waiting_groups"`
}

// WaitingGroup is the waiting contacts of one set of time zones.
type WaitingGroup struct {
	Zones     []string `json:"zones"`
	Count     int64    `json:"count"`
	NextDueAt string   `json:"next_due_at"`
}

// Status is the campaign's status as the API reports it: an action
// taken a moment ago shows before the reconciler has counted.
func Status(c *switchboardv1.Campaign) string {
	s := c.Status.State
	switch {
	case s == switchboardv1.CampaignCompleted || s == switchboardv1.CampaignCanceled:
	case c.Spec.Canceled:
		s = switchboardv1.CampaignCanceled
	case c.Spec.Paused:
		s = switchboardv1.CampaignPaused
	case s == switchboardv1.CampaignPaused:
		s = switchboardv1.CampaignRunning
	case s == "":
		s = switchboardv1.CampaignScheduled
	}
	return string(s)
}

// Render is c as the campaign object.
func Render(c *switchboardv1.Campaign) Campaign {
	s := c.Status
	w := c.Spec.CallingWindow
	v := Campaign{CampaignID: c.Name, Name: c.Spec.DisplayName, AgentID: c.Spec.AgentID, Status: Status(c),
		CreatedAt: callview.Timestamp(c.CreationTimestamp.Time), StartedAt: instant(s.StartedAt),
		CompletedAt: instant(s.CompletedAt),
		CallingWindow: windowView{Start: orDefault(w.Start, "08:00"), End: orDefault(w.End, "21:00"), Days: []string{},
			StartAt: instant(w.StartAt), EndAt: instant(w.EndAt)},
		Pacing: pacingView{CallsPerMinute: c.Spec.Pacing.CallsPerMinute, MaxConcurrent: c.Spec.Pacing.MaxConcurrent},
		Redial: redialView(c.Spec.Redial),
		Contacts: contactCounts{Total: s.Total, Pending: s.Pending, Dialing: s.Dialing, Done: s.Done, Answered: s.Answered,
			Skipped: s.Skipped, Waiting: s.Waiting, NextDueAt: instant(s.NextDueAt)},
		Outcomes: s.Outcomes}
	v.Contacts.WaitingGroups = make([]WaitingGroup, len(s.WaitingGroups))
	for i, g := range s.WaitingGroups {
		v.Contacts.WaitingGroups[i] = WaitingGroup{Zones: append([]string{}, g.Zones...), Count: g.Count,
			NextDueAt: callview.Timestamp(g.NextDueAt.Time)}
	}
	for _, d := range w.Days {
		v.CallingWindow.Days = append(v.CallingWindow.Days, string(d))
	}
	if v.Outcomes == nil {
		v.Outcomes = map[string]int64{}
	}
	return v
}

func redialView(p switchboardv1.RedialPolicy) map[string]any {
	out := map[string]any{}
	for name, r := range map[string]*switchboardv1.RedialRule{"busy": p.Busy, "no_answer": p.NoAnswer,
		"answering_machine": p.AnsweringMachine, "carrier_failure": p.CarrierFailure} {
		if r == nil {
			continue
		}
		rule := map[string]any{"attempts": r.Attempts, "per_day": r.PerDay, "min_gap_seconds": 0}
		if r.MinGap != nil {
			rule["min_gap_seconds"] = int64(r.MinGap.Seconds())
		}
		out[name] = rule
	}
	if p.LastAttemptVariables != nil {
		out["last_attempt_variables"] = json.RawMessage(p.LastAttemptVariables.Raw)
	}
	return out
}

func instant(t *metav1.Time) *string {
	if t == nil {
		return nil
	}
	s := callview.Timestamp(t.Time)
	return &s
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
