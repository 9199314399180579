package dashboard_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// twoReceivers is an organization with two endpoints of call.ended
// events: one that accepts them, one that answers 503 with Retry-After
// an hour (so its delivery waits for a retry all through the test), and
// a call whose delivery to each has settled so.
type twoReceivers struct {
	*org
	callID, up, down string // the endpoints' ids
	upURL, downURL   string
	upDelivery       string // delivery ids
	downDelivery     string
}

func newTwoReceivers(t *testing.T) *twoReceivers {
	t.Helper()
	o := &twoReceivers{org: newOrg(t)}
	o.up, o.upURL = o.endpoint(t, "CRM", func(w http.ResponseWriter) { w.WriteHeader(http.StatusNoContent) })
	o.down, o.downURL = o.endpoint(t, "Billing", func(w http.ResponseWriter) {
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	o.callID = o.placeCall(t, "+14155551234")
	eventually(t, "the call's delivery succeeds to one endpoint and waits for a retry to the other", func() bool {
		o.upDelivery = o.deliveryOf(t, o.up, "succeeded", 1)
		o.downDelivery = o.deliveryOf(t, o.down, "pending", 1)
		return o.upDelivery != "" && o.downDelivery != ""
	})
	return o
}

// endpoint creates an endpoint of call.ended events for a receiver
// answering with answer.
func (o *twoReceivers) endpoint(t *testing.T, description string, answer func(http.ResponseWriter)) (id, url string) {
	t.Helper()
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { answer(w) }))
	t.Cleanup(rc.Close)
	url = rc.URL + "/hooks/" + strings.ToLower(description)
	status, ep := o.api(t, "POST", "/v1/webhook-endpoints", map[string]any{"url": url, "description": description,
		"events": []string{"call.ended"}})
	if status != http.StatusCreated {
		t.Fatalf("creating the endpoint %s: %d %v", description, status, ep)
	}
	return ep["id"].(string), url
}

// deliveryOf is the id of the endpoint's delivery of the call when it is
// in phase after attempts attempts, else "".
func (o *twoReceivers) deliveryOf(t *testing.T, endpoint, phase string, attempts float64) string {
	_, page := o.api(t, "GET", "/v1/webhook-endpoints/"+endpoint+"/deliveries", nil)
	data, _ := page["data"].([]any)
	for _, d := range data {
		d := d.(map[string]any)
		if d["call_id"] == o.callID && d["status"] == phase && d["attempt_count"] == attempts {
			return d["id"].(string)
		}
	}
	return ""
}

// The call page says where each delivery went (the endpoint's URL and
// description, a link to its page) and offers a retry only for the one
// that did not succeed.
func TestCallPageSaysWhereEachDeliveryWent(t *testing.T) {
	suite.Need(t)
	o := newTwoReceivers(t)
	ctx := newTab(t)
	do(t, ctx, signIn(o.key), chromedp.Navigate(baseURL+"/dashboard/calls/"+o.callID),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-delivery-id="`+o.downDelivery+`"]`)))
	for _, tc := range []struct{ delivery, endpoint, url, description string }{
		{o.upDelivery, o.up, o.upURL, "CRM"}, {o.downDelivery, o.down, o.downURL, "Billing"},
	} {
		row := `tr[data-delivery-id="` + tc.delivery + `"]`
		if got := text(t, ctx, row+" td.endpoint"); !strings.Contains(got, tc.url) || !strings.Contains(got, tc.description) {
			t.Errorf("the delivery to %s reads %q for its endpoint, want its URL and description", tc.description, got)
		}
		href := get(t, ctx, chromedp.AttributeValue(chromedp.CSS(row+" td.endpoint a"), "href"))
		if !strings.HasSuffix(href.Value, "/dashboard/endpoints/"+tc.endpoint) {
			t.Errorf("the delivery to %s links to %q, want the endpoint's page", tc.description, href.Value)
		}
	}
	retries := get(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("table.deliveries tr")]
		.filter(r => r.querySelector("button")).map(r => r.dataset.deliveryId)`))
	if len(retries) != 1 || retries[0] != o.downDelivery {
		t.Errorf("Retry is offered on %v, want only the delivery waiting for a retry (%s), not the one that succeeded (%s)",
			retries, o.downDelivery, o.upDelivery)
	}
}

// On a phone (375 px), the call's status, each delivery's status and
// each call's status in the list are on the screen, not beyond a
// sideways scroll.
func TestStatusVisibleOnAPhone(t *testing.T) {
	suite.Need(t)
	o := newTwoReceivers(t)
	ctx := newTab(t)
	do(t, ctx, signIn(o.key), chromedp.EmulateViewport(phoneWidth, 740, chromedp.EmulateMobile),
		chromedp.Navigate(baseURL+"/dashboard/calls/"+o.callID),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-delivery-id="`+o.downDelivery+`"]`)))
	scrollIntoView(t, ctx, "#deliveries-h")
	do(t, ctx, screenshot("call-phone"))
	for _, sel := range []string{"#call-status", `tr[data-delivery-id="` + o.upDelivery + `"] .status`,
		`tr[data-delivery-id="` + o.downDelivery + `"] .status`} {
		expectOnScreen(t, ctx, sel)
	}
	do(t, ctx, chromedp.Navigate(baseURL+"/dashboard/calls"),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-call-id="`+o.callID+`"]`)))
	scrollIntoView(t, ctx, `tr[data-call-id="`+o.callID+`"]`)
	do(t, ctx, screenshot("calls-phone"))
	expectOnScreen(t, ctx, `tr[data-call-id="`+o.callID+`"] .status`)
}

func scrollIntoView(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	get(t, ctx, chromedp.Evaluate[bool](`document.querySelector(`+quote(sel)+`).scrollIntoView() === undefined`))
}

// expectOnScreen: the element sel lies within the viewport's width and
// inside every box that clips it (a table's scroll box), so it is seen
// without scrolling sideways.
func expectOnScreen(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	seen := get(t, ctx, chromedp.Evaluate[bool](`(() => {
		const el = document.querySelector(`+quote(sel)+`);
		const r = el.getBoundingClientRect();
		if (r.width === 0 || r.left < 0 || r.right > window.innerWidth) return false;
		for (let p = el.parentElement; p; p = p.parentElement) {
			if (getComputedStyle(p).overflowX === "visible") continue;
			const b = p.getBoundingClientRect();
			if (r.left < b.left || r.right > b.right) return false;
		}
		return true;
	})()`))
	if !seen {
		t.Errorf("at %d px, %s is off the screen (beyond a sideways scroll)", phoneWidth, sel)
	}
}

// The overview's delivery success counts a delivery waiting for a retry
// as not (yet) a success: one of two deliveries succeeded.
func TestOverviewCountsDeliveriesWaitingForARetry(t *testing.T) {
	suite.Need(t)
	o := newTwoReceivers(t)
	ctx := newTab(t)
	do(t, ctx, signIn(o.key))
	rate, retrying := text(t, ctx, "#fig-delivery-rate"), text(t, ctx, "#fig-delivery-retrying")
	if rate != "50% of 2" || !strings.HasPrefix(retrying, "1 waiting for a retry") {
		t.Errorf("the overview's delivery success reads %q (%q), want 50%% of 2 with 1 waiting for a retry", rate, retrying)
	}
}

// quote is s as a JavaScript string literal.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
