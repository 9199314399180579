package campaigns_test

// Contacts that cannot be called are refused at upload, in the words of
// POST /v1/calls, and those the apiserver refuses later end at once:
// a file shaped to grow in memory, a contact of 301 variables, a CSV
// without the column of a variable the agent requires, a contact stored
// before those checks whose Call is invalid, and a Campaign applied with
// kubectl that names an agent the organization does not have.

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/controllers"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
	"github.com/switchboard-dev/switchboard/internal/history"
)

func TestCampaignUploadsRefusePoisonContacts(t *testing.T) {
	g := NewWithT(t)
	o := NewOrg(t) // its agent requires customer_name

	r := UploadCampaign(t, o, AmplifyingCSV(), nil, nil)
	g.Expect(r.Status).To(Equal(http.StatusUnprocessableEntity), string(r.Raw))
	item := r.Body["detail"].([]any)[0].(map[string]any)
	g.Expect(item["loc"]).To(Equal([]any{"body", "contacts", "line 1"}))
	g.Expect(item["msg"]).To(HavePrefix("line 1: the header row is longer than 65536 bytes"))

	// The message of POST /v1/calls for 301 variables...
	call := Do(t, "POST", "/v1/calls", o.Key, map[string]any{"agent_id": o.AgentID, "to_number": "+12125550100",
		"variables": ManyVariables(301)})
	g.Expect(call.Status).To(Equal(http.StatusUnprocessableEntity), string(call.Raw))
	callMsg := call.Body["detail"].([]any)[0].(map[string]any)["msg"].(string)
	g.Expect(callMsg).To(Equal("Variables should have at most 100 entries, not 301"))
	// ... is a campaign's, on create and on adding contacts.
	contacts := func(vars map[string]any) map[string]any {
		return map[string]any{"agent_id": o.AgentID, "calling_window": map[string]any{"start": "00:00", "end": "24:00"},
			"contacts": []any{map[string]any{"to_number": "+12125550101", "variables": vars}}}
	}
	r = Do(t, "POST", "/v1/campaigns", o.Key, contacts(ManyVariables(301)))
	g.Expect(r.Status).To(Equal(http.StatusUnprocessableEntity), string(r.Raw))
	g.Expect(r.Body["detail"]).To(ConsistOf(And(HaveKeyWithValue("type", "too_long"),
		HaveKeyWithValue("loc", []any{"body", "contacts", 0.0, "variables"}),
		HaveKeyWithValue("msg", "contact 0: "+callMsg))))
	r = Do(t, "POST", "/v1/campaigns", o.Key, contacts(ManyVariables(1)))
	g.Expect(r.Status).To(Equal(http.StatusCreated), string(r.Raw))
	id := r.Body["campaign_id"].(string)
	r = Do(t, "POST", "/v1/campaigns/"+id+"/contacts", o.Key, contacts(ManyVariables(301)))
	g.Expect(r.Status).To(Equal(http.StatusUnprocessableEntity), string(r.Raw))
	g.Expect(r.Body["detail"]).To(ConsistOf(HaveKeyWithValue("msg", "contact 0: "+callMsg)))

	// A CSV without the column of a required variable: one problem, at
	// upload, not a missing_variables outcome per contact.
	r = UploadCampaign(t, o, "to_number,first_name\n+12125550102,Ada\n+12125550103,Grace\n", nil, nil)
	g.Expect(r.Status).To(Equal(http.StatusUnprocessableEntity), string(r.Raw))
	g.Expect(r.Body["detail"]).To(ConsistOf(And(HaveKeyWithValue("type", "missing_variables"),
		HaveKeyWithValue("loc", []any{"body", "contacts", "variables"}),
		HaveKeyWithValue("msg", HavePrefix("the contacts: The agent requires variables that were not provided: [customer_name].")))))
}

// A contact whose Call the apiserver refuses as invalid (one stored before
// contacts were checked at upload: 101 variables, over the Call's bound)
// ends with outcome call_invalid at once, and its campaign completes; it
// used to be retried every 30 seconds for ever.
func TestCampaignInvalidCallIsFinal(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	o := NewOrg(t)
	vars := []byte(`{"customer_name":"Ada"`)
	for i := range 100 {
		vars = fmt.Appendf(vars, `,"v%03d":"x"`, i)
	}
	vars = append(vars, '}')
	poison := history.Contact{Seq: 0, ToNumber: "+12125550110", Zones: []string{"America/New_York"}, Variables: vars,
		DueAt: time.Now()}
	fine := history.Contact{Seq: 1, ToNumber: "+12125550111", Zones: []string{"America/New_York"},
		Variables: []byte(`{"customer_name":"Grace"}`), DueAt: time.Now()}
	_, err := HistoryStore.AddContacts(ctx, o.Ns, "poisoned", []history.Contact{poison, fine}, time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(K8s.Create(ctx, &switchboardv1.Campaign{ObjectMeta: metav1.ObjectMeta{Namespace: o.Ns, Name: "poisoned"},
		Spec: CampaignSpec(o.AgentID)})).To(Succeed())

	g.Eventually(func() switchboardv1.CampaignState { return GetCampaign(t, o.Ns, "poisoned").Status.State },
		20*time.Second, 100*time.Millisecond).Should(Equal(switchboardv1.CampaignCompleted))
	g.Expect(GetCampaign(t, o.Ns, "poisoned").Status.Outcomes).To(Equal(map[string]int64{"call_invalid": 1, "answered": 1}))
}

// A Campaign applied with kubectl naming an agent the organization does
// not have is Ready=False with the reason and a Warning Event; with the
// agent there but inactive, Ready=False for that; Ready once it can call.
func TestKubectlCampaignWithoutItsAgent(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	o := NewOrg(t)
	const missing = "0b0b0b0b-1111-4222-8333-444455556666"
	c := &switchboardv1.Campaign{ObjectMeta: metav1.ObjectMeta{Namespace: o.Ns, Name: "orphan"},
		Spec: switchboardv1.CampaignSpec{AgentID: missing,
			CallingWindow: switchboardv1.CallingWindow{Start: "00:00", End: "24:00"},
			Contacts: []switchboardv1.CampaignContact{{ToNumber: "+12125550120",
				Variables: JSONObject(`{"customer_name":"Ada"}`)}}}}
	g.Expect(K8s.Create(ctx, c)).To(Succeed())

	ready := func() *metav1.Condition {
		return apimeta.FindStatusCondition(GetCampaign(t, o.Ns, "orphan").Status.Conditions, switchboardv1.ReadyCondition)
	}
	g.Eventually(ready, 20*time.Second, 100*time.Millisecond).Should(And(Not(BeNil()),
		HaveField("Status", metav1.ConditionFalse), HaveField("Reason", controllers.ReasonAgentNotFound),
		HaveField("Message", ContainSubstring("No agent "+missing+" in this organization."))))
	g.Eventually(func() []string {
		var evs eventsv1.EventList
		g.Expect(K8s.List(ctx, &evs, client.InNamespace(o.Ns))).To(Succeed())
		var got []string
		for _, e := range evs.Items {
			if e.Regarding.Name == "orphan" && e.Type == "Warning" {
				got = append(got, e.Reason+": "+e.Note)
			}
		}
		return got
	}, 10*time.Second, 100*time.Millisecond).Should(ConsistOf(HavePrefix(controllers.ReasonAgentNotFound + ": No agent " + missing)))

	// An agent that cannot call is no better: Ready=False, saying why.
	inactive := false
	agent := CreateAgent(t, o.Ns, "found", func(s *switchboardv1.AgentSpec) { s.ID = missing; s.Active = &inactive })
	g.Eventually(ready, 20*time.Second, 100*time.Millisecond).Should(And(
		HaveField("Status", metav1.ConditionFalse), HaveField("Reason", controllers.ReasonAgentInactive)))
	before := agent.DeepCopy()
	agent.Spec.Active = nil
	g.Expect(K8s.Patch(ctx, agent, client.MergeFrom(before))).To(Succeed())
	g.Eventually(ready, 20*time.Second, 100*time.Millisecond).Should(HaveField("Status", metav1.ConditionTrue))
}
