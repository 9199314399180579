package restapi_test

// Error responses of the REST API (the OpenAPI document's error responses), as a
// customer backend sees them: status codes, body shapes, and whether a call
// record was left behind.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	. "github.com/onsi/gomega"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
)

func TestCreateCallAgentNotFound(t *testing.T) {
	o := NewOrg(t)
	other := NewOrg(t)
	tests := []struct{ name, agentID string }{
		{"random UUID", uuid.NewString()},
		{"agent of another organization", other.AgentID},
		{"agent of another organization in upper case", strings.ToUpper(other.AgentID)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			before, beforeOther := CountCalls(t, o.Ns), CountCalls(t, other.Ns)
			r := Do(t, "POST", "/v1/calls", o.Key, o.CallBody("+14155551234", func(b map[string]any) {
				b["agent_id"] = tt.agentID
			}))
			d := ExpectErrorDetail(t, r, http.StatusNotFound, "agent_not_found")
			g.Expect(d["call_id"]).To(BeNil())
			g.Expect(d["expected_from_number"]).To(BeNil())
			g.Expect(d["missing_variables"]).To(BeNil())
			g.Expect(CountCalls(t, o.Ns)).To(Equal(before), "a refused call left a Call behind")
			g.Expect(CountCalls(t, other.Ns)).To(Equal(beforeOther), "a call was placed in the other organization")
		})
	}
}

func TestCreateCallAgentRefused(t *testing.T) {
	o := NewOrg(t)
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
			agent := CreateAgent(t, o.Ns, fmt.Sprintf("refused-%d", i), tt.mutate)
			before := CountCalls(t, o.Ns)
			body := o.CallBody("+14155551234", tt.body)
			body["agent_id"] = agent.ResolvedID()
			r := Do(t, "POST", "/v1/calls", o.Key, body)
			d := ExpectErrorDetail(t, r, http.StatusBadRequest, tt.code)
			g.Expect(d["call_id"]).To(BeNil())
			g.Expect(d["expected_from_number"]).To(BeNil())
			g.Expect(d["missing_variables"]).To(BeNil())
			g.Expect(CountCalls(t, o.Ns)).To(Equal(before), "a refused call left a Call behind")
		})
	}
}

func TestCreateCallMissingVariables(t *testing.T) {
	o := NewOrg(t)
	agent := CreateAgent(t, o.Ns, "needs-three", func(s *switchboardv1.AgentSpec) {
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
			before := CountCalls(t, o.Ns)
			body := o.CallBody("+14155551234", tt.mutate)
			body["agent_id"] = agent.ResolvedID()
			r := Do(t, "POST", "/v1/calls", o.Key, body)
			d := ExpectErrorDetail(t, r, http.StatusUnprocessableEntity, "missing_variables")
			g.Expect(d["missing_variables"]).To(ConsistOf(tt.missing...))
			g.Expect(d["call_id"]).To(BeNil())
			g.Expect(d["expected_from_number"]).To(BeNil())
			g.Expect(CountCalls(t, o.Ns)).To(Equal(before), "a refused call left a Call behind")
		})
	}
}

func TestCreateCallFromNumber(t *testing.T) {
	o := NewOrg(t)
	t.Run("mismatch", func(t *testing.T) {
		for _, from := range []string{"+14155550111", "+442071838750", "415 555 0111"} {
			g := NewWithT(t)
			before := CountCalls(t, o.Ns)
			r := Do(t, "POST", "/v1/calls", o.Key, o.CallBody("+14155551234", func(b map[string]any) {
				b["from_number"] = from
			}))
			d := ExpectErrorDetail(t, r, http.StatusUnprocessableEntity, "from_number_mismatch")
			g.Expect(d["expected_from_number"]).To(Equal(AgentFrom), "from_number %q", from)
			g.Expect(d["call_id"]).To(BeNil())
			g.Expect(d["missing_variables"]).To(BeNil())
			g.Expect(CountCalls(t, o.Ns)).To(Equal(before), "a refused call left a Call behind")
		}
	})
	accepted := []struct{ name, from string }{
		{"E.164 equal to the agent's", AgentFrom},
		{"national digits", "4155550100"},
		{"national format", "(415) 555-0100"},
		{"with trunk prefix", "1 415 555 0100"},
	}
	for _, tt := range accepted {
		t.Run("accepted "+tt.name, func(t *testing.T) {
			g := NewWithT(t)
			r := Do(t, "POST", "/v1/calls", o.Key, o.CallBody("+14155551234", func(b map[string]any) {
				b["from_number"] = tt.from
			}))
			ExpectStatusJSON(t, r, http.StatusCreated)
			g.Expect(r.Body).To(HaveKeyWithValue("from_number", AgentFrom))
			g.Expect(r.Body["call_id"]).To(MatchRegexp(CallIDPattern))
		})
	}
	t.Run("accepted null", func(t *testing.T) {
		r := Do(t, "POST", "/v1/calls", o.Key, o.CallBody("+14155551234", func(b map[string]any) {
			b["from_number"] = nil
		}))
		ExpectStatusJSON(t, r, http.StatusCreated)
		NewWithT(t).Expect(r.Body).To(HaveKeyWithValue("from_number", AgentFrom))
	})
}

func TestCreateCallBlockedNumbers(t *testing.T) {
	o := NewOrg(t)
	CreateNumberList(t, o.Ns, "dnc", switchboardv1.DoNotCall, []string{"+14155550142", "+14155550177"}, nil)
	CreateNumberList(t, o.Ns, "premium", switchboardv1.Blocked, []string{"+14155550177", "+14155550188"}, []string{"+1900"})
	WaitRefused(t, o, "+14155550142", "dnc_blocked")
	WaitRefused(t, o, "+19005550100", "number_blocked")

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
			before := CountCalls(t, o.Ns)
			r := Do(t, "POST", "/v1/calls", o.Key, o.CallBody(tt.to, nil))
			d := ExpectErrorDetail(t, r, http.StatusUnprocessableEntity, tt.code)
			g.Expect(d["call_id"]).To(MatchRegexp(CallIDPattern))
			g.Expect(d["expected_from_number"]).To(BeNil())
			g.Expect(d["missing_variables"]).To(BeNil())
			g.Expect(CountCalls(t, o.Ns)).To(Equal(before+1), "a blocked call leaves exactly one failed call record")
			ExpectFailedCall(t, o, d["call_id"].(string), tt.e164)
		})
	}
	t.Run("not blocked", func(t *testing.T) {
		o.CreateCall(t, "+14155550143", nil)
	})
}

func TestNumberListsAreScopedToTheirOrganization(t *testing.T) {
	a, b := NewOrg(t), NewOrg(t)
	CreateNumberList(t, b.Ns, "dnc", switchboardv1.DoNotCall, []string{"+14155550142"}, nil)
	CreateNumberList(t, b.Ns, "premium", switchboardv1.Blocked, nil, []string{"+1900"})
	WaitRefused(t, b, "+14155550142", "dnc_blocked")
	WaitRefused(t, b, "+19005550100", "number_blocked")
	for _, number := range []string{"+14155550142", "+19005550100"} {
		r := Do(t, "POST", "/v1/calls", a.Key, a.CallBody(number, nil))
		ExpectStatusJSON(t, r, http.StatusCreated)
	}
}

func TestCreateCallDispatchFailures(t *testing.T) {
	o := NewOrg(t)
	tests := []struct{ number, code string }{
		{"+14155550008", "dispatch_error"},
		{"+14155550009", "dispatch_failed"},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			g := NewWithT(t)
			before := CountCalls(t, o.Ns)
			r := Do(t, "POST", "/v1/calls", o.Key, o.CallBody(tt.number, nil))
			d := ExpectErrorDetail(t, r, http.StatusBadGateway, tt.code)
			g.Expect(d["call_id"]).To(MatchRegexp(CallIDPattern))
			g.Expect(d["expected_from_number"]).To(BeNil())
			g.Expect(d["missing_variables"]).To(BeNil())
			g.Expect(CountCalls(t, o.Ns)).To(Equal(before+1), "a dispatch failure leaves exactly one failed call record")
			ExpectFailedCall(t, o, d["call_id"].(string), tt.number)
		})
	}
}

// TestRefusedCallReadsFailedAtOnce: a 422 dnc_blocked or a 502 dispatch
// error hands out a call_id whose record is failed (the record is failed from the start, never queued).
// A customer backend that reads it straight away must see failed, never
// queued. The race is narrow, so it is tried many times.
func TestRefusedCallReadsFailedAtOnce(t *testing.T) {
	o := NewOrg(t)
	CreateNumberList(t, o.Ns, "dnc", switchboardv1.DoNotCall, []string{"+14155550142"}, nil)
	WaitRefused(t, o, "+14155550142", "dnc_blocked")
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
				r := Do(t, "POST", "/v1/calls", o.Key, o.CallBody(tt.number, nil))
				id := ExpectErrorDetail(t, r, tt.status, tt.code)["call_id"].(string)
				got := Do(t, "GET", "/v1/calls/"+id, o.Key, nil)
				if got.Status != http.StatusOK || got.Body["status"] != "failed" {
					wrong = append(wrong, fmt.Sprintf("%d %v", got.Status, got.Body["status"]))
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
	o := NewOrg(t)
	tests := []struct {
		name string
		body map[string]any
		vars map[string]any
	}{
		{"override_agent_id", map[string]any{"override_agent_id": o.AgentID, "to_number": "+14155551234",
			"variables": map[string]any{"customer_name": "Ada"}}, map[string]any{"customer_name": "Ada"}},
		{"partner_llm_dynamic_variables", map[string]any{"agent_id": o.AgentID, "to_number": "+14155551234",
			"partner_llm_dynamic_variables": map[string]any{"customer_name": "Bo", "n": 2}},
			map[string]any{"customer_name": "Bo", "n": 2.0}},
		{"retell_llm_dynamic_variables", map[string]any{"agent_id": o.AgentID, "to_number": "+14155551234",
			"retell_llm_dynamic_variables": map[string]any{"customer_name": "Cy"}}, map[string]any{"customer_name": "Cy"}},
		{"override_agent_version and unknown fields ignored", map[string]any{"agent_id": o.AgentID,
			"to_number": "+14155551234", "variables": map[string]any{"customer_name": "Di"},
			"override_agent_version": 3, "webhook_url": "https://example.com/hook", "x": []any{1, "two"},
			"retell_llm_dynamic_variables_extra": "ignored"}, map[string]any{"customer_name": "Di"}},
		{"a third-party request, unchanged", map[string]any{"override_agent_id": o.AgentID,
			"override_agent_version": 7, "to_number": "+14155551234", "from_number": AgentFrom,
			"retell_llm_dynamic_variables": map[string]any{"customer_name": "Ed"},
			"metadata":                     map[string]any{"crm": "42"}}, map[string]any{"customer_name": "Ed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			r := Do(t, "POST", "/v1/calls", o.Key, tt.body)
			ExpectStatusJSON(t, r, http.StatusCreated)
			g.Expect(r.Body).To(HaveKeyWithValue("agent_id", o.AgentID))
			g.Expect(r.Body).To(HaveKeyWithValue("status", "queued"))
			g.Expect(r.Body).To(HaveKeyWithValue("to_number", "+14155551234"))
			g.Expect(r.Body["call_id"]).To(MatchRegexp(CallIDPattern))
			call := o.GetCall(t, r.Body["call_id"].(string))
			g.Expect(call).To(HaveKeyWithValue("agent_id", o.AgentID))
			g.Expect(call).To(HaveKeyWithValue("variables", tt.vars))
		})
	}
}

func TestCreateCallValidation(t *testing.T) {
	o := NewOrg(t)
	tests := []struct {
		name string
		body any
		want []ValidationItem
	}{
		{"malformed JSON", `{"agent_id": "` + o.AgentID + `", "to_number": `,
			[]ValidationItem{{Loc: []any{"body"}, Typ: "json_invalid", LocPrefix: true}}},
		{"trailing garbage", `{"agent_id": "` + o.AgentID + `"} x`,
			[]ValidationItem{{Loc: []any{"body"}, Typ: "json_invalid", LocPrefix: true}}},
		{"JSON array", []any{o.CallBody("+14155551234", nil)},
			[]ValidationItem{{Loc: []any{"body"}, Typ: "model_attributes_type"}}},
		{"JSON string", `"hello"`,
			[]ValidationItem{{Loc: []any{"body"}, Typ: "model_attributes_type", Input: "hello"}}},
		{"empty body", "", []ValidationItem{{Loc: []any{"body"}, Typ: "missing"}}},
		{"blank body", " \n", []ValidationItem{{Loc: []any{"body"}, Typ: "missing"}}},
		{"empty object", map[string]any{}, []ValidationItem{
			{Loc: []any{"body", "agent_id"}, Typ: "missing"},
			{Loc: []any{"body", "to_number"}, Typ: "missing"},
		}},
		{"only variables", map[string]any{"variables": map[string]any{"customer_name": "Ada"}}, []ValidationItem{
			{Loc: []any{"body", "agent_id"}, Typ: "missing"},
			{Loc: []any{"body", "to_number"}, Typ: "missing"},
		}},
		{"agent_id null", o.CallBody("+14155551234", func(b map[string]any) { b["agent_id"] = nil }),
			[]ValidationItem{{Loc: []any{"body", "agent_id"}, Typ: "missing"}}},
		{"agent_id a number", o.CallBody("+14155551234", func(b map[string]any) { b["agent_id"] = 12345 }),
			[]ValidationItem{{Loc: []any{"body", "agent_id"}, Typ: "string_type", Input: 12345.0}}},
		{"agent_id not a UUID", o.CallBody("+14155551234", func(b map[string]any) { b["agent_id"] = "reminder" }),
			[]ValidationItem{{Loc: []any{"body", "agent_id"}, Typ: "uuid_parsing", Input: "reminder"}}},
		{"agent_id a truncated UUID", o.CallBody("+14155551234", func(b map[string]any) { b["agent_id"] = o.AgentID[:35] }),
			[]ValidationItem{{Loc: []any{"body", "agent_id"}, Typ: "uuid_parsing"}}},
		{"override_agent_id not a UUID", map[string]any{"override_agent_id": "x", "to_number": "+14155551234"},
			[]ValidationItem{{Loc: []any{"body", "override_agent_id"}, Typ: "uuid_parsing", Input: "x"}}},
		{"to_number hello", o.CallBody("hello", nil),
			[]ValidationItem{{Loc: []any{"body", "to_number"}, Typ: "value_error", Input: "hello"}}},
		{"to_number too short", o.CallBody("+1415555", nil),
			[]ValidationItem{{Loc: []any{"body", "to_number"}, Typ: "value_error", Input: "+1415555"}}},
		{"to_number empty", o.CallBody("", nil),
			[]ValidationItem{{Loc: []any{"body", "to_number"}, Typ: "value_error", Input: ""}}},
		{"to_number a number", o.CallBody("", func(b map[string]any) { b["to_number"] = 14155551234 }),
			[]ValidationItem{{Loc: []any{"body", "to_number"}, Typ: "string_type"}}},
		{"from_number invalid", o.CallBody("+14155551234", func(b map[string]any) { b["from_number"] = "caller" }),
			[]ValidationItem{{Loc: []any{"body", "from_number"}, Typ: "value_error", Input: "caller"}}},
		{"variables a string", o.CallBody("+14155551234", func(b map[string]any) { b["variables"] = "customer_name=Ada" }),
			[]ValidationItem{{Loc: []any{"body", "variables"}, Typ: "dict_type", Input: "customer_name=Ada"}}},
		{"variables alias a list", o.CallBody("+14155551234", func(b map[string]any) {
			delete(b, "variables")
			b["partner_llm_dynamic_variables"] = []any{"customer_name"}
		}), []ValidationItem{{Loc: []any{"body", "partner_llm_dynamic_variables"}, Typ: "dict_type"}}},
		{"metadata an array", o.CallBody("+14155551234", func(b map[string]any) { b["metadata"] = []any{1, 2} }),
			[]ValidationItem{{Loc: []any{"body", "metadata"}, Typ: "dict_type", Input: []any{1.0, 2.0}}}},
		{"metadata a string", o.CallBody("+14155551234", func(b map[string]any) { b["metadata"] = "m" }),
			[]ValidationItem{{Loc: []any{"body", "metadata"}, Typ: "dict_type", Input: "m"}}},
		{"every problem at once", map[string]any{"agent_id": 1, "to_number": "hello", "metadata": []any{}},
			[]ValidationItem{
				{Loc: []any{"body", "agent_id"}, Typ: "string_type"},
				{Loc: []any{"body", "to_number"}, Typ: "value_error"},
				{Loc: []any{"body", "metadata"}, Typ: "dict_type"},
			}},
	}
	start := CountCalls(t, o.Ns)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := CountCalls(t, o.Ns)
			r := Do(t, "POST", "/v1/calls", o.Key, tt.body)
			ExpectValidation(t, r, tt.want...)
			NewWithT(t).Expect(CountCalls(t, o.Ns)).To(Equal(before), "an invalid request left a Call behind")
		})
	}
	NewWithT(t).Expect(CountCalls(t, o.Ns)).To(Equal(start))

	// The body limit counts every byte, ignored fields too.
	padded := func(size int) []byte {
		body := o.CallBody("+14155551234", func(b map[string]any) { b["notes"] = "" })
		j, err := json.Marshal(body)
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		body["notes"] = strings.Repeat("x", size-len(j))
		j, err = json.Marshal(body)
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		NewWithT(t).Expect(j).To(HaveLen(size))
		return j
	}
	t.Run("a body of 64 KiB is accepted", func(t *testing.T) {
		ExpectStatusJSON(t, Do(t, "POST", "/v1/calls", o.Key, padded(64<<10)), http.StatusCreated)
	})
	t.Run("a body over 64 KiB is 413", func(t *testing.T) {
		before := CountCalls(t, o.Ns)
		for _, body := range [][]byte{padded(64<<10 + 1), padded(1 << 20)} {
			msg := ExpectStringDetail(t, Do(t, "POST", "/v1/calls", o.Key, body), http.StatusRequestEntityTooLarge)
			NewWithT(t).Expect(msg).To(ContainSubstring("65536 bytes"), "the 413 names the limit")
		}
		NewWithT(t).Expect(CountCalls(t, o.Ns)).To(Equal(before), "a refused body left a Call behind")
	})
}

// TestCreateCallStrictInput: bodies that used to be accepted and misread,
// or accepted and then failed with a 5xx, are 422 with the validation
// array, and nothing is created.
func TestCreateCallStrictInput(t *testing.T) {
	o := NewOrg(t)
	valid := `"agent_id":"` + o.AgentID + `","variables":{"customer_name":"Ada"}`
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
		want ValidationItem
	}{
		// Once a 503 "safe to retry" (the API server cannot read the number)
		// and an ERROR log with a stack trace.
		{"metadata number beyond a float64", body(`"metadata":{"n":1e400}`),
			ValidationItem{Loc: []any{"body", "metadata", "n"}, Typ: "finite_number", Input: "1e400"}},
		{"variables number beyond a float64", `{` + valid[:len(valid)-1] + `,"n":-1e400},"to_number":"+14155551234"}`,
			ValidationItem{Loc: []any{"body", "variables", "n"}, Typ: "finite_number", Input: "-1e400"}},
		{"more digits than E.164 allows", `{` + valid + `,"to_number":"+4930123456789012"}`,
			ValidationItem{Loc: []any{"body", "to_number"}, Typ: "value_error", Input: "+4930123456789012"}},
		// Once dialed as +14155550123.
		{"a leading minus", `{` + valid + `,"to_number":"-14155550123"}`,
			ValidationItem{Loc: []any{"body", "to_number"}, Typ: "value_error", Input: "-14155550123"}},
		{"a plus inside", `{` + valid + `,"to_number":"+1+4155551234"}`,
			ValidationItem{Loc: []any{"body", "to_number"}, Typ: "value_error"}},
		{"a stray symbol", `{` + valid + `,"to_number":"415-555-1234#"}`,
			ValidationItem{Loc: []any{"body", "to_number"}, Typ: "value_error"}},
		{"a trailing separator", `{` + valid + `,"to_number":"(415) 555-1234-"}`,
			ValidationItem{Loc: []any{"body", "to_number"}, Typ: "value_error"}},
		{"a number sent twice", body(`"to_number":"+14155550001"`),
			ValidationItem{Loc: []any{"body", "to_number"}, Typ: "duplicate_key", Input: "to_number"}},
		{"a metadata key sent twice", body(`"metadata":{"crm":"a","crm":"b"}`),
			ValidationItem{Loc: []any{"body", "metadata", "crm"}, Typ: "duplicate_key", Input: "crm"}},
		{"not UTF-8", body("\"metadata\":{\"name\":\"Jos\xe9\"}"),
			ValidationItem{Loc: []any{"body"}, Typ: "json_invalid", LocPrefix: true}},
		{"metadata nested too deep", body(`"metadata":` + nested),
			ValidationItem{Loc: []any{"body", "metadata", "a", "a", "a", "a", "a", "a", "a", "a"}, Typ: "too_deep"}},
		{"metadata over 16 KiB", body(`"metadata":{"blob":"` + strings.Repeat("x", 16<<10) + `"}`),
			ValidationItem{Loc: []any{"body", "metadata"}, Typ: "too_long"}},
		{"more than 100 variables", `{"agent_id":"` + o.AgentID + `","to_number":"+14155551234","variables":{"customer_name":"Ada",` +
			strings.Join(manyVars[:100], ",") + `}}`,
			ValidationItem{Loc: []any{"body", "variables"}, Typ: "too_long"}},
		{"an empty variable name", `{` + valid[:len(valid)-1] + `,"":"x"},"to_number":"+14155551234"}`,
			ValidationItem{Loc: []any{"body", "variables", ""}, Typ: "string_too_short", Input: ""}},
		{"a variable name over 128 characters", `{` + valid[:len(valid)-1] + `,"` + strings.Repeat("n", 129) + `":"x"},"to_number":"+14155551234"}`,
			ValidationItem{Loc: []any{"body", "variables", strings.Repeat("n", 129)}, Typ: "string_too_long"}},
		{"a variable value over 1 KiB", `{"agent_id":"` + o.AgentID + `","to_number":"+14155551234","variables":{"customer_name":"` +
			strings.Repeat("A", 1025) + `"}}`,
			ValidationItem{Loc: []any{"body", "variables", "customer_name"}, Typ: "string_too_long"}},
		// A long input is echoed cut to 256 characters and "…".
		{"a 5000-character to_number", `{` + valid + `,"to_number":"` + long + `"}`,
			ValidationItem{Loc: []any{"body", "to_number"}, Typ: "value_error", Input: long[:256] + "…"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := CountCalls(t, o.Ns)
			r := Do(t, "POST", "/v1/calls", o.Key, tt.body)
			items := ExpectValidation(t, r, tt.want)
			NewWithT(t).Expect(len(r.Raw)).To(BeNumerically("<", 2<<10), "a 422 of %d bytes", len(r.Raw))
			if s, ok := items[0]["input"].(string); ok {
				NewWithT(t).Expect(len([]rune(s))).To(BeNumerically("<=", 257), "input echoed in full")
			}
			NewWithT(t).Expect(CountCalls(t, o.Ns)).To(Equal(before), "an invalid request left a Call behind")
		})
	}
}

func TestCreateCallNormalisesToNumber(t *testing.T) {
	o := NewOrg(t)
	for _, to := range []string{"(415) 555-1234", "415-555-1234", "4155551234", "+1 415 555 1234", "1 (415) 555-1234"} {
		t.Run(to, func(t *testing.T) {
			g := NewWithT(t)
			r := Do(t, "POST", "/v1/calls", o.Key, o.CallBody(to, nil))
			ExpectStatusJSON(t, r, http.StatusCreated)
			g.Expect(r.Body).To(HaveKeyWithValue("to_number", "+14155551234"))
			call := o.GetCall(t, r.Body["call_id"].(string))
			g.Expect(call).To(HaveKeyWithValue("to_number", "+14155551234"))
		})
	}
}

func TestGetCallErrors(t *testing.T) {
	o := NewOrg(t)
	unknown := "call_" + RandHex(16)
	for _, path := range []string{
		"/v1/calls/" + unknown, "/v1/calls/" + unknown + "/recording", "/v1/calls/call_test_00000000",
		"/v1/calls/call_abc_", "/v1/calls/call__", "/v1/calls/call_" + strings.Repeat("z", 64),
	} {
		t.Run("unknown "+path, func(t *testing.T) {
			ExpectStringDetail(t, Do(t, "GET", path, o.Key, nil), http.StatusNotFound)
		})
	}
	for _, id := range []string{"not-a-call", "call_ABC", "call_", "CALL_0123", "call-0123abcd", "call_a%20b"} {
		for _, suffix := range []string{"", "/recording"} {
			t.Run("malformed "+id+suffix, func(t *testing.T) {
				r := Do(t, "GET", "/v1/calls/"+id+suffix, o.Key, nil)
				items := ExpectValidation(t, r, ValidationItem{Loc: []any{"path", "call_id"}, Typ: "string_pattern_mismatch"})
				NewWithT(t).Expect(items[0]["input"]).To(BeAssignableToTypeOf(""))
			})
		}
	}
	t.Run("recording before the call ends", func(t *testing.T) {
		g := NewWithT(t)
		id := o.CreateCall(t, "+14155551234", nil)
		rec := Do(t, "GET", "/v1/calls/"+id+"/recording", o.Key, nil)
		ExpectStringDetail(t, rec, http.StatusNotFound)
		call := o.GetCall(t, id)
		g.Expect(call["status"]).To(BeElementOf("queued", "in_progress"),
			"the call ended before its recording was asked for; the check proved nothing")
	})
}

func TestRoutes(t *testing.T) {
	o := NewOrg(t)
	tests := []struct {
		method, path, key string
		status            int
		body              string
	}{
		{"GET", "/", "", http.StatusNotFound, `{"detail":"Not Found"}`},
		{"GET", "/nope", o.Key, http.StatusNotFound, `{"detail":"Not Found"}`},
		{"GET", "/v2/calls/call_0", o.Key, http.StatusNotFound, `{"detail":"Not Found"}`},
		{"GET", "/v1/agents", o.Key, http.StatusNotFound, `{"detail":"Not Found"}`},
		{"DELETE", "/v1/calls", o.Key, http.StatusMethodNotAllowed, `{"detail":"Method Not Allowed"}`},
		{"PATCH", "/v1/calls", o.Key, http.StatusMethodNotAllowed, `{"detail":"Method Not Allowed"}`},
		{"PUT", "/v1/calls/call_x", o.Key, http.StatusMethodNotAllowed, `{"detail":"Method Not Allowed"}`},
		{"DELETE", "/v1/calls/call_x", o.Key, http.StatusMethodNotAllowed, `{"detail":"Method Not Allowed"}`},
		{"POST", "/v1/calls/call_x/recording", o.Key, http.StatusMethodNotAllowed, `{"detail":"Method Not Allowed"}`},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			r := Do(t, tt.method, tt.path, tt.key, nil)
			ExpectStatusJSON(t, r, tt.status)
			NewWithT(t).Expect(string(r.Raw)).To(MatchJSON(tt.body))
			NewWithT(t).Expect(r.Header.Get("X-Request-ID")).NotTo(BeEmpty(), "every answer carries a request id")
		})
	}
}
