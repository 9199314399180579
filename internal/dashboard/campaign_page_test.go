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
