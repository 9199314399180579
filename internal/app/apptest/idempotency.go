package apptest

// Idempotent create: POST /v1/calls with an Idempotency-Key places its
// call once, however often and however concurrently it is sent, and every
// retry gets the first response again, also after a restart and after the
// Call has left the cluster.

import (
	"encoding/json"
	"net/http"
	"testing"
)

// PostWithKey posts a create-call body with an Idempotency-Key.
func PostWithKey(t testing.TB, baseURL, apiKey, idemKey string, body []byte) Response {
	t.Helper()
	return SendWithHeader(t, baseURL, "POST", "/v1/calls", "Bearer "+apiKey, body,
		http.Header{"Idempotency-Key": {idemKey}})
}

func (o *Org) JSONBody(t testing.TB, number string) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"agent_id": o.AgentID, "to_number": number,
		"variables": map[string]any{"customer_name": "Ada"}, "metadata": map[string]any{"order": 7}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
