package callinput

import (
	"fmt"
	"strings"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/calls"
	"github.com/switchboard-dev/switchboard/internal/validation"
)

const testAgent = "7F2C1E9A-3B4D-4C5E-8F60-1A2B3C4D5E6F"

// callBody is a valid create-call body with extra fields spliced in
// (`"k":v,...`, as JSON text so that any literal can be sent).
func callBody(extra string) string {
	body := `{"agent_id":"` + testAgent + `","to_number":"+14155551234"`
	if extra != "" {
		body += "," + extra
	}
	return body + "}"
}

// nested is an object nesting depth levels deep, counting itself:
// nested(2) is {"a":{"a":1}}.
func nested(depth int) string {
	return strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth)
}

// vars is a variables object of n entries v0..v(n-1).
func vars(n int) string {
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf(`"v%d":%d`, i, i)
	}
	return "{" + strings.Join(items, ",") + "}"
}

// itemKey is a validation item as "type@loc", loc without "body" and
// joined with "." (json_invalid's byte offset left out).
func itemKey(e validation.Item) string {
	var loc []string
	for _, step := range e.Loc[1:] {
		if e.Type == "json_invalid" {
			break
		}
		loc = append(loc, fmt.Sprint(step))
	}
	return e.Type + "@" + strings.Join(loc, ".")
}

func TestDecodeRequest(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		wantErrs []string // itemKey of each item, in order
		check    func(*testing.T, *calls.Request)
	}{
		{name: "minimal", body: callBody(""),
			check: func(t *testing.T, r *calls.Request) {
				if r.AgentID != strings.ToLower(testAgent) || r.ToNumber != "+14155551234" || len(r.Variables) != 0 || r.Metadata != nil {
					t.Fatalf("got %+v", r)
				}
			}},
		{name: "override_agent_id alias", body: `{"override_agent_id":"` + testAgent + `","to_number":"+14155551234"}`,
			check: func(t *testing.T, r *calls.Request) {
				if r.AgentID == "" {
					t.Fatal("alias ignored")
				}
			}},
		{name: "agent_id wins over its alias",
			body: `{"agent_id":"` + testAgent + `","override_agent_id":"nope","to_number":"+14155551234"}`},
		{name: "partner variables alias", body: callBody(`"partner_llm_dynamic_variables":{"a":"1"}`),
			check: func(t *testing.T, r *calls.Request) {
				if r.Variables["a"] != "1" || string(r.RawVars) != `{"a":"1"}` {
					t.Fatalf("variables = %v", r.Variables)
				}
			}},
		{name: "retell variables alias", body: callBody(`"retell_llm_dynamic_variables":{"a":"1"}`),
			check: func(t *testing.T, r *calls.Request) {
				if r.Variables["a"] != "1" {
					t.Fatalf("variables = %v", r.Variables)
				}
			}},
		{name: "ignored fields", body: callBody(`"override_agent_version":3,"x":[1],"y":1e400,"z":{"k":1,"k":2}`)},
		{name: "national number in default region", body: `{"agent_id":"` + testAgent + `","to_number":"(415) 555-1234"}`,
			check: func(t *testing.T, r *calls.Request) {
				if r.ToNumber != "+14155551234" {
					t.Fatalf("to_number = %q", r.ToNumber)
				}
			}},
		{name: "nulls are absent", body: callBody(`"from_number":null,"variables":null,"metadata":null`)},
		{name: "empty body", body: ``, wantErrs: []string{"missing@"}},
		{name: "null body", body: `null`, wantErrs: []string{"missing@"}},
		{name: "null variables do not hide the alias", body: callBody(`"variables":null,"retell_llm_dynamic_variables":{"a":"1"}`),
			check: func(t *testing.T, r *calls.Request) {
				if r.Variables["a"] != "1" {
					t.Fatalf("variables = %v", r.Variables)
				}
			}},
		{name: "letters and extensions are not dialable", body: `{"agent_id":"` + testAgent + `","to_number":"+1 415 CALL NOW","from_number":"+14155551234 ext. 55"}`,
			wantErrs: []string{"value_error@to_number", "value_error@from_number"}},
		{name: "a leading minus is not a plus", body: `{"agent_id":"` + testAgent + `","to_number":"-14155550123"}`,
			wantErrs: []string{"value_error@to_number"}},
		{name: "malformed", body: `{"agent_id":`, wantErrs: []string{"json_invalid@"}},
		{name: "trailing garbage", body: callBody("") + ` x`, wantErrs: []string{"json_invalid@"}},
		{name: "not UTF-8", body: callBody(`"metadata":{"name":"caf` + "\xe9" + `"}`), wantErrs: []string{"json_invalid@"}},
		{name: "array body", body: `[1]`, wantErrs: []string{"model_attributes_type@"}},
		{name: "number body beyond a float64", body: `1e400`, wantErrs: []string{"model_attributes_type@"}},
		{name: "missing both", body: `{}`, wantErrs: []string{"missing@agent_id", "missing@to_number"}},
		{name: "wrong types", body: `{"agent_id":5,"to_number":true,"variables":"x","metadata":[1]}`,
			wantErrs: []string{"string_type@agent_id", "string_type@to_number", "dict_type@variables", "dict_type@metadata"}},
		{name: "bad uuid and phone", body: `{"agent_id":"abc","to_number":"hello","from_number":"+1415555"}`,
			wantErrs: []string{"uuid_parsing@agent_id", "value_error@to_number", "value_error@from_number"}},
		{name: "uuid without dashes", body: `{"agent_id":"7f2c1e9a3b4d4c5e8f601a2b3c4d5e6f","to_number":"+14155551234"}`,
			wantErrs: []string{"uuid_parsing@agent_id"}},
		{name: "more digits than E.164 allows", body: `{"agent_id":"` + testAgent + `","to_number":"+4930123456789012"}`,
			wantErrs: []string{"value_error@to_number"}},

		// Numbers: whatever fits a float64 is stored, with its exact text.
		{name: "metadata number beyond a float64", body: callBody(`"metadata":{"n":1e400}`),
			wantErrs: []string{"finite_number@metadata.n"}},
		{name: "variables number beyond a float64", body: callBody(`"variables":{"n":-1e400}`),
			wantErrs: []string{"finite_number@variables.n"}},
		{name: "deep number beyond a float64", body: callBody(`"metadata":{"a":[1,{"b":2e999}]}`),
			wantErrs: []string{"finite_number@metadata.a.1.b"}},
		{name: "exact numbers kept as sent, compacted", body: callBody(`"metadata": {"big": 12345678901234567890, "d": 0.1, "one": 1.000, "tiny": 1e-400, "u": "\u00e9😀"}`),
			check: func(t *testing.T, r *calls.Request) {
				if want := `{"big":12345678901234567890,"d":0.1,"one":1.000,"tiny":1e-400,"u":"\u00e9😀"}`; string(r.Metadata) != want {
					t.Fatalf("metadata = %s, want %s", r.Metadata, want)
				}
			}},

		// A key twice: which value was meant is anyone's guess.
		{name: "top-level key twice", body: callBody(`"to_number":"+14155550001"`), wantErrs: []string{"duplicate_key@to_number"}},
		{name: "metadata key twice", body: callBody(`"metadata":{"a":1,"a":2}`), wantErrs: []string{"duplicate_key@metadata.a"}},
		{name: "nested key twice", body: callBody(`"variables":{"v":[{"k":1,"k":1}]}`), wantErrs: []string{"duplicate_key@variables.v.0.k"}},

		// Limits.
		{name: "metadata as deep as allowed", body: callBody(`"metadata":` + nested(MaxJSONDepth))},
		{name: "metadata too deep", body: callBody(`"metadata":` + nested(MaxJSONDepth+1)),
			wantErrs: []string{"too_deep@metadata" + strings.Repeat(".a", MaxJSONDepth)}},
		{name: "variables too deep", body: callBody(`"variables":{"v":[[[[[[[[1]]]]]]]]}`),
			wantErrs: []string{"too_deep@variables.v.0.0.0.0.0.0.0"}},
		{name: "metadata at the size limit", body: callBody(`"metadata":{"s":"` + strings.Repeat("x", MaxMetadataBytes-8) + `"}`)},
		{name: "metadata over the size limit", body: callBody(`"metadata":{"s":"` + strings.Repeat("x", MaxMetadataBytes-7) + `"}`),
			wantErrs: []string{"too_long@metadata"}},
		{name: "metadata size counts compact JSON", body: callBody(`"metadata":{"s":    "` + strings.Repeat("x", MaxMetadataBytes-8) + `"   }`)},
		{name: "as many variables as allowed", body: callBody(`"variables":` + vars(MaxVariables))},
		{name: "too many variables", body: callBody(`"variables":` + vars(MaxVariables+1)), wantErrs: []string{"too_long@variables"}},
		{name: "empty variable name", body: callBody(`"variables":{"":"x","ok":1}`), wantErrs: []string{"string_too_short@variables."}},
		{name: "variable name at the limit", body: callBody(`"variables":{"` + strings.Repeat("é", MaxVariableNameChars) + `":1}`)},
		{name: "variable name over the limit", body: callBody(`"variables":{"` + strings.Repeat("é", MaxVariableNameChars+1) + `":1}`),
			wantErrs: []string{"string_too_long@variables." + strings.Repeat("é", MaxVariableNameChars+1)}},
		{name: "variable value at the limit", body: callBody(`"variables":{"v":"` + strings.Repeat("é", MaxVariableValueBytes/2) + `"}`)},
		{name: "variable value over the limit in bytes, not characters", body: callBody(`"variables":{"v":"` +
			strings.Repeat("é", MaxVariableValueBytes/2) + `x"}`), wantErrs: []string{"string_too_long@variables.v"}},
		{name: "variable value over the limit", body: callBody(`"variables":{"b":"` + strings.Repeat("x", MaxVariableValueBytes+1) + `","a":"x"}`),
			wantErrs: []string{"string_too_long@variables.b"}},
		{name: "non-string variable value over the limit", body: callBody(`"variables":{"v":[` + strings.Repeat(`1,`, MaxVariableValueBytes/2) + `1]}`),
			wantErrs: []string{"too_long@variables.v"}},
		{name: "every variable problem, by name", body: callBody(`"variables":{"z":"` + strings.Repeat("x", MaxVariableValueBytes+1) + `","":1}`),
			wantErrs: []string{"string_too_short@variables.", "string_too_long@variables.z"}},
		{name: "variables and metadata both reported", body: callBody(`"variables":{"":1},"metadata":{"n":1e400}`),
			wantErrs: []string{"string_too_short@variables.", "finite_number@metadata.n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, errs := DecodeRequest([]byte(tt.body), "US")
			var got []string
			for _, e := range errs {
				got = append(got, itemKey(e))
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
