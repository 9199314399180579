package dashboard_test

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// postCampaign sends the campaign form with csv as its file.
func postCampaign(t *testing.T, c *browserlessClient, agentID, csv string) (*http.Response, string) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for k, v := range map[string]string{"csrf_token": c.csrf, "agent_id": agentID, "name": "Flu shots",
		"calls_per_minute": "1", "window_start": "00:00", "window_end": "24:00"} {
		_ = mw.WriteField(k, v)
	}
	fw, _ := mw.CreateFormFile("contacts", "contacts.csv")
	_, _ = fw.Write([]byte(csv))
	_ = mw.Close()
	resp, err := c.http.Post(baseURL+"/dashboard/campaigns", mw.FormDataContentType(), &body) //nolint:noctx // test
	must(t, err)
	return resp, readAll(t, resp)
}

// A campaign is created from a CSV file on the campaigns page, shows its
// progress, is paused and canceled there; a bad file is refused with the
// API's words, naming the line.
func TestCampaignFromTheDashboard(t *testing.T) {
	suite.Need(t)
	o := newOrg(t)
	c := signInClient(t, o.key)
	resp, page := postCampaign(t, c, o.agentID, "to_number,customer_name\n+12125550100,Ada\nnot a number,Bob\n")
	if resp.StatusCode != http.StatusUnprocessableEntity || !contains(page, "line 3: ") {
		t.Fatalf("a bad line = %d: %s", resp.StatusCode, page)
	}
	// The file's own stumbles, and a required variable's column missing,
	// in the API's words too.
	for csv, want := range map[string]string{
		"to_number,customer_name\n+12125550100,Ada\n+12125550101\n": "line 3: the row has 1 fields and the header 2",
		"to_number,customer_name\n+12125550100,Jos\xe9\n":           "line 2, column 2: the field is not UTF-8 text",
		"to_number,first_name\n+12125550100,Ada\n":                  "The agent requires variables that were not provided: [customer_name].",
	} {
		if resp, page = postCampaign(t, c, o.agentID, csv); resp.StatusCode != http.StatusUnprocessableEntity ||
			!contains(page, want) {
			t.Fatalf("%q = %d, want 422 saying %q: %s", csv, resp.StatusCode, want, page)
		}
	}
	resp, _ = postCampaign(t, c, o.agentID, "to_number,customer_name\n+12125550100,Ada\n+12125550101,Grace\n")
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("create = %d", resp.StatusCode)
	}
	var id string
	eventually(t, "the campaign runs and shows its contacts", func() bool {
		_, list := o.api(t, "GET", "/v1/campaigns", nil)
		data, _ := list["data"].([]any)
		if len(data) != 1 {
			return false
		}
		campaign := data[0].(map[string]any)
		id, _ = campaign["campaign_id"].(string)
		_, page := c.get(t, "/dashboard/campaigns")
		return campaign["status"] == "running" && contains(page, "Flu shots") && contains(page, "of 2 done")
	})
	resp, err := c.http.PostForm(baseURL+"/dashboard/campaigns/"+id+"/pause", url.Values{"csrf_token": {c.csrf}})
	must(t, err)
	_ = readAll(t, resp)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("pause = %d", resp.StatusCode)
	}
	// Read after write: the API says paused at once (the same process
	// wrote it), whatever the informer cache holds yet.
	if _, campaign := o.api(t, "GET", "/v1/campaigns/"+id, nil); campaign["status"] != "paused" {
		t.Fatalf("right after the pause the API says %v", campaign["status"])
	}
	if _, page := c.get(t, "/dashboard/campaigns"); !strings.Contains(page, ">Resume<") {
		t.Fatalf("a paused campaign offers no resume: %s", page)
	}
	resp, err = c.http.PostForm(baseURL+"/dashboard/campaigns/"+id+"/cancel", url.Values{"csrf_token": {c.csrf}})
	must(t, err)
	_ = readAll(t, resp)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("cancel = %d", resp.StatusCode)
	}
	if _, campaign := o.api(t, "GET", "/v1/campaigns/"+id, nil); campaign["status"] != "canceled" {
		t.Fatalf("right after the cancel the API says %v", campaign["status"])
	}
}
