package dashboard_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// receiver is a webhook receiver that answers 204 and keeps the signature
// header of each request.
type receiver struct {
	*httptest.Server
	mu         sync.Mutex
	signatures []string
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	rc := &receiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.mu.Lock()
		rc.signatures = append(rc.signatures, r.Header.Get("Webhook-Signature"))
		rc.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) received() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.signatures...)
}

// createEndpointFromForm creates an endpoint for rc from the dashboard's
// form and returns its id, checking that the secret is shown once, after a
// redirect: reloading the page creates nothing and shows it no more.
func createEndpointFromForm(t *testing.T, c *browserlessClient, rc *receiver) string {
	t.Helper()
	resp := c.post(t, "/dashboard/endpoints", url.Values{"csrf_token": {c.csrf}, "url": {rc.URL + "/hooks"}})
	where := resp.Header.Get("Location")
	id := strings.TrimSuffix(strings.TrimPrefix(where, "/dashboard/endpoints/"), "/secret")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(id, "we_") || !strings.HasSuffix(where, "/secret") {
		t.Fatalf("creating: %d to %q, want 303 to the endpoint's secret page", resp.StatusCode, where)
	}
	assertSecretShownOnce(t, c, where)
	return id
}

// endpointOfAnOrg is a new organization signed in without a browser, with
// an endpoint created from the dashboard for a receiver, and that
// endpoint's page.
func endpointOfAnOrg(t *testing.T) (*org, *browserlessClient, *receiver, string) {
	t.Helper()
	o := newOrg(t)
	c := signInClient(t, o.key)
	rc := newReceiver(t)
	return o, c, rc, "/dashboard/endpoints/" + createEndpointFromForm(t, c, rc)
}

func assertSecretShownOnce(t *testing.T, c *browserlessClient, path string) {
	t.Helper()
	if _, page := c.get(t, path); !contains(page, `id="secret"`) || !contains(page, "whsec_") {
		t.Fatalf("the secret page does not show the secret: %s", page)
	}
	if _, page := c.get(t, path); contains(page, "whsec_") || !contains(page, `id="secret-gone"`) {
		t.Fatalf("reloaded, the secret page shows it again: %s", page)
	}
}

// A test event's result and a new secret are answers to a redirect: the
// address no longer names the form's action, so reloading the page sends
// no second test and rotates nothing.
func TestFormsAnswerWithARedirect(t *testing.T) {
	suite.Need(t)
	_, c, rc, page := endpointOfAnOrg(t)

	resp := c.post(t, page+"/test", url.Values{"csrf_token": {c.csrf}})
	if where := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || where != page+"#test-result" {
		t.Fatalf("test event: %d to %q, want 303 to the endpoint's page", resp.StatusCode, where)
	}
	if _, shown := c.get(t, page); !contains(shown, `id="test-result"`) || !contains(shown, "Delivered") {
		t.Fatalf("the endpoint's page does not show the test's result: %s", shown)
	}
	if _, reloaded := c.get(t, page); contains(reloaded, `id="test-result"`) || len(rc.received()) != 1 {
		t.Fatalf("reloaded: the result shown again, or %d test events sent, want 1", len(rc.received()))
	}

	resp = c.post(t, page+"/rotate-secret", url.Values{"csrf_token": {c.csrf}, "confirm": {"yes"}})
	if where := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || where != page+"/secret" {
		t.Fatalf("rotation: %d to %q, want 303 to the secret page", resp.StatusCode, where)
	}
	assertSecretShownOnce(t, c, page+"/secret")
}

// Deleting an endpoint and rotating its secret ask first, on a page of
// their own (no JavaScript); only the confirmation's form acts.
func TestDestructiveActionsAskFirst(t *testing.T) {
	suite.Need(t)
	o, c, rc, page := endpointOfAnOrg(t)
	id := strings.TrimPrefix(page, "/dashboard/endpoints/")
	if _, shown := c.get(t, page); contains(shown, `action="`+page+`/delete"`) || contains(shown, `action="`+page+`/rotate-secret"`) {
		t.Fatalf("the endpoint's page deletes or rotates in one click: %s", shown)
	}
	for _, action := range []string{"/delete", "/rotate-secret"} {
		if _, asked := c.get(t, page+action); !contains(asked, `id="confirm"`) || !contains(asked, `name="confirm" value="yes"`) {
			t.Fatalf("GET %s does not ask: %s", action, asked)
		}
		if resp := c.post(t, page+action, url.Values{"csrf_token": {c.csrf}}); resp.StatusCode != http.StatusOK {
			t.Fatalf("POST %s unconfirmed = %d, want 200 (the question)", action, resp.StatusCode)
		}
	}
	// Not rotated: a test event carries one signature, not the two of a rotation.
	c.post(t, page+"/test", url.Values{"csrf_token": {c.csrf}})
	if sigs := rc.received(); len(sigs) != 1 || strings.Contains(sigs[0], " ") {
		t.Fatalf("after an unconfirmed rotation, the test was signed %q", sigs)
	}
	if status, _ := o.api(t, "GET", "/v1/webhook-endpoints/"+id, nil); status != http.StatusOK {
		t.Fatalf("after an unconfirmed delete, the endpoint is %d", status)
	}
	resp := c.post(t, page+"/delete", url.Values{"csrf_token": {c.csrf}, "confirm": {"yes"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("confirmed delete = %d, want 303", resp.StatusCode)
	}
	// The REST API reads endpoints from the informer cache, which hears of
	// the delete a moment later (as TestWebhookAPI's delete waits too).
	status := 0
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if status, _ = o.api(t, "GET", "/v1/webhook-endpoints/"+id, nil); status == http.StatusNotFound {
			return
		}
	}
	t.Fatalf("after a confirmed delete, the endpoint is %d", status)
}

// A test delivery is shown as one, not as a link to the sample call id it
// carries (no such call), and the endpoint says when it was last tested.
func TestTestDeliveriesReadAsTests(t *testing.T) {
	suite.Need(t)
	_, c, _, page := endpointOfAnOrg(t)
	if _, before := c.get(t, page); contains(before, "Last test event") {
		t.Fatalf("an endpoint never tested shows a test: %s", before)
	}
	c.post(t, page+"/test", url.Values{"csrf_token": {c.csrf}})
	_, shown := c.get(t, page)
	if contains(shown, "/dashboard/calls/call_test_") || !contains(shown, "test delivery (no call)") {
		t.Fatalf("the test delivery reads as a call's: %s", shown)
	}
	if !contains(shown, "Last test event: ") || !contains(shown, "(HTTP 204)") {
		t.Fatalf("the endpoint does not say it was tested: %s", shown)
	}
}
