package campaigns_test

// The campaigns REST API as a customer backend uses it: a CSV upload that
// runs to its end, its calls listed, the bad inputs refused in the spec's
// shapes, an Idempotency-Key, pause, resume, an edit of pacing, cancel.

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
)

func TestCampaignFromCSV(t *testing.T) {
	g := NewWithT(t)
	o := NewOrg(t)
	csv := "to_number,timezone,customer_name\n" +
		"+12125550100,,Ada\n" +
		"+12125550101,America/Chicago,Grace\n" +
		"+12125550100,,Ada again\n" + // a duplicate
		"+13105550001,,Busy Bee\n" +
		"(212) 555-0123,,Without a country code\n"
	r := UploadCampaign(t, o, csv, map[string]string{"name": "Reminders", "calling_window": OpenAllDay,
		"pacing": `{"calls_per_second": 50, "max_concurrent": 5}`,
		"redial": `{"busy": {"attempts": 2, "min_gap_seconds": 0}}`}, nil)
	g.Expect(r.Status).To(Equal(http.StatusCreated), string(r.Raw))
	g.Expect(r.Body).To(HaveKeyWithValue("contacts", BeNumerically("==", 4)))
	g.Expect(r.Body).To(HaveKeyWithValue("duplicates", BeNumerically("==", 1)))
	g.Expect(r.Body).To(HaveKeyWithValue("status", "scheduled"))
	id := r.Body["campaign_id"].(string)

	var got map[string]any
	g.Eventually(func() any {
		got = Do(t, "GET", "/v1/campaigns/"+id, o.Key, nil).Body
		return got["status"]
	}, time.Minute, 100*time.Millisecond).Should(Equal("completed"))
	g.Expect(got["contacts"]).To(HaveKeyWithValue("done", BeNumerically("==", 4)))
	g.Expect(got["contacts"]).To(HaveKeyWithValue("answered", BeNumerically("==", 3)))
	g.Expect(got["outcomes"]).To(Equal(map[string]any{"answered": 3.0, "busy": 1.0}))

	list := Do(t, "GET", "/v1/campaigns/"+id+"/calls?limit=100", o.Key, nil)
	g.Expect(list.Status).To(Equal(http.StatusOK))
	calls := list.Body["data"].([]any)
	g.Expect(calls).To(HaveLen(5), "four contacts, the busy one twice")
	for _, c := range calls {
		call := c.(map[string]any)
		g.Expect(call["source"]).To(Equal("campaign"))
		g.Expect(call["metadata"]).To(HaveKeyWithValue("campaign_id", id))
	}
	busy := Do(t, "GET", "/v1/campaigns/"+id+"/calls?disposition=busy", o.Key, nil)
	g.Expect(busy.Body["data"]).To(HaveLen(2))
	g.Expect(Do(t, "GET", "/v1/campaigns", o.Key, nil).Body["data"]).To(HaveLen(1))
	g.Expect(Do(t, "GET", "/v1/campaigns/campaign-nope/calls", o.Key, nil).Status).To(Equal(http.StatusNotFound))
}

func TestCampaignBadInput(t *testing.T) {
	g := NewWithT(t)
	o := NewOrg(t)
	var rows strings.Builder
	rows.WriteString("to_number,customer_name\n")
	for i := range 10 {
		number := fmt.Sprintf("+1212555%04d", 100+i)
		if i == 5 {
			number = "+1 555 not a number" // line 7: the header is line 1
		}
		rows.WriteString(number + ",Ada\n")
	}
	r := UploadCampaign(t, o, rows.String(), nil, nil)
	g.Expect(r.Status).To(Equal(http.StatusUnprocessableEntity), string(r.Raw))
	item := r.Body["detail"].([]any)[0].(map[string]any)
	g.Expect(item["loc"]).To(Equal([]any{"body", "contacts", "line 7", "to_number"}))
	g.Expect(item["msg"]).To(HavePrefix("line 7: "))

	r = UploadCampaign(t, o, "phone,customer_name\n+12125550100,Ada\n", nil, nil)
	g.Expect(r.Status).To(Equal(http.StatusUnprocessableEntity))
	g.Expect(string(r.Raw)).To(ContainSubstring("no to_number column"))

	r = UploadCampaign(t, o, "to_number,timezone\n+12125550100,Mars/Olympus\n", nil, nil)
	g.Expect(r.Status).To(Equal(http.StatusUnprocessableEntity))
	g.Expect(string(r.Raw)).To(ContainSubstring(`unknown time zone \"Mars/Olympus\"`))

	big := strings.Repeat("+12125550100,Ada\n", 50<<20/17)
	r = UploadCampaign(t, o, "to_number,customer_name\n"+big, nil, nil)
	g.Expect(r.Status).To(Equal(http.StatusRequestEntityTooLarge))
	g.Expect(r.Body["detail"]).To(ContainSubstring("limit"))

	inline := make([]map[string]any, 1001)
	for i := range inline {
		inline[i] = map[string]any{"to_number": fmt.Sprintf("+1212555%04d", i)}
	}
	r = Do(t, "POST", "/v1/campaigns", o.Key, map[string]any{"agent_id": o.AgentID, "contacts": inline})
	g.Expect(r.Status).To(Equal(http.StatusUnprocessableEntity))
	g.Expect(string(r.Raw)).To(ContainSubstring("as a CSV file"))

	r = Do(t, "POST", "/v1/campaigns", o.Key, map[string]any{"agent_id": "00000000-0000-0000-0000-000000000000",
		"contacts": []any{map[string]any{"to_number": "+12125550100"}}})
	g.Expect(r.Status).To(Equal(http.StatusNotFound))
	g.Expect(Detail(t, r)["error_code"]).To(Equal("agent_not_found"))

	r = Do(t, "POST", "/v1/campaigns", o.Key, map[string]any{"agent_id": o.AgentID,
		"contacts":       []any{map[string]any{"to_number": "+12125550100"}},
		"calling_window": map[string]any{"start": "21:00", "end": "08:00"}, "pacing": map[string]any{"max_concurrent": 0}})
	g.Expect(r.Status).To(Equal(http.StatusUnprocessableEntity))
	g.Expect(r.Body["detail"]).To(HaveLen(2))

	var campaigns switchboardv1.CampaignList
	g.Expect(K8s.List(context.Background(), &campaigns, client.InNamespace(o.Ns))).To(Succeed())
	g.Expect(campaigns.Items).To(BeEmpty(), "a refused request created a campaign")
}

func TestCampaignIdempotentCreate(t *testing.T) {
	g := NewWithT(t)
	o := NewOrg(t)
	key := http.Header{"Idempotency-Key": {"import-" + RandHex(4)}}
	body := fmt.Sprintf(`{"agent_id":%q,"contacts":[{"to_number":"+12125550100","variables":{"customer_name":"Ada"}}],
		"calling_window":`+OpenAllDay+`}`, o.AgentID)
	first := SendWithHeader(t, Operator.BaseURL, "POST", "/v1/campaigns", "Bearer "+o.Key, body, key)
	g.Expect(first.Status).To(Equal(http.StatusCreated), string(first.Raw))
	second := SendWithHeader(t, Operator.BaseURL, "POST", "/v1/campaigns", "Bearer "+o.Key, body, key)
	g.Expect(second.Status).To(Equal(http.StatusCreated))
	g.Expect(second.Header.Get("Idempotent-Replayed")).To(Equal("true"))
	g.Expect(second.Body["campaign_id"]).To(Equal(first.Body["campaign_id"]))
	other := SendWithHeader(t, Operator.BaseURL, "POST", "/v1/campaigns", "Bearer "+o.Key,
		strings.Replace(body, "0100", "0101", 1), key)
	g.Expect(other.Status).To(Equal(http.StatusUnprocessableEntity))
	g.Expect(Detail(t, other)["error_code"]).To(Equal("idempotency_key_reused"))
	var campaigns switchboardv1.CampaignList
	g.Expect(K8s.List(context.Background(), &campaigns, client.InNamespace(o.Ns))).To(Succeed())
	g.Expect(campaigns.Items).To(HaveLen(1))
}

// An edit of pacing takes effect, a pause halts new dials within a
// second, resume goes on, and cancel skips every contact not yet dialed.
func TestCampaignPauseEditCancel(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	o := NewOrg(t)
	contacts := make([]map[string]any, 200)
	for i := range contacts {
		contacts[i] = map[string]any{"to_number": fmt.Sprintf("+1212556%04d", 100+i), "variables": map[string]any{"customer_name": "Ada"}}
	}
	r := Do(t, "POST", "/v1/campaigns", o.Key, map[string]any{"agent_id": o.AgentID, "contacts": contacts,
		"calling_window": map[string]any{"start": "00:00", "end": "24:00"},
		"pacing":         map[string]any{"calls_per_minute": 1, "max_concurrent": 5}})
	g.Expect(r.Status).To(Equal(http.StatusCreated), string(r.Raw))
	id := r.Body["campaign_id"].(string)
	placed := func() int { return len(CampaignCalls(t, o.Ns, id)) }

	// One call a minute: the first goes out, the next would take a minute.
	g.Eventually(placed, 30*time.Second, 100*time.Millisecond).Should(Equal(1))
	c := GetCampaign(t, o.Ns, id)
	edited := c.DeepCopy()
	edited.Spec.Pacing.CallsPerMinute = 600
	g.Expect(K8s.Patch(ctx, edited, client.MergeFrom(c))).To(Succeed())
	g.Eventually(placed, 30*time.Second, 100*time.Millisecond).Should(BeNumerically(">=", 10))

	pausedAt := time.Now()
	r = Do(t, "POST", "/v1/campaigns/"+id+"/pause", o.Key, nil)
	g.Expect(r.Status).To(Equal(http.StatusOK))
	g.Expect(r.Body["status"]).To(Equal("paused"))
	// Read after write: the GET and the list at once say paused, whatever
	// the informer cache holds yet.
	g.Expect(Do(t, "GET", "/v1/campaigns/"+id, o.Key, nil).Body["status"]).To(Equal("paused"))
	g.Expect(Do(t, "GET", "/v1/campaigns", o.Key, nil).Body["data"]).To(ConsistOf(HaveKeyWithValue("status", "paused")))
	g.Eventually(func() switchboardv1.CampaignState { return GetCampaign(t, o.Ns, id).Status.State },
		10*time.Second, 100*time.Millisecond).Should(Equal(switchboardv1.CampaignPaused))
	before := placed()
	g.Consistently(placed, 2*time.Second, 200*time.Millisecond).Should(Equal(before))
	for _, call := range CampaignCalls(t, o.Ns, id) {
		accepted, err := time.Parse(time.RFC3339Nano, call.Annotations[switchboardv1.AcceptedAtAnnotation])
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(accepted).To(BeTemporally("<", pausedAt.Add(time.Second)), "%s was placed %v after the pause",
			call.Name, accepted.Sub(pausedAt))
	}

	g.Expect(Do(t, "POST", "/v1/campaigns/"+id+"/resume", o.Key, nil).Body["status"]).To(Equal("running"))
	g.Eventually(placed, 30*time.Second, 100*time.Millisecond).Should(BeNumerically(">", before))

	r = Do(t, "POST", "/v1/campaigns/"+id+"/cancel", o.Key, nil)
	g.Expect(r.Body["status"]).To(Equal("canceled"))
	g.Expect(Do(t, "GET", "/v1/campaigns/"+id, o.Key, nil).Body["status"]).To(Equal("canceled"))
	var final *switchboardv1.Campaign
	g.Eventually(func() int64 {
		final = GetCampaign(t, o.Ns, id)
		return final.Status.Done
	}, 30*time.Second, 200*time.Millisecond).Should(Equal(int64(len(contacts))))
	g.Expect(final.Status.State).To(Equal(switchboardv1.CampaignCanceled))
	calls := placed()
	g.Expect(final.Status.Outcomes["canceled"]).To(Equal(int64(len(contacts) - calls)))
	g.Expect(Do(t, "POST", "/v1/campaigns/"+id+"/resume", o.Key, nil).Status).To(Equal(http.StatusConflict))
	g.Consistently(placed, time.Second, 200*time.Millisecond).Should(Equal(calls))
}

// campaign.started, campaign.paused and campaign.completed reach an
// endpoint subscribed to them, signed, carrying the campaign object.
func TestCampaignEvents(t *testing.T) {
	g := NewWithT(t)
	o := NewOrg(t)
	rc := NewReceiver(t, nil)
	_, secret := ApplyEndpoint(t, o.Ns, rc.URL(), func(s *switchboardv1.WebhookEndpointSpec) {
		s.Events = []switchboardv1.WebhookEventType{"campaign.started", "campaign.paused", "campaign.completed"}
	})
	rc.Trust(secret)
	r := Do(t, "POST", "/v1/campaigns", o.Key, map[string]any{"agent_id": o.AgentID,
		"contacts": []any{map[string]any{"to_number": "+12125570100", "variables": map[string]any{"customer_name": "Ada"}},
			map[string]any{"to_number": "+12125570101", "variables": map[string]any{"customer_name": "Ada"}}},
		"calling_window": map[string]any{"start": "00:00", "end": "24:00"},
		"pacing":         map[string]any{"calls_per_minute": 1}})
	g.Expect(r.Status).To(Equal(http.StatusCreated), string(r.Raw))
	id := r.Body["campaign_id"].(string)
	g.Eventually(func() []string { return Events(rc.Deliveries()) }, 20*time.Second, 100*time.Millisecond).
		Should(Equal([]string{"campaign.started"}))
	g.Expect(Do(t, "POST", "/v1/campaigns/"+id+"/pause", o.Key, nil).Status).To(Equal(http.StatusOK))
	g.Eventually(func() []string { return Events(rc.Deliveries()) }, 20*time.Second, 100*time.Millisecond).
		Should(Equal([]string{"campaign.started", "campaign.paused"}))
	g.Expect(Do(t, "POST", "/v1/campaigns/"+id+"/cancel", o.Key, nil).Status).To(Equal(http.StatusOK))
	g.Eventually(func() []string { return Events(rc.Deliveries()) }, 30*time.Second, 100*time.Millisecond).
		Should(Equal([]string{"campaign.started", "campaign.paused", "campaign.completed"}))
	for _, d := range rc.Deliveries() {
		ExpectSigned(g, d)
		campaign, _ := d.Envelope["campaign"].(map[string]any)
		g.Expect(campaign).To(HaveKeyWithValue("campaign_id", id))
	}
	last := rc.Deliveries()[2].Envelope["campaign"].(map[string]any)
	g.Expect(last["status"]).To(Equal("canceled"))
}
