package httpapi

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeCreateCall: whatever the body, decoding either yields a request
// with a UUID agent and an E.164 number, or validation items that all carry
// a type, a body location and a message (so the API answers 422, never 500).
// `make test` runs the seeds; `go test -fuzz FuzzDecodeCreateCall ./internal/httpapi` explores.
func FuzzDecodeCreateCall(f *testing.F) {
	for _, seed := range []string{
		``, `null`, `[]`, `{}`, `"x"`, `{"agent_id":`, `{"agent_id":null,"to_number":1}`,
		`{"agent_id":"7f2c1e9a-3b4d-4c5e-8f60-1a2b3c4d5e6f","to_number":"+14155551234"}`,
		`{"override_agent_id":"7f2c1e9a-3b4d-4c5e-8f60-1a2b3c4d5e6f","to_number":"4155551234","variables":{"a":[1,{"b":null}]},"metadata":{}}`,
		`{"agent_id":"7f2c1e9a-3b4d-4c5e-8f60-1a2b3c4d5e6f","to_number":"+1 (415) 555-1234","partner_llm_dynamic_variables":[]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, errs := decodeCreateCall(body, "US")
		if (req == nil) == (errs == nil) {
			t.Fatalf("want exactly one of request and errors, got %+v and %+v", req, errs)
		}
		for _, e := range errs {
			if e.Type == "" || e.Msg == "" || len(e.Loc) == 0 || e.Loc[0] != "body" {
				t.Fatalf("incomplete validation item %+v", e)
			}
			if _, err := json.Marshal(e); err != nil {
				t.Fatalf("item does not encode: %v", err)
			}
		}
		if req != nil {
			if len(req.AgentID) != 36 || len(req.ToNumber) < 8 || req.ToNumber[0] != '+' || req.Variables == nil {
				t.Fatalf("accepted an invalid request %+v", req)
			}
		}
	})
}
