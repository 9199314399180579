package httpapi

import (
	"strings"
	"testing"
)

func TestDecodeCreateCall(t *testing.T) {
	const agent = "7F2C1E9A-3B4D-4C5E-8F60-1A2B3C4D5E6F"
	tests := []struct {
		name     string
		body     string
		wantErrs []string // "type@field"
		check    func(*testing.T, *createCallRequest)
	}{
		{name: "minimal", body: `{"agent_id":"` + agent + `","to_number":"+14155551234"}`,
			check: func(t *testing.T, r *createCallRequest) {
				if r.AgentID != strings.ToLower(agent) || r.ToNumber != "+14155551234" || len(r.Variables) != 0 || r.Metadata != nil {
					t.Fatalf("got %+v", r)
				}
			}},
		{name: "override_agent_id alias", body: `{"override_agent_id":"` + agent + `","to_number":"+14155551234"}`,
			check: func(t *testing.T, r *createCallRequest) {
				if r.AgentID == "" {
					t.Fatal("alias ignored")
				}
			}},
		{name: "agent_id wins over its alias",
			body: `{"agent_id":"` + agent + `","override_agent_id":"nope","to_number":"+14155551234"}`},
		{name: "partner variables alias", body: `{"agent_id":"` + agent + `","to_number":"+14155551234","partner_llm_dynamic_variables":{"a":"1"}}`,
			check: func(t *testing.T, r *createCallRequest) {
				if r.Variables["a"] != "1" || string(r.RawVars) != `{"a":"1"}` {
					t.Fatalf("variables = %v", r.Variables)
				}
			}},
		{name: "retell variables alias", body: `{"agent_id":"` + agent + `","to_number":"+14155551234","retell_llm_dynamic_variables":{"a":"1"}}`,
			check: func(t *testing.T, r *createCallRequest) {
				if r.Variables["a"] != "1" {
					t.Fatalf("variables = %v", r.Variables)
				}
			}},
		{name: "ignored fields", body: `{"agent_id":"` + agent + `","to_number":"+14155551234","override_agent_version":3,"x":[1]}`},
		{name: "national number in default region", body: `{"agent_id":"` + agent + `","to_number":"(415) 555-1234"}`,
			check: func(t *testing.T, r *createCallRequest) {
				if r.ToNumber != "+14155551234" {
					t.Fatalf("to_number = %q", r.ToNumber)
				}
			}},
		{name: "nulls are absent", body: `{"agent_id":"` + agent + `","to_number":"+14155551234","from_number":null,"variables":null,"metadata":null}`},
		{name: "empty body", body: ``, wantErrs: []string{"missing@"}},
		{name: "null body", body: `null`, wantErrs: []string{"missing@"}},
		{name: "null variables do not hide the alias", body: `{"agent_id":"` + agent + `","to_number":"+14155551234","variables":null,"retell_llm_dynamic_variables":{"a":"1"}}`,
			check: func(t *testing.T, r *createCallRequest) {
				if r.Variables["a"] != "1" {
					t.Fatalf("variables = %v", r.Variables)
				}
			}},
		{name: "letters and extensions are not dialable", body: `{"agent_id":"` + agent + `","to_number":"+1 415 CALL NOW","from_number":"+14155551234 ext. 55"}`,
			wantErrs: []string{"value_error@to_number", "value_error@from_number"}},
		{name: "malformed", body: `{"agent_id":`, wantErrs: []string{"json_invalid@"}},
		{name: "array body", body: `[1]`, wantErrs: []string{"model_attributes_type@"}},
		{name: "missing both", body: `{}`, wantErrs: []string{"missing@agent_id", "missing@to_number"}},
		{name: "wrong types", body: `{"agent_id":5,"to_number":true,"variables":"x","metadata":[1]}`,
			wantErrs: []string{"string_type@agent_id", "string_type@to_number", "dict_type@variables", "dict_type@metadata"}},
		{name: "bad uuid and phone", body: `{"agent_id":"abc","to_number":"hello","from_number":"+1415555"}`,
			wantErrs: []string{"uuid_parsing@agent_id", "value_error@to_number", "value_error@from_number"}},
		{name: "uuid without dashes", body: `{"agent_id":"7f2c1e9a3b4d4c5e8f601a2b3c4d5e6f","to_number":"+14155551234"}`,
			wantErrs: []string{"uuid_parsing@agent_id"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, errs := decodeCreateCall([]byte(tt.body), "US")
			var got []string
			for _, e := range errs {
				field := ""
				if len(e.Loc) > 1 {
					field, _ = e.Loc[1].(string)
				}
				got = append(got, e.Type+"@"+field)
				if e.Msg == "" || e.Loc[0] != "body" {
					t.Errorf("item %+v lacks msg or body loc", e)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.wantErrs, ",") {
				t.Fatalf("errors = %v, want %v", got, tt.wantErrs)
			}
			if tt.check != nil {
				tt.check(t, req)
			}
		})
	}
}
