package campaigns_test

// Contacts added over REST to a running campaign: JSON and CSV, the same
// checks as on create, an Idempotency-Key, every new contact dialed and
// none twice, and a clear 409 once the campaign has ended.

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
)

func TestCampaignAddContacts(t *testing.T) {
	g := NewWithT(t)
	o := NewOrg(t)
	ada := map[string]any{"customer_name": "Ada"}
	// One call a minute: the first goes out and the campaign is running
	// with the second waiting when the contacts are added.
	r := Do(t, "POST", "/v1/campaigns", o.Key, map[string]any{"agent_id": o.AgentID,
		"contacts": []any{map[string]any{"to_number": "+12125580100", "variables": ada},
			map[string]any{"to_number": "+12125580101", "variables": ada}},
		"calling_window": map[string]any{"start": "00:00", "end": "24:00"},
		"pacing":         map[string]any{"calls_per_minute": 1, "max_concurrent": 5}})
	g.Expect(r.Status).To(Equal(http.StatusCreated), string(r.Raw))
	id := r.Body["campaign_id"].(string)
	path := "/v1/campaigns/" + id + "/contacts"

	r = Do(t, "POST", path, o.Key, map[string]any{"contacts": []any{
		map[string]any{"to_number": "+12125580102", "variables": ada},
		map[string]any{"to_number": "+12125580102"}, // repeated in the list
		map[string]any{"to_number": "+12125580100"}, // in the campaign already
	}})
	g.Expect(r.Status).To(Equal(http.StatusOK), string(r.Raw))
	g.Expect(r.Body).To(HaveKeyWithValue("added", BeNumerically("==", 1)))
	g.Expect(r.Body).To(HaveKeyWithValue("duplicates", BeNumerically("==", 2)))
	g.Expect(r.Body).To(HaveKeyWithValue("campaign_id", id))

	key := http.Header{"Idempotency-Key": {"more-" + RandHex(4)}}
	csv := "to_number,customer_name\n+12125580103,Grace\n+12125580104,Alan\n"
	form, contentType := ContactsForm(t, csv)
	first := PostContactsForm(t, o, id, form, contentType, key)
	g.Expect(first.Status).To(Equal(http.StatusOK), "%s", first.Raw)
	g.Expect(first.Body).To(HaveKeyWithValue("added", BeNumerically("==", 2)))
	again := PostContactsForm(t, o, id, form, contentType, key) // a retry sends the same bytes
	g.Expect(again.Status).To(Equal(http.StatusOK))
	g.Expect(again.Raw).To(Equal(first.Raw))
	g.Expect(again.Header.Get("Idempotent-Replayed")).To(Equal("true"))

	// The same checks as on create, naming the line; nothing is added.
	bad := PostContactsCSV(t, o, id, "to_number\n+12125580105\nnot a number\n", nil)
	g.Expect(bad.Status).To(Equal(http.StatusUnprocessableEntity), string(bad.Raw))
	g.Expect(bad.Body["detail"].([]any)[0].(map[string]any)["loc"]).To(Equal([]any{"body", "contacts", "line 3", "to_number"}))
	g.Expect(PostContactsCSV(t, o, id, "phone\n+12125580105\n", nil).Status).To(Equal(http.StatusUnprocessableEntity))
	g.Expect(Do(t, "POST", path, o.Key, map[string]any{}).Status).To(Equal(http.StatusUnprocessableEntity))
	g.Expect(Do(t, "POST", "/v1/campaigns/campaign-none/contacts", o.Key,
		map[string]any{"contacts": []any{map[string]any{"to_number": "+12125580105"}}}).Status).To(Equal(http.StatusNotFound))

	// Faster now: every contact is dialed once, and the campaign ends.
	c := GetCampaign(t, o.Ns, id)
	edited := c.DeepCopy()
	edited.Spec.Pacing.CallsPerMinute = 600
	g.Expect(K8s.Patch(context.Background(), edited, client.MergeFrom(c))).To(Succeed())
	g.Eventually(func() any { return Do(t, "GET", "/v1/campaigns/"+id, o.Key, nil).Body["status"] },
		time.Minute, 100*time.Millisecond).Should(Equal("completed"))
	g.Expect(GetCampaign(t, o.Ns, id).Status.Outcomes).To(Equal(map[string]int64{"answered": 5}))
	dialed := map[string]int{}
	for _, call := range CampaignCalls(t, o.Ns, id) {
		dialed[call.Spec.ToNumber]++
	}
	want := map[string]int{}
	for i := range 5 {
		want[fmt.Sprintf("+1212558%04d", 100+i)] = 1
	}
	g.Expect(dialed).To(Equal(want), "every contact dialed once")
	final := GetCampaign(t, o.Ns, id)
	g.Expect(final.Status.Total).To(Equal(int64(5)))
	g.Expect(final.Status.State).To(Equal(switchboardv1.CampaignCompleted))

	ended := Do(t, "POST", path, o.Key, map[string]any{"contacts": []any{map[string]any{"to_number": "+12125580106"}}})
	g.Expect(ended.Status).To(Equal(http.StatusConflict))
	g.Expect(Detail(t, ended)["error_code"]).To(Equal("campaign_ended"))
}
