package app_test

// Contacts added over REST to a running campaign: JSON and CSV, the same
// checks as on create, an Idempotency-Key, every new contact dialed and
// none twice, and a clear 409 once the campaign has ended.

import (
	"bytes"
	"context"
	"fmt"
	"mime/multipart"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// postContactsCSV posts csv as the contacts file of campaign id.
func postContactsCSV(t *testing.T, o *org, id, csv string, header http.Header) response {
	t.Helper()
	body, contentType := contactsForm(t, csv)
	return postContactsForm(t, o, id, body, contentType, header)
}

// contactsForm is a multipart body with csv as its contacts file.
func contactsForm(t *testing.T, csv string) ([]byte, string) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, err := mw.CreateFormFile("contacts", "more.csv")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write([]byte(csv))
	_ = mw.Close()
	return body.Bytes(), mw.FormDataContentType()
}

func postContactsForm(t *testing.T, o *org, id string, body []byte, contentType string, header http.Header) response {
	t.Helper()
	h := http.Header{"Content-Type": {contentType}}
	for k, v := range header {
		h[k] = v
	}
	return sendWithHeader(t, operator.baseURL, "POST", "/v1/campaigns/"+id+"/contacts", "Bearer "+o.key, body, h)
}

func TestCampaignAddContacts(t *testing.T) {
	g := NewWithT(t)
	o := newOrg(t)
	ada := map[string]any{"customer_name": "Ada"}
	// One call a minute: the first goes out and the campaign is running
	// with the second waiting when the contacts are added.
	r := do(t, "POST", "/v1/campaigns", o.key, map[string]any{"agent_id": o.agentID,
		"contacts": []any{map[string]any{"to_number": "+12125580100", "variables": ada},
			map[string]any{"to_number": "+12125580101", "variables": ada}},
		"calling_window": map[string]any{"start": "00:00", "end": "24:00"},
		"pacing":         map[string]any{"calls_per_minute": 1, "max_concurrent": 5}})
	g.Expect(r.status).To(Equal(http.StatusCreated), string(r.raw))
	id := r.body["campaign_id"].(string)
	path := "/v1/campaigns/" + id + "/contacts"

	r = do(t, "POST", path, o.key, map[string]any{"contacts": []any{
		map[string]any{"to_number": "+12125580102", "variables": ada},
		map[string]any{"to_number": "+12125580102"}, // repeated in the list
		map[string]any{"to_number": "+12125580100"}, // in the campaign already
	}})
	g.Expect(r.status).To(Equal(http.StatusOK), string(r.raw))
	g.Expect(r.body).To(HaveKeyWithValue("added", BeNumerically("==", 1)))
	g.Expect(r.body).To(HaveKeyWithValue("duplicates", BeNumerically("==", 2)))
	g.Expect(r.body).To(HaveKeyWithValue("campaign_id", id))

	key := http.Header{"Idempotency-Key": {"more-" + randHex(4)}}
	csv := "to_number,customer_name\n+12125580103,Grace\n+12125580104,Alan\n"
	form, contentType := contactsForm(t, csv)
	first := postContactsForm(t, o, id, form, contentType, key)
	g.Expect(first.status).To(Equal(http.StatusOK), "%s", first.raw)
	g.Expect(first.body).To(HaveKeyWithValue("added", BeNumerically("==", 2)))
	again := postContactsForm(t, o, id, form, contentType, key) // a retry sends the same bytes
	g.Expect(again.status).To(Equal(http.StatusOK))
	g.Expect(again.raw).To(Equal(first.raw))
	g.Expect(again.header.Get("Idempotent-Replayed")).To(Equal("true"))

	// The same checks as on create, naming the line; nothing is added.
	bad := postContactsCSV(t, o, id, "to_number\n+12125580105\nnot a number\n", nil)
	g.Expect(bad.status).To(Equal(http.StatusUnprocessableEntity), string(bad.raw))
	g.Expect(bad.body["detail"].([]any)[0].(map[string]any)["loc"]).To(Equal([]any{"body", "contacts", "line 3", "to_number"}))
	g.Expect(postContactsCSV(t, o, id, "phone\n+12125580105\n", nil).status).To(Equal(http.StatusUnprocessableEntity))
	g.Expect(do(t, "POST", path, o.key, map[string]any{}).status).To(Equal(http.StatusUnprocessableEntity))
	g.Expect(do(t, "POST", "/v1/campaigns/campaign-none/contacts", o.key,
		map[string]any{"contacts": []any{map[string]any{"to_number": "+12125580105"}}}).status).To(Equal(http.StatusNotFound))

	// Faster now: every contact is dialed once, and the campaign ends.
	c := getCampaign(t, o.ns, id)
	edited := c.DeepCopy()
	edited.Spec.Pacing.CallsPerMinute = 600
	g.Expect(k8s.Patch(context.Background(), edited, client.MergeFrom(c))).To(Succeed())
	g.Eventually(func() any { return do(t, "GET", "/v1/campaigns/"+id, o.key, nil).body["status"] },
		time.Minute, 100*time.Millisecond).Should(Equal("completed"))
	g.Expect(getCampaign(t, o.ns, id).Status.Outcomes).To(Equal(map[string]int64{"answered": 5}))
	dialed := map[string]int{}
	for _, call := range campaignCalls(t, o.ns, id) {
		dialed[call.Spec.ToNumber]++
	}
	want := map[string]int{}
	for i := range 5 {
		want[fmt.Sprintf("+1212558%04d", 100+i)] = 1
	}
	g.Expect(dialed).To(Equal(want), "every contact dialed once")
	final := getCampaign(t, o.ns, id)
	g.Expect(final.Status.Total).To(Equal(int64(5)))
	g.Expect(final.Status.State).To(Equal(switchboardv1.CampaignCompleted))

	ended := do(t, "POST", path, o.key, map[string]any{"contacts": []any{map[string]any{"to_number": "+12125580106"}}})
	g.Expect(ended.status).To(Equal(http.StatusConflict))
	g.Expect(detail(t, ended)["error_code"]).To(Equal("campaign_ended"))
}
