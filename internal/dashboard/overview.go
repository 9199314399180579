package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"time"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/history"
)

// Bar groups of the chart, in stacking order, with their legend.
var chartGroups = []struct{ Class, Label string }{
	{"answered", "Answered"},
	{"machine", "Answering machine"},
	{"unanswered", "No answer, busy, rejected"},
	{"failed", "Failed"},
	{"open", "Queued or in progress"},
}

func chartGroup(status, disposition string) int {
	switch switchboardv1.Disposition(disposition) {
	case switchboardv1.DispositionAnswered:
		return 0
	case switchboardv1.DispositionAnsweringMachine:
		return 1
	case switchboardv1.DispositionNoAnswer, switchboardv1.DispositionBusy, switchboardv1.DispositionRejected:
		return 2
	}
	if switchboardv1.CallPhase(status).Final() {
		return 3
	}
	return 4
}

type overviewData struct {
	Calls, Answered, Finished int
	AnswerRate                string
	AverageDuration           string
	Live, Queued              int
	Deliveries                deliveryFigure
	Chart                     chart
	// Workers are the replicas carrying calls, from their Leases.
	Workers []workerRow
}

// deliveryFigure is the overview's webhook delivery success.
type deliveryFigure struct {
	Rate string
	// Counted: the deliveries succeeded, failed or waiting for a retry.
	Counted, Retrying int
}

// workerRow is one replica as the overview lists it.
type workerRow struct {
	Name                  string
	Live, Capacity        int
	Draining, Unreachable bool
}

// chart is a server-rendered SVG bar chart: the template only draws it.
type chart struct {
	Width, Height int
	Bars          []bar
	Labels        []axisLabel
	Max           int
	Legend        []struct{ Class, Label string }
}

type bar struct {
	X, Y, W, H float64
	Class      string
	Title      string
}

type axisLabel struct {
	X    float64
	Text string
}

// overview shows the last 24 hours, counted by the store and the cache
// (calls.Book.Counts): however many calls a day holds, none is read into
// memory.
func (d *dashboard) overview(w http.ResponseWriter, r *http.Request) {
	ctx, ns := r.Context(), organization(r.Context())
	now := d.cfg.Now().UTC()
	since := now.Add(-24 * time.Hour).Truncate(time.Hour).Add(time.Hour)
	counts, err := d.cfg.Calls.Counts(ctx, ns, since, since.Add(24*time.Hour))
	if err != nil {
		d.unavailable(w, r, err, "The calls could not be counted")
		return
	}
	data := summarize(counts, since)
	if u, err := d.cfg.Quota.Usage(ctx, ns); err == nil {
		data.Live, data.Queued = u.Live, u.Queued
	}
	data.Deliveries = d.deliveryRate(ctx, ns, now.Add(-24*time.Hour))
	data.Workers = d.workers(ctx, now)
	d.render(w, r, http.StatusOK, "overview.html", page{Title: "Overview", Nav: "overview", Data: data})
}

// workers lists the replicas carrying calls; a Lease that lapsed is a
// replica that is lost (its calls are moving), shown until it goes.
func (d *dashboard) workers(ctx context.Context, now time.Time) []workerRow {
	if d.cfg.Workers == nil {
		return nil
	}
	ws, err := d.cfg.Workers.Workers(ctx)
	if err != nil {
		d.cfg.Log.Error(err, "listing the workers for the overview")
		return nil
	}
	rows := make([]workerRow, 0, len(ws))
	for _, w := range ws {
		rows = append(rows, workerRow{Name: w.Name, Live: w.Active, Capacity: w.Capacity, Draining: w.Draining,
			Unreachable: !w.Alive(now)})
	}
	return rows
}

func summarize(counts []history.CallCount, since time.Time) overviewData {
	var hours [24][5]int
	var data overviewData
	var talkedMS int64
	for _, c := range counts {
		if c.Hour < 0 || c.Hour > 23 {
			continue
		}
		hours[c.Hour][chartGroup(c.Status, c.Disposition)] += c.Calls
		data.Calls += c.Calls
		if c.Disposition != "" {
			data.Finished += c.Calls
		}
		if c.Disposition == string(switchboardv1.DispositionAnswered) {
			data.Answered += c.Calls
			talkedMS += c.DurationMS
		}
	}
	data.AnswerRate, data.AverageDuration = "—", "—"
	if data.Finished > 0 {
		data.AnswerRate = fmt.Sprintf("%.0f%%", 100*float64(data.Answered)/float64(data.Finished))
	}
	if data.Answered > 0 {
		data.AverageDuration = (time.Duration(talkedMS/int64(data.Answered)) * time.Millisecond).Round(time.Second).String()
	}
	data.Chart = drawChart(hours, since)
	return data
}

func drawChart(counts [24][5]int, since time.Time) chart {
	const width, height, left, bottom, top = 760, 220, 30, 20, 10
	c := chart{Width: width, Height: height, Legend: chartGroups, Max: 1}
	for _, hour := range counts {
		total := 0
		for _, n := range hour {
			total += n
		}
		c.Max = max(c.Max, total)
	}
	slot := float64(width-left) / 24
	scale := float64(height-bottom-top) / float64(c.Max)
	for h, hour := range counts {
		x := float64(left) + float64(h)*slot + 2
		y := float64(height - bottom)
		for g, n := range hour {
			if n == 0 {
				continue
			}
			hgt := float64(n) * scale
			y -= hgt
			at := since.Add(time.Duration(h) * time.Hour)
			c.Bars = append(c.Bars, bar{X: x, Y: y, W: slot - 4, H: hgt, Class: chartGroups[g].Class,
				Title: fmt.Sprintf("%s–%s UTC: %d %s", at.Format("15:04"), at.Add(time.Hour).Format("15:04"), n,
					chartGroups[g].Label)})
		}
		if h%3 == 0 {
			c.Labels = append(c.Labels, axisLabel{X: x, Text: since.Add(time.Duration(h) * time.Hour).Format("15h")})
		}
	}
	return c
}

// deliveryRate is the share of the last day's deliveries that succeeded,
// of those that succeeded, failed, or failed an attempt and wait for a
// retry: a delivery waiting for a retry has not reached its receiver, so
// it is not counted a success, nor left out.
func (d *dashboard) deliveryRate(ctx context.Context, ns string, since time.Time) deliveryFigure {
	o, err := d.cfg.Endpoints.Outcomes(ctx, ns, since)
	if err != nil {
		d.cfg.Log.Error(err, "listing deliveries for the overview")
		return deliveryFigure{Rate: none}
	}
	f := deliveryFigure{Rate: none, Counted: o.Counted(), Retrying: o.Retrying}
	if f.Counted > 0 {
		f.Rate = fmt.Sprintf("%.0f%%", 100*float64(o.Succeeded)/float64(f.Counted))
	}
	return f
}
