package dashboard

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/campaigns"
	"github.com/switchboard-dev/switchboard/internal/campaignview"
)

// The campaign page: one campaign's counters, its outcomes as a chart
// drawn here (an SVG the template only places, as the overview's), the
// waiting groups with the time each opens, pause, resume and cancel.

type campaignData struct {
	Campaign campaignview.Campaign
	Chart    outcomeChart
}

// outcomeChart is one stacked bar of every contact, by where it is.
type outcomeChart struct {
	Width, Height int
	Total         int64
	Segments      []segment
}

type segment struct {
	ID, Class, Label string
	Count            int64
	X, W             float64
}

// outcomeGroups are the chart's segments in order, with the class that
// colors them (dashboard.css) and their legend.
var outcomeGroups = []struct{ ID, Class, Label string }{
	{"answered", "answered", "Answered"},
	{"voicemail", "machine", "Voicemail"},
	{"no-answer", "unanswered", "No answer"},
	{"busy", "busy", "Busy"},
	{"failed", "failed", "Failed or skipped"},
	{"waiting", "waiting", "Waiting for their window"},
	{"remaining", "open", "Remaining"},
}

func (d *dashboard) showCampaign(w http.ResponseWriter, r *http.Request) {
	c, err := d.cfg.Campaigns.Get(r.Context(), organization(r.Context()), chi.URLParam(r, "campaignID"))
	switch {
	case errors.Is(err, campaigns.ErrNotFound):
		d.problem(w, r, http.StatusNotFound, "Campaign not found.")
		return
	case err != nil:
		d.unavailable(w, r, err, "The campaign could not be read")
		return
	}
	title := c.Spec.DisplayName
	if title == "" {
		title = c.Name
	}
	d.render(w, r, http.StatusOK, "campaign.html", page{Title: "Campaign " + title, Nav: "campaigns",
		Data: campaignData{Campaign: campaignview.Render(c), Chart: drawOutcomes(c.Status)}})
}

// outcomeCounts splits the contacts into the chart's groups: the final
// ones by outcome (what is not answered, voicemail, no answer or busy
// failed or was skipped), the pending ones waiting or remaining.
func outcomeCounts(s switchboardv1.CampaignStatus) []int64 {
	answered := s.Outcomes[string(switchboardv1.DispositionAnswered)]
	voicemail := s.Outcomes[string(switchboardv1.DispositionAnsweringMachine)]
	noAnswer := s.Outcomes[string(switchboardv1.DispositionNoAnswer)]
	busy := s.Outcomes[string(switchboardv1.DispositionBusy)]
	failed := max(0, s.Done-answered-voicemail-noAnswer-busy)
	remaining := max(0, s.Total-s.Done-s.Waiting)
	return []int64{answered, voicemail, noAnswer, busy, failed, s.Waiting, remaining}
}

func drawOutcomes(s switchboardv1.CampaignStatus) outcomeChart {
	const width, height = 760, 32
	counts := outcomeCounts(s)
	c := outcomeChart{Width: width, Height: height}
	for _, n := range counts {
		c.Total += n
	}
	x := 0.0
	for i, g := range outcomeGroups {
		seg := segment{ID: g.ID, Class: g.Class, Label: g.Label, Count: counts[i], X: x}
		if c.Total > 0 {
			seg.W = float64(width) * float64(counts[i]) / float64(c.Total)
		}
		x += seg.W
		c.Segments = append(c.Segments, seg)
	}
	return c
}

// percent is n of total, for the legend.
func percent(n, total int64) string {
	if total == 0 {
		return "0%"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(n)/float64(total))
}
