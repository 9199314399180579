package callinput

import (
	"bytes"
	"encoding/json"
	"regexp"
	"testing"
	"unicode/utf8"

	"github.com/google/uuid"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/switchboard-dev/switchboard/internal/validation"
)

// validationTypes are the item types a create-call 422 may carry (README).
var validationTypes = map[string]bool{
	"missing": true, "json_invalid": true, "model_attributes_type": true, "duplicate_key": true,
	"string_type": true, "uuid_parsing": true, "value_error": true, "dict_type": true,
	"finite_number": true, "too_deep": true, "too_long": true, "string_too_short": true, "string_too_long": true,
}

// callNumber is the pattern the Call resource holds numbers to
// (api/v1alpha1): an accepted number the apiserver refuses would fail the
// create with a 503.
var callNumber = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)

// FuzzDecodeRequest: whatever the body, decoding never panics and yields
// exactly one of a request and validation items. Items have the documented
// shape (how a 422 renders them is httpapi's FuzzCreateCallValidationReply).
// A request has a canonical UUID, E.164 numbers the Call resource accepts,
// and variables and metadata within the limits that the Kubernetes API
// server can store (it reads them with k8s.io/apimachinery's JSON decoder).
//
// `make test` runs the seeds below and those in testdata/fuzz; explore with
// go test -run '^$' -fuzz FuzzDecodeRequest -fuzztime 60s ./internal/callinput
func FuzzDecodeRequest(f *testing.F) {
	for _, seed := range []string{
		``, `null`, `[]`, `{}`, `"x"`, `{"agent_id":`, `{"agent_id":null,"to_number":1}`,
		`{"agent_id":"7f2c1e9a-3b4d-4c5e-8f60-1a2b3c4d5e6f","to_number":"+14155551234"}`,
		`{"override_agent_id":"7f2c1e9a-3b4d-4c5e-8f60-1a2b3c4d5e6f","to_number":"4155551234","variables":{"a":[1,{"b":null}]},"metadata":{}}`,
		`{"agent_id":"7f2c1e9a-3b4d-4c5e-8f60-1a2b3c4d5e6f","to_number":"+1 (415) 555-1234","partner_llm_dynamic_variables":[]}`,
		`{"agent_id":"7f2c1e9a-3b4d-4c5e-8f60-1a2b3c4d5e6f","to_number":"-14155550123","metadata":{"n":1e400}}`,
		`{"agent_id":"7f2c1e9a-3b4d-4c5e-8f60-1a2b3c4d5e6f","to_number":"+14155551234","metadata":{"big":12345678901234567890,"d":1.000,"u":"\u00e9"},"variables":{"k":"v","":null}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, errs := DecodeRequest(body, "US")
		if (req == nil) == (errs == nil) {
			t.Fatalf("want exactly one of request and errors, got %+v and %+v", req, errs)
		}
		if errs != nil {
			checkItems(t, errs)
			return
		}
		if id, err := uuid.Parse(req.AgentID); err != nil || id.String() != req.AgentID {
			t.Fatalf("accepted agent_id %q", req.AgentID)
		}
		if !callNumber.MatchString(req.ToNumber) || req.FromNumber != "" && !callNumber.MatchString(req.FromNumber) {
			t.Fatalf("accepted numbers %q and %q", req.ToNumber, req.FromNumber)
		}
		if req.Variables == nil || len(req.Variables) > MaxVariables || req.RawVars == nil && len(req.Variables) > 0 {
			t.Fatalf("accepted variables %s (%v)", req.RawVars, req.Variables)
		}
		for name := range req.Variables {
			if name == "" || utf8.RuneCountInString(name) > MaxVariableNameChars {
				t.Fatalf("accepted variable name %q", name)
			}
		}
		if len(req.Metadata) > MaxMetadataBytes {
			t.Fatalf("accepted %d bytes of metadata", len(req.Metadata))
		}
		for _, raw := range []json.RawMessage{req.RawVars, req.Metadata} {
			if raw == nil {
				continue
			}
			var stored map[string]any
			if err := utiljson.Unmarshal(raw, &stored); err != nil {
				t.Fatalf("accepted %s, which the API server cannot read: %v", raw, err)
			}
			if d := depth(stored); d > MaxJSONDepth {
				t.Fatalf("accepted %s, nested %d deep", raw, d)
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, raw); err != nil || !bytes.Equal(compact.Bytes(), raw) {
				t.Fatalf("stored %s, not compact JSON", raw)
			}
		}
	})
}

// checkItems asserts the documented shape of 422 items.
func checkItems(t *testing.T, errs []validation.Item) {
	t.Helper()
	for _, e := range errs {
		if !validationTypes[e.Type] || e.Msg == "" || len(e.Loc) == 0 || e.Loc[0] != "body" {
			t.Fatalf("incomplete or undocumented validation item %+v", e)
		}
		for _, step := range e.Loc[1:] {
			switch step.(type) {
			case string, int, int64:
			default:
				t.Fatalf("loc step %#v of %+v", step, e)
			}
		}
	}
}

// depth is how deeply v nests objects and arrays, v itself counting as 1.
func depth(v any) int {
	deepest := 0
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			deepest = max(deepest, depth(e))
		}
	case []any:
		for _, e := range v {
			deepest = max(deepest, depth(e))
		}
	default:
		return 0
	}
	return deepest + 1
}
