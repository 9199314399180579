package app_test

// Error responses of the REST API (the OpenAPI document's error responses), as a
// customer backend sees them: status codes, body shapes, and whether a call
// record was left behind.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// callIDPattern is the form of every call_id the API issues.
const callIDPattern = `^call_[0-9a-f]{32}$`

// expectStatusJSON asserts the status code and that the body is JSON.
func expectStatusJSON(t *testing.T, r response, status int) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(r.status).To(Equal(status), "status of a response with body %s", r.raw)
	g.Expect(r.header.Get("Content-Type")).To(Equal("application/json"),
		"Content-Type of a %d response with body %s", r.status, r.raw)
}

// expectStringDetail asserts a {"detail": "<text>"} body and returns the text.
func expectStringDetail(t *testing.T, r response, status int) string {
	t.Helper()
	expectStatusJSON(t, r, status)
	g := NewWithT(t)
	g.Expect(r.body).To(HaveLen(1), "body %s: want only the detail key", r.raw)
	msg, ok := r.body["detail"].(string)
	g.Expect(ok).To(BeTrue(), "detail is not a string: %s", r.raw)
	g.Expect(msg).NotTo(BeEmpty(), "detail is empty: %s", r.raw)
	return msg
}

// expectErrorDetail asserts a create-call error body: detail is an object
// with error, error_code, call_id, expected_from_number and
// missing_variables, as the error table in the README lists it. It returns the detail object.
func expectErrorDetail(t *testing.T, r response, status int, code string) map[string]any {
	t.Helper()
	expectStatusJSON(t, r, status)
	g := NewWithT(t)
	g.Expect(r.body).To(HaveLen(1), "body %s: want only the detail key", r.raw)
	d := detail(t, r)
	g.Expect(d).To(HaveKeyWithValue("error_code", code), "body %s", r.raw)
	g.Expect(d["error"]).To(BeAssignableToTypeOf(""), "error is not a string: %s", r.raw)
	g.Expect(d["error"]).NotTo(BeEmpty(), "error is empty: %s", r.raw)
	for _, k := range []string{"call_id", "expected_from_number", "missing_variables"} {
		g.Expect(d).To(HaveKey(k), "body %s", r.raw)
	}
	g.Expect(d).To(HaveLen(5), "unexpected keys in detail: %s", r.raw)
	return d
}

// validationItem is what a test expects of one 422 validation-array item.
type validationItem struct {
	loc []any
	typ string
	// locPrefix: loc need only start with loc (json_invalid adds an offset).
	locPrefix bool
	// input, when not nil, is the expected input (as decoded JSON).
	input any
}

// expectValidation asserts a 422 whose detail is an array of validation
// items with loc, msg, type and input, matching want in order.
func expectValidation(t *testing.T, r response, want ...validationItem) []map[string]any {
	t.Helper()
	expectStatusJSON(t, r, http.StatusUnprocessableEntity)
	g := NewWithT(t)
	g.Expect(r.body).To(HaveLen(1), "body %s: want only the detail key", r.raw)
	arr, ok := r.body["detail"].([]any)
	g.Expect(ok).To(BeTrue(), "detail is not an array: %s", r.raw)
	g.Expect(arr).To(HaveLen(len(want)), "validation items of %s", r.raw)
	items := make([]map[string]any, len(arr))
	for i, v := range arr {
		item, ok := v.(map[string]any)
		g.Expect(ok).To(BeTrue(), "item %d is not an object: %s", i, r.raw)
		g.Expect(item).To(HaveKey("input"), "item %d of %s", i, r.raw)
		g.Expect(item["msg"]).To(BeAssignableToTypeOf(""), "item %d of %s: msg", i, r.raw)
		g.Expect(item["msg"]).NotTo(BeEmpty(), "item %d of %s: msg", i, r.raw)
		g.Expect(item["type"]).To(Equal(want[i].typ), "item %d of %s: type", i, r.raw)
		loc, ok := item["loc"].([]any)
		g.Expect(ok).To(BeTrue(), "item %d of %s: loc is not an array", i, r.raw)
		if want[i].locPrefix {
			g.Expect(len(loc)).To(BeNumerically(">=", len(want[i].loc)), "item %d of %s: loc", i, r.raw)
			g.Expect(loc[:len(want[i].loc)]).To(Equal(want[i].loc), "item %d of %s: loc", i, r.raw)
		} else {
			g.Expect(loc).To(Equal(want[i].loc), "item %d of %s: loc", i, r.raw)
		}
		if want[i].input != nil {
			g.Expect(item["input"]).To(Equal(want[i].input), "item %d of %s: input", i, r.raw)
		}
		items[i] = item
	}
	return items
}

// callBody is a valid create-call body for o, changed by mutate.
func (o *org) callBody(number string, mutate func(map[string]any)) map[string]any {
	body := map[string]any{"agent_id": o.agentID, "to_number": number,
		"variables": map[string]any{"customer_name": "Ada"}}
	if mutate != nil {
		mutate(body)
	}
	return body
}

// waitCallSettled waits until the reconciler has finished with the Call
// whose call_id is id (its Ready condition is set and it is final), so that
// what the API reports afterwards is the call's last word.
func waitCallSettled(t *testing.T, ns, id string) {
	t.Helper()
	NewWithT(t).Eventually(func() bool {
		var calls switchboardv1.CallList
		if err := k8s.List(context.Background(), &calls, client.InNamespace(ns)); err != nil {
			return false
		}
		for _, c := range calls.Items {
			if c.Status.CallID == id {
				ready := apimeta.FindStatusCondition(c.Status.Conditions, switchboardv1.ReadyCondition)
				return ready != nil && c.Status.Phase.Final()
			}
		}
		return false
	}, 10*time.Second, 20*time.Millisecond).Should(BeTrue(), "call %s never settled", id)
}

// expectFailedCall asserts that call_id id reads as a failed call that
// never went out once the reconciler is done with it.
func expectFailedCall(t *testing.T, o *org, id, toNumber string) {
	t.Helper()
	g := NewWithT(t)
	check := func(when string) {
		r := do(t, "GET", "/v1/calls/"+id, o.key, nil)
		expectStatusJSON(t, r, http.StatusOK)
		g.Expect(r.body).To(HaveKeyWithValue("call_id", id), when)
		g.Expect(r.body).To(HaveKeyWithValue("status", "failed"), "%s: %s", when, r.raw)
		g.Expect(r.body).To(HaveKeyWithValue("disposition", BeNil()), "%s: %s", when, r.raw)
		g.Expect(r.body).To(HaveKeyWithValue("to_number", toNumber), when)
		g.Expect(r.body).To(HaveKeyWithValue("agent_id", o.agentID), when)
		g.Expect(r.body).To(HaveKeyWithValue("recording_url", BeNil()), when)
		rec := do(t, "GET", "/v1/calls/"+id+"/recording", o.key, nil)
		expectStringDetail(t, rec, http.StatusNotFound)
	}
	// Whether it reads failed at once, right after the refusal, is
	// TestRefusedCallReadsFailedAtOnce's business: here, the final state.
	waitCallSettled(t, o.ns, id)
	check("once the reconciler is done")
}

func TestCreateCallAgentNotFound(t *testing.T) {
	o := newOrg(t)
	other := newOrg(t)
	tests := []struct{ name, agentID string }{
		{"random UUID", uuid.NewString()},
		{"agent of another organization", other.agentID},
		{"agent of another organization in upper case", strings.ToUpper(other.agentID)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			before, beforeOther := countCalls(t, o.ns), countCalls(t, other.ns)
			r := do(t, "POST", "/v1/calls", o.key, o.callBody("+14155551234", func(b map[string]any) {
				b["agent_id"] = tt.agentID
			}))
			d := expectErrorDetail(t, r, http.StatusNotFound, "agent_not_found")
			g.Expect(d["call_id"]).To(BeNil())
			g.Expect(d["expected_from_number"]).To(BeNil())
			g.Expect(d["missing_variables"]).To(BeNil())
			g.Expect(countCalls(t, o.ns)).To(Equal(before), "a refused call left a Call behind")
			g.Expect(countCalls(t, other.ns)).To(Equal(beforeOther), "a call was placed in the other organization")
		})
	}
}

func TestCreateCallAgentRefused(t *testing.T) {
	o := newOrg(t)
	tests := []struct {
		name   string
		mutate func(*switchboardv1.AgentSpec)
		body   func(map[string]any)
		code   string
	}{
		{"not outbound", func(s *switchboardv1.AgentSpec) { s.Outbound = new(false) }, nil, "agent_not_outbound"},
		{"inactive", func(s *switchboardv1.AgentSpec) { s.Active = new(false) }, nil, "agent_inactive"},
		{"inactive and not outbound", func(s *switchboardv1.AgentSpec) {
			s.Active, s.Outbound = new(false), new(false)
		}, nil, "agent_not_outbound"},
		// The agent checks come before the request checks (spec table order).
		{"inactive, with missing variables and a wrong from_number", func(s *switchboardv1.AgentSpec) {
			s.Active = new(false)
		}, func(b map[string]any) {
			delete(b, "variables")
			b["from_number"] = "+14155550111"
		}, "agent_inactive"},
		{"inactive, explicitly outbound", func(s *switchboardv1.AgentSpec) {
			s.Active, s.Outbound = new(false), new(true)
		}, nil, "agent_inactive"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			agent := createAgent(t, o.ns, fmt.Sprintf("refused-%d", i), tt.mutate)
			before := countCalls(t, o.ns)
			body := o.callBody("+14155551234", tt.body)
			body["agent_id"] = agent.ResolvedID()
			r := do(t, "POST", "/v1/calls", o.key, body)
			d := expectErrorDetail(t, r, http.StatusBadRequest, tt.code)
			g.Expect(d["call_id"]).To(BeNil())
			g.Expect(d["expected_from_number"]).To(BeNil())
			g.Expect(d["missing_variables"]).To(BeNil())
			g.Expect(countCalls(t, o.ns)).To(Equal(before), "a refused call left a Call behind")
		})
	}
}

func TestCreateCallMissingVariables(t *testing.T) {
	o := newOrg(t)
	agent := createAgent(t, o.ns, "needs-three", func(s *switchboardv1.AgentSpec) {
		s.RequiredVariables = []string{"customer_name", "appointment_time", "clinic"}
	})
	tests := []struct {
		name    string
		mutate  func(map[string]any)
		missing []any
	}{
		{"one of three sent", func(b map[string]any) {
			b["variables"] = map[string]any{"customer_name": "Ada"}
		}, []any{"appointment_time", "clinic"}},
		{"two of three sent, plus an extra", func(b map[string]any) {
			b["variables"] = map[string]any{"customer_name": "Ada", "clinic": "Main St", "extra": 1}
		}, []any{"appointment_time"}},
		{"no variables", func(b map[string]any) { delete(b, "variables") }, []any{"appointment_time", "clinic", "customer_name"}},
		{"variables null", func(b map[string]any) { b["variables"] = nil }, []any{"appointment_time", "clinic", "customer_name"}},
		{"empty variables", func(b map[string]any) { b["variables"] = map[string]any{} }, []any{"appointment_time", "clinic", "customer_name"}},
		// A value that gives the script nothing to say counts as missing.
		{"null, empty and blank values", func(b map[string]any) {
			b["variables"] = map[string]any{"customer_name": nil, "appointment_time": "", "clinic": "  "}
		}, []any{"appointment_time", "clinic", "customer_name"}},
		{"one null among values", func(b map[string]any) {
			b["variables"] = map[string]any{"customer_name": "Ada", "appointment_time": 0, "clinic": nil}
		}, []any{"clinic"}},
		// missing_variables comes before from_number_mismatch (spec table order).
		{"missing, with a wrong from_number", func(b map[string]any) {
			b["variables"] = map[string]any{"customer_name": "Ada", "clinic": "Main St"}
			b["from_number"] = "+14155550111"
		}, []any{"appointment_time"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			before := countCalls(t, o.ns)
			body := o.callBody("+14155551234", tt.mutate)
			body["agent_id"] = agent.ResolvedID()
			r := do(t, "POST", "/v1/calls", o.key, body)
			d := expectErrorDetail(t, r, http.StatusUnprocessableEntity, "missing_variables")
			g.Expect(d["missing_variables"]).To(ConsistOf(tt.missing...))
			g.Expect(d["call_id"]).To(BeNil())
			g.Expect(d["expected_from_number"]).To(BeNil())
			g.Expect(countCalls(t, o.ns)).To(Equal(before), "a refused call left a Call behind")
		})
	}
}

func TestCreateCallFromNumber(t *testing.T) {
	o := newOrg(t)
	t.Run("mismatch", func(t *testing.T) {
		for _, from := range []string{"+14155550111", "+442071838750", "415 555 0111"} {
			g := NewWithT(t)
			before := countCalls(t, o.ns)
			r := do(t, "POST", "/v1/calls", o.key, o.callBody("+14155551234", func(b map[string]any) {
				b["from_number"] = from
			}))
			d := expectErrorDetail(t, r, http.StatusUnprocessableEntity, "from_number_mismatch")
			g.Expect(d["expected_from_number"]).To(Equal(agentFrom), "from_number %q", from)
			g.Expect(d["call_id"]).To(BeNil())
			g.Expect(d["missing_variables"]).To(BeNil())
			g.Expect(countCalls(t, o.ns)).To(Equal(before), "a refused call left a Call behind")
		}
	})
	accepted := []struct{ name, from string }{
		{"E.164 equal to the agent's", agentFrom},
		{"national digits", "4155550100"},
		{"national format", "(415) 555-0100"},
		{"with trunk prefix", "1 415 555 0100"},
	}
	for _, tt := range accepted {
		t.Run("accepted "+tt.name, func(t *testing.T) {
			g := NewWithT(t)
			r := do(t, "POST", "/v1/calls", o.key, o.callBody("+14155551234", func(b map[string]any) {
				b["from_number"] = tt.from
			}))
			expectStatusJSON(t, r, http.StatusCreated)
			g.Expect(r.body).To(HaveKeyWithValue("from_number", agentFrom))
			g.Expect(r.body["call_id"]).To(MatchRegexp(callIDPattern))
		})
	}
	t.Run("accepted null", func(t *testing.T) {
		r := do(t, "POST", "/v1/calls", o.key, o.callBody("+14155551234", func(b map[string]any) {
			b["from_number"] = nil
		}))
		expectStatusJSON(t, r, http.StatusCreated)
		NewWithT(t).Expect(r.body).To(HaveKeyWithValue("from_number", agentFrom))
	})
}

// createNumberList stores a NumberList in ns.
func createNumberList(t *testing.T, ns, name string, typ switchboardv1.NumberListType, numbers, prefixes []string) {
	t.Helper()
	l := &switchboardv1.NumberList{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       switchboardv1.NumberListSpec{Type: typ, Numbers: numbers, Prefixes: prefixes},
	}
	NewWithT(t).Expect(k8s.Create(context.Background(), l)).To(Succeed())
}

// waitRefused polls POST /v1/calls until number is refused with code: number
// lists reach the API through an informer. Calls accepted meanwhile are
// harmless.
func waitRefused(t *testing.T, o *org, number, code string) {
	t.Helper()
	NewWithT(t).Eventually(func() any {
		r := do(t, "POST", "/v1/calls", o.key, o.callBody(number, nil))
		d, _ := r.body["detail"].(map[string]any)
		return d["error_code"]
	}, 10*time.Second, 20*time.Millisecond).Should(Equal(code), "%s never refused with %s", number, code)
}

func TestCreateCallBlockedNumbers(t *testing.T) {
	o := newOrg(t)
	createNumberList(t, o.ns, "dnc", switchboardv1.DoNotCall, []string{"+14155550142", "+14155550177"}, nil)
	createNumberList(t, o.ns, "premium", switchboardv1.Blocked, []string{"+14155550177", "+14155550188"}, []string{"+1900"})
	waitRefused(t, o, "+14155550142", "dnc_blocked")
	waitRefused(t, o, "+19005550100", "number_blocked")

	tests := []struct{ name, to, e164, code string }{
		{"on the do-not-call list", "+14155550142", "+14155550142", "dnc_blocked"},
		{"on the do-not-call list, national format", "(415) 555-0142", "+14155550142", "dnc_blocked"},
		{"on both lists", "+14155550177", "+14155550177", "dnc_blocked"},
		{"on the block list", "+14155550188", "+14155550188", "number_blocked"},
		{"under a blocked prefix", "+19005550123", "+19005550123", "number_blocked"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			before := countCalls(t, o.ns)
			r := do(t, "POST", "/v1/calls", o.key, o.callBody(tt.to, nil))
			d := expectErrorDetail(t, r, http.StatusUnprocessableEntity, tt.code)
			g.Expect(d["call_id"]).To(MatchRegexp(callIDPattern))
			g.Expect(d["expected_from_number"]).To(BeNil())
			g.Expect(d["missing_variables"]).To(BeNil())
			g.Expect(countCalls(t, o.ns)).To(Equal(before+1), "a blocked call leaves exactly one failed call record")
			expectFailedCall(t, o, d["call_id"].(string), tt.e164)
		})
	}
	t.Run("not blocked", func(t *testing.T) {
		o.createCall(t, "+14155550143", nil)
	})
}

func TestNumberListsAreScopedToTheirOrganization(t *testing.T) {
	a, b := newOrg(t), newOrg(t)
	createNumberList(t, b.ns, "dnc", switchboardv1.DoNotCall, []string{"+14155550142"}, nil)
	createNumberList(t, b.ns, "premium", switchboardv1.Blocked, nil, []string{"+1900"})
	waitRefused(t, b, "+14155550142", "dnc_blocked")
	waitRefused(t, b, "+19005550100", "number_blocked")
	for _, number := range []string{"+14155550142", "+19005550100"} {
		r := do(t, "POST", "/v1/calls", a.key, a.callBody(number, nil))
		expectStatusJSON(t, r, http.StatusCreated)
	}
}

func TestCreateCallDispatchFailures(t *testing.T) {
	o := newOrg(t)
	tests := []struct{ number, code string }{
		{"+14155550008", "dispatch_error"},
		{"+14155550009", "dispatch_failed"},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			g := NewWithT(t)
			before := countCalls(t, o.ns)
			r := do(t, "POST", "/v1/calls", o.key, o.callBody(tt.number, nil))
			d := expectErrorDetail(t, r, http.StatusBadGateway, tt.code)
			g.Expect(d["call_id"]).To(MatchRegexp(callIDPattern))
			g.Expect(d["expected_from_number"]).To(BeNil())
			g.Expect(d["missing_variables"]).To(BeNil())
			g.Expect(countCalls(t, o.ns)).To(Equal(before+1), "a dispatch failure leaves exactly one failed call record")
			expectFailedCall(t, o, d["call_id"].(string), tt.number)
		})
	}
}

// TestRefusedCallReadsFailedAtOnce: a 422 dnc_blocked or a 502 dispatch
// error hands out a call_id whose record is failed (the record is failed from the start, never queued).
// A customer backend that reads it straight away must see failed, never
// queued. The race is narrow, so it is tried many times.
func TestRefusedCallReadsFailedAtOnce(t *testing.T) {
	o := newOrg(t)
	createNumberList(t, o.ns, "dnc", switchboardv1.DoNotCall, []string{"+14155550142"}, nil)
	waitRefused(t, o, "+14155550142", "dnc_blocked")
	const tries = 100
	for _, tt := range []struct {
		number, code string
		status       int
	}{
		{"+14155550142", "dnc_blocked", http.StatusUnprocessableEntity},
		{"+14155550008", "dispatch_error", http.StatusBadGateway},
	} {
		t.Run(tt.code, func(t *testing.T) {
			var wrong []string
			for range tries {
				r := do(t, "POST", "/v1/calls", o.key, o.callBody(tt.number, nil))
				id := expectErrorDetail(t, r, tt.status, tt.code)["call_id"].(string)
				got := do(t, "GET", "/v1/calls/"+id, o.key, nil)
				if got.status != http.StatusOK || got.body["status"] != "failed" {
					wrong = append(wrong, fmt.Sprintf("%d %v", got.status, got.body["status"]))
				}
			}
			NewWithT(t).Expect(wrong).To(BeEmpty(),
				"GET /v1/calls/{call_id} right after a %d %s did not read status failed in %d of %d tries; "+
					"the record was created, then marked failed by a second (status) write, and GET reads "+
					"the informer cache, which can still hold the first version (rendered queued)",
				tt.status, tt.code, len(wrong), tries)
		})
	}
}

func TestCreateCallAliases(t *testing.T) {
	o := newOrg(t)
	tests := []struct {
		name string
		body map[string]any
		vars map[string]any
	}{
		{"override_agent_id", map[string]any{"override_agent_id": o.agentID, "to_number": "+14155551234",
			"variables": map[string]any{"customer_name": "Ada"}}, map[string]any{"customer_name": "Ada"}},
		{"partner_llm_dynamic_variables", map[string]any{"agent_id": o.agentID, "to_number": "+14155551234",
			"partner_llm_dynamic_variables": map[string]any{"customer_name": "Bo", "n": 2}},
			map[string]any{"customer_name": "Bo", "n": 2.0}},
		{"retell_llm_dynamic_variables", map[string]any{"agent_id": o.agentID, "to_number": "+14155551234",
			"retell_llm_dynamic_variables": map[string]any{"customer_name": "Cy"}}, map[string]any{"customer_name": "Cy"}},
		{"override_agent_version and unknown fields ignored", map[string]any{"agent_id": o.agentID,
			"to_number": "+14155551234", "variables": map[string]any{"customer_name": "Di"},
			"override_agent_version": 3, "webhook_url": "https://example.com/hook", "x": []any{1, "two"},
			"retell_llm_dynamic_variables_extra": "ignored"}, map[string]any{"customer_name": "Di"}},
		{"a third-party request, unchanged", map[string]any{"override_agent_id": o.agentID,
			"override_agent_version": 7, "to_number": "+14155551234", "from_number": agentFrom,
			"retell_llm_dynamic_variables": map[string]any{"customer_name": "Ed"},
			"metadata":                     map[string]any{"crm": "42"}}, map[string]any{"customer_name": "Ed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			r := do(t, "POST", "/v1/calls", o.key, tt.body)
			expectStatusJSON(t, r, http.StatusCreated)
			g.Expect(r.body).To(HaveKeyWithValue("agent_id", o.agentID))
			g.Expect(r.body).To(HaveKeyWithValue("status", "queued"))
			g.Expect(r.body).To(HaveKeyWithValue("to_number", "+14155551234"))
			g.Expect(r.body["call_id"]).To(MatchRegexp(callIDPattern))
			call := o.getCall(t, r.body["call_id"].(string))
			g.Expect(call).To(HaveKeyWithValue("agent_id", o.agentID))
			g.Expect(call).To(HaveKeyWithValue("variables", tt.vars))
		})
	}
}

func TestCreateCallValidation(t *testing.T) {
	o := newOrg(t)
	tests := []struct {
		name string
		body any
		want []validationItem
	}{
		{"malformed JSON", `{"agent_id": "` + o.agentID + `", "to_number": `,
			[]validationItem{{loc: []any{"body"}, typ: "json_invalid", locPrefix: true}}},
		{"trailing garbage", `{"agent_id": "` + o.agentID + `"} x`,
			[]validationItem{{loc: []any{"body"}, typ: "json_invalid", locPrefix: true}}},
		{"JSON array", []any{o.callBody("+14155551234", nil)},
			[]validationItem{{loc: []any{"body"}, typ: "model_attributes_type"}}},
		{"JSON string", `"hello"`,
			[]validationItem{{loc: []any{"body"}, typ: "model_attributes_type", input: "hello"}}},
		{"empty body", "", []validationItem{{loc: []any{"body"}, typ: "missing"}}},
		{"blank body", " \n", []validationItem{{loc: []any{"body"}, typ: "missing"}}},
		{"empty object", map[string]any{}, []validationItem{
			{loc: []any{"body", "agent_id"}, typ: "missing"},
			{loc: []any{"body", "to_number"}, typ: "missing"},
		}},
		{"only variables", map[string]any{"variables": map[string]any{"customer_name": "Ada"}}, []validationItem{
			{loc: []any{"body", "agent_id"}, typ: "missing"},
			{loc: []any{"body", "to_number"}, typ: "missing"},
		}},
		{"agent_id null", o.callBody("+14155551234", func(b map[string]any) { b["agent_id"] = nil }),
			[]validationItem{{loc: []any{"body", "agent_id"}, typ: "missing"}}},
		{"agent_id a number", o.callBody("+14155551234", func(b map[string]any) { b["agent_id"] = 12345 }),
			[]validationItem{{loc: []any{"body", "agent_id"}, typ: "string_type", input: 12345.0}}},
		{"agent_id not a UUID", o.callBody("+14155551234", func(b map[string]any) { b["agent_id"] = "reminder" }),
			[]validationItem{{loc: []any{"body", "agent_id"}, typ: "uuid_parsing", input: "reminder"}}},
		{"agent_id a truncated UUID", o.callBody("+14155551234", func(b map[string]any) { b["agent_id"] = o.agentID[:35] }),
			[]validationItem{{loc: []any{"body", "agent_id"}, typ: "uuid_parsing"}}},
		{"override_agent_id not a UUID", map[string]any{"override_agent_id": "x", "to_number": "+14155551234"},
			[]validationItem{{loc: []any{"body", "override_agent_id"}, typ: "uuid_parsing", input: "x"}}},
		{"to_number hello", o.callBody("hello", nil),
			[]validationItem{{loc: []any{"body", "to_number"}, typ: "value_error", input: "hello"}}},
		{"to_number too short", o.callBody("+1415555", nil),
			[]validationItem{{loc: []any{"body", "to_number"}, typ: "value_error", input: "+1415555"}}},
		{"to_number empty", o.callBody("", nil),
			[]validationItem{{loc: []any{"body", "to_number"}, typ: "value_error", input: ""}}},
		{"to_number a number", o.callBody("", func(b map[string]any) { b["to_number"] = 14155551234 }),
			[]validationItem{{loc: []any{"body", "to_number"}, typ: "string_type"}}},
		{"from_number invalid", o.callBody("+14155551234", func(b map[string]any) { b["from_number"] = "caller" }),
			[]validationItem{{loc: []any{"body", "from_number"}, typ: "value_error", input: "caller"}}},
		{"variables a string", o.callBody("+14155551234", func(b map[string]any) { b["variables"] = "customer_name=Ada" }),
			[]validationItem{{loc: []any{"body", "variables"}, typ: "dict_type", input: "customer_name=Ada"}}},
		{"variables alias a list", o.callBody("+14155551234", func(b map[string]any) {
			delete(b, "variables")
			b["partner_llm_dynamic_variables"] = []any{"customer_name"}
		}), []validationItem{{loc: []any{"body", "partner_llm_dynamic_variables"}, typ: "dict_type"}}},
		{"metadata an array", o.callBody("+14155551234", func(b map[string]any) { b["metadata"] = []any{1, 2} }),
			[]validationItem{{loc: []any{"body", "metadata"}, typ: "dict_type", input: []any{1.0, 2.0}}}},
		{"metadata a string", o.callBody("+14155551234", func(b map[string]any) { b["metadata"] = "m" }),
			[]validationItem{{loc: []any{"body", "metadata"}, typ: "dict_type", input: "m"}}},
		{"every problem at once", map[string]any{"agent_id": 1, "to_number": "hello", "metadata": []any{}},
			[]validationItem{
				{loc: []any{"body", "agent_id"}, typ: "string_type"},
				{loc: []any{"body", "to_number"}, typ: "value_error"},
				{loc: []any{"body", "metadata"}, typ: "dict_type"},
			}},
	}
	start := countCalls(t, o.ns)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := countCalls(t, o.ns)
			r := do(t, "POST", "/v1/calls", o.key, tt.body)
			expectValidation(t, r, tt.want...)
			NewWithT(t).Expect(countCalls(t, o.ns)).To(Equal(before), "an invalid request left a Call behind")
		})
	}
	NewWithT(t).Expect(countCalls(t, o.ns)).To(Equal(start))

	// The body limit counts every byte, ignored fields too.
	padded := func(size int) []byte {
		body := o.callBody("+14155551234", func(b map[string]any) { b["notes"] = "" })
		j, err := json.Marshal(body)
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		body["notes"] = strings.Repeat("x", size-len(j))
		j, err = json.Marshal(body)
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		NewWithT(t).Expect(j).To(HaveLen(size))
		return j
	}
	t.Run("a body of 64 KiB is accepted", func(t *testing.T) {
		expectStatusJSON(t, do(t, "POST", "/v1/calls", o.key, padded(64<<10)), http.StatusCreated)
	})
	t.Run("a body over 64 KiB is 413", func(t *testing.T) {
		before := countCalls(t, o.ns)
		for _, body := range [][]byte{padded(64<<10 + 1), padded(1 << 20)} {
			msg := expectStringDetail(t, do(t, "POST", "/v1/calls", o.key, body), http.StatusRequestEntityTooLarge)
			NewWithT(t).Expect(msg).To(ContainSubstring("65536 bytes"), "the 413 names the limit")
		}
		NewWithT(t).Expect(countCalls(t, o.ns)).To(Equal(before), "a refused body left a Call behind")
	})
}

// TestCreateCallStrictInput: bodies that used to be accepted and misread,
// or accepted and then failed with a 5xx, are 422 with the validation
// array, and nothing is created.
func TestCreateCallStrictInput(t *testing.T) {
	o := newOrg(t)
	valid := `"agent_id":"` + o.agentID + `","variables":{"customer_name":"Ada"}`
	body := func(extra string) string { return `{` + valid + `,"to_number":"+14155551234",` + extra + `}` }
	nested := strings.Repeat(`{"a":`, 9) + "1" + strings.Repeat("}", 9)
	manyVars := make([]string, 101)
	for i := range manyVars {
		manyVars[i] = fmt.Sprintf(`"v%d":%d`, i, i)
	}
	long := strings.Repeat("5", 5000)
	tests := []struct {
		name string
		body string
		want validationItem
	}{
		// Once a 503 "safe to retry" (the API server cannot read the number)
		// and an ERROR log with a stack trace.
		{"metadata number beyond a float64", body(`"metadata":{"n":1e400}`),
			validationItem{loc: []any{"body", "metadata", "n"}, typ: "finite_number", input: "1e400"}},
		{"variables number beyond a float64", `{` + valid[:len(valid)-1] + `,"n":-1e400},"to_number":"+14155551234"}`,
			validationItem{loc: []any{"body", "variables", "n"}, typ: "finite_number", input: "-1e400"}},
		{"more digits than E.164 allows", `{` + valid + `,"to_number":"+4930123456789012"}`,
			validationItem{loc: []any{"body", "to_number"}, typ: "value_error", input: "+4930123456789012"}},
		// Once dialed as +14155550123.
		{"a leading minus", `{` + valid + `,"to_number":"-14155550123"}`,
			validationItem{loc: []any{"body", "to_number"}, typ: "value_error", input: "-14155550123"}},
		{"a plus inside", `{` + valid + `,"to_number":"+1+4155551234"}`,
			validationItem{loc: []any{"body", "to_number"}, typ: "value_error"}},
		{"a stray symbol", `{` + valid + `,"to_number":"415-555-1234#"}`,
			validationItem{loc: []any{"body", "to_number"}, typ: "value_error"}},
		{"a trailing separator", `{` + valid + `,"to_number":"(415) 555-1234-"}`,
			validationItem{loc: []any{"body", "to_number"}, typ: "value_error"}},
		{"a number sent twice", body(`"to_number":"+14155550001"`),
			validationItem{loc: []any{"body", "to_number"}, typ: "duplicate_key", input: "to_number"}},
		{"a metadata key sent twice", body(`"metadata":{"crm":"a","crm":"b"}`),
			validationItem{loc: []any{"body", "metadata", "crm"}, typ: "duplicate_key", input: "crm"}},
		{"not UTF-8", body("\"metadata\":{\"name\":\"Jos\xe9\"}"),
			validationItem{loc: []any{"body"}, typ: "json_invalid", locPrefix: true}},
		{"metadata nested too deep", body(`"metadata":` + nested),
			validationItem{loc: []any{"body", "metadata", "a", "a", "a", "a", "a", "a", "a", "a"}, typ: "too_deep"}},
		{"metadata over 16 KiB", body(`"metadata":{"blob":"` + strings.Repeat("x", 16<<10) + `"}`),
			validationItem{loc: []any{"body", "metadata"}, typ: "too_long"}},
		{"more than 100 variables", `{"agent_id":"` + o.agentID + `","to_number":"+14155551234","variables":{"customer_name":"Ada",` +
			strings.Join(manyVars[:100], ",") + `}}`,
			validationItem{loc: []any{"body", "variables"}, typ: "too_long"}},
		{"an empty variable name", `{` + valid[:len(valid)-1] + `,"":"x"},"to_number":"+14155551234"}`,
			validationItem{loc: []any{"body", "variables", ""}, typ: "string_too_short", input: ""}},
		{"a variable name over 128 characters", `{` + valid[:len(valid)-1] + `,"` + strings.Repeat("n", 129) + `":"x"},"to_number":"+14155551234"}`,
			validationItem{loc: []any{"body", "variables", strings.Repeat("n", 129)}, typ: "string_too_long"}},
		{"a variable value over 1 KiB", `{"agent_id":"` + o.agentID + `","to_number":"+14155551234","variables":{"customer_name":"` +
			strings.Repeat("A", 1025) + `"}}`,
			validationItem{loc: []any{"body", "variables", "customer_name"}, typ: "string_too_long"}},
		// A long input is echoed cut to 256 characters and "…".
		{"a 5000-character to_number", `{` + valid + `,"to_number":"` + long + `"}`,
			validationItem{loc: []any{"body", "to_number"}, typ: "value_error", input: long[:256] + "…"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := countCalls(t, o.ns)
			r := do(t, "POST", "/v1/calls", o.key, tt.body)
			items := expectValidation(t, r, tt.want)
			NewWithT(t).Expect(len(r.raw)).To(BeNumerically("<", 2<<10), "a 422 of %d bytes", len(r.raw))
			if s, ok := items[0]["input"].(string); ok {
				NewWithT(t).Expect(len([]rune(s))).To(BeNumerically("<=", 257), "input echoed in full")
			}
			NewWithT(t).Expect(countCalls(t, o.ns)).To(Equal(before), "an invalid request left a Call behind")
		})
	}
}

func TestCreateCallNormalisesToNumber(t *testing.T) {
	o := newOrg(t)
	for _, to := range []string{"(415) 555-1234", "415-555-1234", "4155551234", "+1 415 555 1234", "1 (415) 555-1234"} {
		t.Run(to, func(t *testing.T) {
			g := NewWithT(t)
			r := do(t, "POST", "/v1/calls", o.key, o.callBody(to, nil))
			expectStatusJSON(t, r, http.StatusCreated)
			g.Expect(r.body).To(HaveKeyWithValue("to_number", "+14155551234"))
			call := o.getCall(t, r.body["call_id"].(string))
			g.Expect(call).To(HaveKeyWithValue("to_number", "+14155551234"))
		})
	}
}

func TestGetCallErrors(t *testing.T) {
	o := newOrg(t)
	unknown := "call_" + randHex(16)
	for _, path := range []string{
		"/v1/calls/" + unknown, "/v1/calls/" + unknown + "/recording", "/v1/calls/call_test_00000000",
		"/v1/calls/call_abc_", "/v1/calls/call__", "/v1/calls/call_" + strings.Repeat("z", 64),
	} {
		t.Run("unknown "+path, func(t *testing.T) {
			expectStringDetail(t, do(t, "GET", path, o.key, nil), http.StatusNotFound)
		})
	}
	for _, id := range []string{"not-a-call", "call_ABC", "call_", "CALL_0123", "call-0123abcd", "call_a%20b"} {
		for _, suffix := range []string{"", "/recording"} {
			t.Run("malformed "+id+suffix, func(t *testing.T) {
				r := do(t, "GET", "/v1/calls/"+id+suffix, o.key, nil)
				items := expectValidation(t, r, validationItem{loc: []any{"path", "call_id"}, typ: "string_pattern_mismatch"})
				NewWithT(t).Expect(items[0]["input"]).To(BeAssignableToTypeOf(""))
			})
		}
	}
	t.Run("recording before the call ends", func(t *testing.T) {
		g := NewWithT(t)
		id := o.createCall(t, "+14155551234", nil)
		rec := do(t, "GET", "/v1/calls/"+id+"/recording", o.key, nil)
		expectStringDetail(t, rec, http.StatusNotFound)
		call := o.getCall(t, id)
		g.Expect(call["status"]).To(BeElementOf("queued", "in_progress"),
			"the call ended before its recording was asked for; the check proved nothing")
	})
}

func TestRoutes(t *testing.T) {
	o := newOrg(t)
	tests := []struct {
		method, path, key string
		status            int
		body              string
	}{
		{"GET", "/", "", http.StatusNotFound, `{"detail":"Not Found"}`},
		{"GET", "/nope", o.key, http.StatusNotFound, `{"detail":"Not Found"}`},
		{"GET", "/v2/calls/call_0", o.key, http.StatusNotFound, `{"detail":"Not Found"}`},
		{"GET", "/v1/agents", o.key, http.StatusNotFound, `{"detail":"Not Found"}`},
		{"DELETE", "/v1/calls", o.key, http.StatusMethodNotAllowed, `{"detail":"Method Not Allowed"}`},
		{"PATCH", "/v1/calls", o.key, http.StatusMethodNotAllowed, `{"detail":"Method Not Allowed"}`},
		{"PUT", "/v1/calls/call_x", o.key, http.StatusMethodNotAllowed, `{"detail":"Method Not Allowed"}`},
		{"DELETE", "/v1/calls/call_x", o.key, http.StatusMethodNotAllowed, `{"detail":"Method Not Allowed"}`},
		{"POST", "/v1/calls/call_x/recording", o.key, http.StatusMethodNotAllowed, `{"detail":"Method Not Allowed"}`},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			r := do(t, tt.method, tt.path, tt.key, nil)
			expectStatusJSON(t, r, tt.status)
			NewWithT(t).Expect(string(r.raw)).To(MatchJSON(tt.body))
			NewWithT(t).Expect(r.header.Get("X-Request-Id")).NotTo(BeEmpty(), "every answer carries a request id")
		})
	}
}
