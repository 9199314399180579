package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// phoneWidth is a common phone's viewport, in CSS pixels.
const phoneWidth = 375

// Every page reads on a phone: nothing makes the page itself scroll
// sideways (wide tables scroll inside their own box), the navigation folds
// behind a Menu button, and the chart's axis labels keep a readable size.
func TestEveryPageFitsAPhone(t *testing.T) {
	suite.Need(t)
	o := newOrg(t)
	rc := newReceiver(t)
	status, ep := o.api(t, "POST", "/v1/webhook-endpoints", map[string]any{"url": rc.URL + "/hooks",
		"description": "A receiver with a rather long description, as people write them"})
	if status != http.StatusCreated {
		t.Fatalf("creating an endpoint: %d %v", status, ep)
	}
	epPath := "/dashboard/endpoints/" + ep["id"].(string)
	o.api(t, "POST", "/v1/webhook-endpoints/"+ep["id"].(string)+"/test", nil)
	callID := o.placeCall(t, "+14155551234")
	eventually(t, "the call is analyzed", func() bool {
		_, call := o.api(t, "GET", "/v1/calls/"+callID, nil)
		return call["analysis"] != nil
	})

	ctx := newTab(t)
	do(t, ctx, signIn(o.key))
	pages := []string{"/dashboard/", "/dashboard/calls", "/dashboard/calls/new?agent_id=" + o.agentID,
		"/dashboard/calls/" + callID, "/dashboard/endpoints", "/dashboard/endpoints/new", epPath,
		epPath + "/delete", epPath + "/rotate-secret", epPath + "/secret", "/dashboard/agents",
		"/dashboard/sip-trunks", "/dashboard/number-lists", "/dashboard/calls/call_0"}
	// The narrowest phones, then a common one, which the rest of the test uses.
	for _, width := range []int{320, phoneWidth} {
		do(t, ctx, chromedp.EmulateViewport(int64(width), 740, chromedp.EmulateMobile))
		var wide []string
		for _, p := range pages {
			do(t, ctx, chromedp.Navigate(baseURL+p), chromedp.WaitVisible(chromedp.CSS("main h1")))
			if w := pageWidth(t, ctx); w > width {
				wide = append(wide, fmt.Sprintf("%s is %d px wide", p, w))
			}
		}
		if len(wide) > 0 {
			t.Errorf("at %d px: %s", width, strings.Join(wide, "; "))
		}
	}
	assertMenuFolds(t, ctx)
	do(t, ctx, chromedp.Navigate(baseURL+"/dashboard/"), chromedp.WaitVisible(chromedp.CSS("svg.chart")))
	if h := get(t, ctx, chromedp.Evaluate[float64](
		`document.querySelector("svg.chart text.tick").getBoundingClientRect().height`)); h < 10 {
		t.Errorf("the chart's axis labels are %.1f px high, too small to read", h)
	}
}

// pageWidth is how wide the page is laid out: wider than the viewport
// when it scrolls sideways.
func pageWidth(t *testing.T, ctx context.Context) int {
	t.Helper()
	return get(t, ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
}

// assertMenuFolds checks that the navigation is folded on a phone and
// opens with its Menu button.
func assertMenuFolds(t *testing.T, ctx context.Context) {
	t.Helper()
	visible := `document.querySelector("nav[aria-label=Main]").getClientRects().length > 0`
	if get(t, ctx, chromedp.Evaluate[bool](visible)) {
		t.Error("the navigation is not folded on a phone")
	}
	if !get(t, ctx, chromedp.Evaluate[bool](`document.querySelector(".menu-toggle") !== null`)) {
		t.Fatal("no Menu button")
	}
	do(t, ctx, chromedp.Click(chromedp.CSS(".menu-toggle")))
	if !get(t, ctx, chromedp.Evaluate[bool](visible)) {
		t.Error("the Menu button does not open the navigation")
	}
}
