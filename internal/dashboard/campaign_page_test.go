package dashboard_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// etcZone is the Etc/GMT zone whose local hour is hour now (Etc/GMT-5 is
// UTC+5: the sign is POSIX's).
func etcZone(hour int) string {
	offset := hour - time.Now().UTC().Hour()
	if offset < -12 {
		offset += 24
	}
	if offset > 14 {
		offset -= 24
	}
	if offset == 0 {
		return "Etc/GMT"
	}
	return fmt.Sprintf("Etc/GMT%+d", -offset)
}

// The campaign page in headless Chromium: the outcomes chart and the
// counters as the API has them, the contact waiting for its window in
// its zone's group, and pause and resume from the page.
func TestCampaignPage(t *testing.T) {
	suite.Need(t)
	o := newOrg(t)
	ada := map[string]any{"customer_name": "Ada"}
	// Noon in one zone (open), three at night in another (closed till 08:00).
	open, closed := etcZone(12), etcZone(3)
	status, created := o.api(t, "POST", "/v1/campaigns", map[string]any{"agent_id": o.agentID, "name": "Flu shots",
		"contacts": []any{map[string]any{"to_number": "+12125560100", "timezone": open, "variables": ada},
			map[string]any{"to_number": "+12125560101", "timezone": open, "variables": ada},
			map[string]any{"to_number": "+12125560102", "timezone": closed, "variables": ada}},
		"calling_window": map[string]any{"start": "08:00", "end": "21:00"},
		"pacing":         map[string]any{"calls_per_minute": 1}})
	if status != 201 {
		t.Fatalf("create = %d %v", status, created)
	}
	id := created["campaign_id"].(string)
	// One call a minute: the first is answered, the second waits its
	// turn, the third its window.
	eventually(t, "the first contact is answered and the third waits", func() bool {
		_, c := o.api(t, "GET", "/v1/campaigns/"+id, nil)
		counts, _ := c["contacts"].(map[string]any)
		return counts["answered"] == 1.0 && counts["waiting"] == 1.0
	})

	ctx := newTab(t)
	do(t, ctx, signIn(o.key),
		chromedp.Navigate(baseURL+"/dashboard/campaigns"),
		chromedp.Click(chromedp.CSS(`a[href="/dashboard/campaigns/`+id+`"]`)),
		chromedp.WaitVisible(chromedp.CSS("svg.outcomes")),
		screenshot("campaign"))
	for sel, want := range map[string]string{"#campaign-status": "running", "#fig-total": "3", "#fig-answered": "1",
		"#fig-waiting": "1", "#outcome-answered": "1", "#outcome-waiting": "1", "#outcome-remaining": "1"} {
		if got := text(t, ctx, sel); got != want {
			t.Errorf("%s shows %q, want %q", sel, got, want)
		}
	}
	// The chart draws a segment for each non-empty group, in proportion.
	widths := get(t, ctx, chromedp.Evaluate[map[string]float64](`Object.fromEntries(
		[...document.querySelectorAll("svg.outcomes rect")].map(r => [r.dataset.outcome, r.getBBox().width]))`))
	if len(widths) != 3 || widths["answered"] <= 0 || widths["answered"] != widths["waiting"] || widths["waiting"] != widths["remaining"] {
		t.Errorf("the chart's segments are %v, want answered, waiting and remaining of equal width", widths)
	}
	if groups := text(t, ctx, "#waiting-groups tbody"); !strings.Contains(groups, closed) || !strings.Contains(groups, "1") {
		t.Errorf("the waiting groups read %q, want %s with one contact", groups, closed)
	}
	// The group opens at the window's start in its own zone, named (not
	// the API's raw RFC 3339 time).
	if opens := text(t, ctx, "#waiting-groups tbody td:nth-child(3)"); !regexp.MustCompile(`^\d{4}-\d\d-\d\d 08:00:00 ` +
		regexp.QuoteMeta(closed) + `$`).MatchString(opens) {
		t.Errorf("the waiting group opens %q, want a date then 08:00:00 %s", opens, closed)
	}

	do(t, ctx, chromedp.Click(chromedp.CSS("#pause")), chromedp.WaitVisible(chromedp.CSS("#resume")))
	if got := text(t, ctx, "#campaign-status"); got != "paused" {
		t.Fatalf("after pause the page says %q", got)
	}
	if _, c := o.api(t, "GET", "/v1/campaigns/"+id, nil); c["status"] != "paused" {
		t.Fatalf("after pause the API says %v", c["status"])
	}
	do(t, ctx, chromedp.Click(chromedp.CSS("#resume")), chromedp.WaitVisible(chromedp.CSS("#pause")))
	if got := text(t, ctx, "#campaign-status"); got != "running" {
		t.Fatalf("after resume the page says %q", got)
	}
	if _, c := o.api(t, "GET", "/v1/campaigns/"+id, nil); c["status"] != "running" {
		t.Fatalf("after resume the API says %v", c["status"])
	}
}

// isoTime is an RFC 3339 time as the API writes it.
var isoTime = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d`)

// The campaign pages read in words: times as every page shows them (not
// the API's RFC 3339), outcomes by their names (not their codes).
func TestCampaignPagesReadInWords(t *testing.T) {
	suite.Need(t)
	o := newOrg(t)
	ada := map[string]any{"customer_name": "Ada"}
	// Answered, no answer (0002) and a machine (0003), as the simulated
	// carrier ends them.
	status, created := o.api(t, "POST", "/v1/campaigns", map[string]any{"agent_id": o.agentID, "name": "Reminders",
		"contacts": []any{map[string]any{"to_number": "+12125560201", "variables": ada},
			map[string]any{"to_number": "+12125560002", "variables": ada},
			map[string]any{"to_number": "+12125560003", "variables": ada}},
		"calling_window": map[string]any{"start": "00:00", "end": "24:00"},
		"pacing":         map[string]any{"calls_per_minute": 600}})
	if status != 201 {
		t.Fatalf("create = %d %v", status, created)
	}
	id := created["campaign_id"].(string)
	eventually(t, "the campaign completes", func() bool {
		_, c := o.api(t, "GET", "/v1/campaigns/"+id, nil)
		return c["status"] == "completed"
	})

	expectSourceFilter(t, o, 3)

	ctx := newTab(t)
	do(t, ctx, signIn(o.key), chromedp.Navigate(baseURL+"/dashboard/campaigns"),
		chromedp.WaitVisible(chromedp.CSS("table.campaigns")))
	list := text(t, ctx, "table.campaigns tbody")
	for _, want := range []string{"Answered: 1", "No answer: 1", "Voicemail: 1"} {
		if !strings.Contains(list, want) {
			t.Errorf("the campaigns list reads %q, want %q", list, want)
		}
	}
	expectInWords(t, "the campaigns list", list)

	do(t, ctx, chromedp.Navigate(baseURL+"/dashboard/campaigns/"+id), chromedp.WaitVisible(chromedp.CSS("#campaign-times")))
	page := text(t, ctx, "main")
	times := text(t, ctx, "#campaign-times")
	if n := len(regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC`).FindAllString(times, -1)); n != 3 {
		t.Errorf("the campaign's times read %q, want created, first call and end as every page shows times", times)
	}
	expectInWords(t, "the campaign page", page)
}

// expectInWords: text holds no RFC 3339 time and no outcome code.
func expectInWords(t *testing.T, what, text string) {
	t.Helper()
	if m := isoTime.FindString(text); m != "" {
		t.Errorf("%s shows a raw time (%s…): %q", what, m, text)
	}
	for _, code := range []string{"no_answer", "answering_machine", "answered:"} {
		if strings.Contains(text, code) {
			t.Errorf("%s shows the code %q: %q", what, code, text)
		}
	}
}

// expectSourceFilter: source=campaign finds the organization's n campaign
// calls and not the one placed through the API, on GET /v1/calls and on
// the dashboard's calls page alike.
func expectSourceFilter(t *testing.T, o *org, n int) {
	t.Helper()
	other := o.placeCall(t, "+14155551234")
	_, list := o.api(t, "GET", "/v1/calls?source=campaign", nil)
	data, _ := list["data"].([]any)
	for _, c := range data {
		if c := c.(map[string]any); c["source"] != "campaign" || c["call_id"] == other {
			t.Errorf("GET /v1/calls?source=campaign lists %v", c)
		}
	}
	if len(data) != n {
		t.Errorf("GET /v1/calls?source=campaign lists %d calls, want the campaign's %d", len(data), n)
	}
	_, page := signInClient(t, o.key).get(t, "/dashboard/calls?source=campaign")
	if rows := strings.Count(page, "<tr data-call-id="); rows != n || contains(page, other) {
		t.Errorf("the calls page filtered by source campaign shows %d calls (the API's call among them: %v), want %d",
			rows, contains(page, other), n)
	}
}
