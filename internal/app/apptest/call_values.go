package apptest

// A call's metadata is echoed back untouched and its variables as they
// were sent: the exact numbers and text, on GET, in every
// webhook event, in the list, and once the call lives only in the history
// store. The Kubernetes API server reads numbers as int64 or float64, so
// this is not a given.

import (
	"bytes"
	"encoding/json"
	"testing"
)

// Values no float64 holds exactly, text a round trip through one changes,
// and Unicode, written as a client might.
const (
	ExactMetadata = `{"order_id": 12345678901234567890, "refund": -98765432109876543210, "rate": 0.1,
		"amount": 1.000, "avogadro": 6.02e23, "tiny": 1e-400, "name": "Zoë 😀 \u00fc", "nested": {"list": [1.50, 2, null]}}`
	ExactVariables = `{"customer_name": "Ada", "account": 12345678901234567890, "balance": 10.50}`
)

// JSONValue decodes JSON text keeping every number's text, so that two
// values compare equal only if every number is written the same.
func JSONValue(t *testing.T, raw []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
	return v
}

// CallFields returns the variables and metadata of a call object's JSON.
func CallFields(t *testing.T, raw []byte) (variables, metadata any) {
	t.Helper()
	var call struct {
		Variables json.RawMessage `json:"variables"`
		Metadata  json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &call); err != nil {
		t.Fatalf("decoding call %s: %v", raw, err)
	}
	return JSONValue(t, call.Variables), JSONValue(t, call.Metadata)
}
