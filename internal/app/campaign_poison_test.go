package app_test

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
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/controllers"
	"github.com/switchboard-dev/switchboard/internal/history"
)

// manyVariables is n variables, customer_name among them.
func manyVariables(n int) map[string]any {
	vars := map[string]any{"customer_name": "Ada"}
	for i := len(vars); i < n; i++ {
		vars[fmt.Sprintf("v%03d", i)] = "x"
	}
	return vars
}

// amplifyingCSV is 100 column names of 1,000 characters over 1,000 rows
// of empty fields: 213 KB that took 216 MB of the operator's memory.
func amplifyingCSV() string {
	var b strings.Builder
	b.WriteString("to_number")
	for i := range 100 {
		fmt.Fprintf(&b, ",%03d%s", i, strings.Repeat("x", 997))
	}
	b.WriteString("\n")
	for i := range 1000 {
		fmt.Fprintf(&b, "+1212555%04d%s\n", i, strings.Repeat(",", 100))
	}
	return b.String()
}

func TestCampaignUploadsRefusePoisonContacts(t *testing.T) {
	g := NewWithT(t)
	o := newOrg(t) // its agent requires customer_name

	r := uploadCampaign(t, o, amplifyingCSV(), nil, nil)
	g.Expect(r.status).To(Equal(http.StatusUnprocessableEntity), string(r.raw))
	item := r.body["detail"].([]any)[0].(map[string]any)
	g.Expect(item["loc"]).To(Equal([]any{"body", "contacts", "line 1"}))
	g.Expect(item["msg"]).To(HavePrefix("line 1: the header row is longer than 65536 bytes"))

	// The message of POST /v1/calls for 301 variables...
	call := do(t, "POST", "/v1/calls", o.key, map[string]any{"agent_id": o.agentID, "to_number": "+12125550100",
		"variables": manyVariables(301)})
	g.Expect(call.status).To(Equal(http.StatusUnprocessableEntity), string(call.raw))
	callMsg := call.body["detail"].([]any)[0].(map[string]any)["msg"].(string)
	g.Expect(callMsg).To(Equal("Variables should have at most 100 entries, not 301"))
	// ... is a campaign's, on create and on adding contacts.
	contacts := func(vars map[string]any) map[string]any {
		return map[string]any{"agent_id": o.agentID, "calling_window": map[string]any{"start": "00:00", "end": "24:00"},
			"contacts": []any{map[string]any{"to_number": "+12125550101", "variables": vars}}}
	}
	r = do(t, "POST", "/v1/campaigns", o.key, contacts(manyVariables(301)))
	g.Expect(r.status).To(Equal(http.StatusUnprocessableEntity), string(r.raw))
	g.Expect(r.body["detail"]).To(ConsistOf(And(HaveKeyWithValue("type", "too_long"),
		HaveKeyWithValue("loc", []any{"body", "contacts", 0.0, "variables"}),
		HaveKeyWithValue("msg", "contact 0: "+callMsg))))
	r = do(t, "POST", "/v1/campaigns", o.key, contacts(manyVariables(1)))
	g.Expect(r.status).To(Equal(http.StatusCreated), string(r.raw))
	id := r.body["campaign_id"].(string)
	r = do(t, "POST", "/v1/campaigns/"+id+"/contacts", o.key, contacts(manyVariables(301)))
	g.Expect(r.status).To(Equal(http.StatusUnprocessableEntity), string(r.raw))
	g.Expect(r.body["detail"]).To(ConsistOf(HaveKeyWithValue("msg", "contact 0: "+callMsg)))

	// A CSV without the column of a required variable: one problem, at
	// upload, not a missing_variables outcome per contact.
	r = uploadCampaign(t, o, "to_number,first_name\n+12125550102,Ada\n+12125550103,Grace\n", nil, nil)
	g.Expect(r.status).To(Equal(http.StatusUnprocessableEntity), string(r.raw))
	g.Expect(r.body["detail"]).To(ConsistOf(And(HaveKeyWithValue("type", "missing_variables"),
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
	o := newOrg(t)
	vars := []byte(`{"customer_name":"Ada"`)
	for i := range 100 {
		vars = fmt.Appendf(vars, `,"v%03d":"x"`, i)
	}
	vars = append(vars, '}')
	poison := history.Contact{Seq: 0, ToNumber: "+12125550110", Zones: []string{"America/New_York"}, Variables: vars,
		DueAt: time.Now()}
	fine := history.Contact{Seq: 1, ToNumber: "+12125550111", Zones: []string{"America/New_York"},
		Variables: []byte(`{"customer_name":"Grace"}`), DueAt: time.Now()}
	_, err := historyStore.AddContacts(ctx, o.ns, "poisoned", []history.Contact{poison, fine}, time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(k8s.Create(ctx, &switchboardv1.Campaign{ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: "poisoned"},
		Spec: campaignSpec(o.agentID)})).To(Succeed())

	g.Eventually(func() switchboardv1.CampaignState { return getCampaign(t, o.ns, "poisoned").Status.State },
		20*time.Second, 100*time.Millisecond).Should(Equal(switchboardv1.CampaignCompleted))
	g.Expect(getCampaign(t, o.ns, "poisoned").Status.Outcomes).To(Equal(map[string]int64{"call_invalid": 1, "answered": 1}))
}

// A Campaign applied with kubectl naming an agent the organization does
// not have is Ready=False with the reason and a Warning Event; with the
// agent there but inactive, Ready=False for that; Ready once it can call.
func TestKubectlCampaignWithoutItsAgent(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	o := newOrg(t)
	const missing = "0b0b0b0b-1111-4222-8333-444455556666"
	c := &switchboardv1.Campaign{ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: "orphan"},
		Spec: switchboardv1.CampaignSpec{AgentID: missing,
			CallingWindow: switchboardv1.CallingWindow{Start: "00:00", End: "24:00"},
			Contacts: []switchboardv1.CampaignContact{{ToNumber: "+12125550120",
				Variables: jsonObject(`{"customer_name":"Ada"}`)}}}}
	g.Expect(k8s.Create(ctx, c)).To(Succeed())

	ready := func() *metav1.Condition {
		return apimeta.FindStatusCondition(getCampaign(t, o.ns, "orphan").Status.Conditions, switchboardv1.ReadyCondition)
	}
	g.Eventually(ready, 20*time.Second, 100*time.Millisecond).Should(And(Not(BeNil()),
		HaveField("Status", metav1.ConditionFalse), HaveField("Reason", controllers.ReasonAgentNotFound),
		HaveField("Message", ContainSubstring("No agent "+missing+" in this organization."))))
	g.Eventually(func() []string {
		var evs eventsv1.EventList
		g.Expect(k8s.List(ctx, &evs, client.InNamespace(o.ns))).To(Succeed())
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
	agent := createAgent(t, o.ns, "found", func(s *switchboardv1.AgentSpec) { s.ID = missing; s.Active = &inactive })
	g.Eventually(ready, 20*time.Second, 100*time.Millisecond).Should(And(
		HaveField("Status", metav1.ConditionFalse), HaveField("Reason", controllers.ReasonAgentInactive)))
	before := agent.DeepCopy()
	agent.Spec.Active = nil
	g.Expect(k8s.Patch(ctx, agent, client.MergeFrom(before))).To(Succeed())
	g.Eventually(ready, 20*time.Second, 100*time.Millisecond).Should(HaveField("Status", metav1.ConditionTrue))
}
