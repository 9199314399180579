package app_test

// A call's metadata is echoed back untouched and its variables as they
// were sent: the exact numbers and text, on GET, in every
// webhook event, in the list, and once the call lives only in the history
// store. The Kubernetes API server reads numbers as int64 or float64, so
// this is not a given.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/app"
)

// Values no float64 holds exactly, text a round trip through one changes,
// and Unicode, written as a client might.
const (
	exactMetadata = `{"order_id": 12345678901234567890, "refund": -98765432109876543210, "rate": 0.1,
		"amount": 1.000, "avogadro": 6.02e23, "tiny": 1e-400, "name": "Zoë 😀 \u00fc", "nested": {"list": [1.50, 2, null]}}`
	exactVariables = `{"customer_name": "Ada", "account": 12345678901234567890, "balance": 10.50}`
)

// jsonValue decodes JSON text keeping every number's text, so that two
// values compare equal only if every number is written the same.
func jsonValue(t *testing.T, raw []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
	return v
}

// callFields returns the variables and metadata of a call object's JSON.
func callFields(t *testing.T, raw []byte) (variables, metadata any) {
	t.Helper()
	var call struct {
		Variables json.RawMessage `json:"variables"`
		Metadata  json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &call); err != nil {
		t.Fatalf("decoding call %s: %v", raw, err)
	}
	return jsonValue(t, call.Variables), jsonValue(t, call.Metadata)
}

func TestCallKeepsExactValues(t *testing.T) {
	withOperator(t, func(o *app.Options) { o.Retention.Calls = shortRetention })
	g := NewWithT(t)
	o := newOrg(t)
	rc := newReceiver(t, nil)
	_, secret := applyEndpoint(t, o.ns, rc.url(), nil)
	rc.trust(secret)
	wantVars, wantMeta := jsonValue(t, []byte(exactVariables)), jsonValue(t, []byte(exactMetadata))
	expectExact := func(raw []byte, where string) {
		t.Helper()
		vars, meta := callFields(t, raw)
		g.Expect(meta).To(Equal(wantMeta), "metadata %s", where)
		g.Expect(vars).To(Equal(wantVars), "variables %s", where)
	}

	r := do(t, "POST", "/v1/calls", o.key, `{"agent_id": "`+o.agentID+`", "to_number": "+14155551234",
		"variables": `+exactVariables+`, "metadata": `+exactMetadata+`}`)
	expectStatusJSON(t, r, http.StatusCreated)
	id := r.body["call_id"].(string)
	expectExact(do(t, "GET", "/v1/calls/"+id, o.key, nil).raw, "on GET of the live call")

	g.Eventually(func() []string { return events(rc.forCall(id)) }, 20*time.Second, 20*time.Millisecond).
		Should(Equal([]string{"call.started", "call.ended", "call.analyzed"}))
	for _, d := range rc.forCall(id) {
		expectSigned(g, d)
		var envelope struct {
			Call json.RawMessage `json:"call"`
		}
		g.Expect(json.Unmarshal(d.body, &envelope)).To(Succeed())
		expectExact(envelope.Call, "in the "+d.event+" event")
	}

	list := func() []byte {
		r := do(t, "GET", "/v1/calls?limit=1", o.key, nil)
		g.Expect(r.status).To(Equal(http.StatusOK), string(r.raw))
		var page struct {
			Data []json.RawMessage `json:"data"`
		}
		g.Expect(json.Unmarshal(r.raw, &page)).To(Succeed())
		g.Expect(page.Data).To(HaveLen(1))
		return page.Data[0]
	}
	expectExact(list(), "in the list of live calls")

	waitRemoved(t, o.ns, id)
	expectExact(do(t, "GET", "/v1/calls/"+id, o.key, nil).raw, "on GET of the archived call")
	expectExact(list(), "in the list of archived calls")
}

// TestPlainValuesCarryNoCopy: metadata the API server stores as sent
// (integers, short decimals, text) costs no extra copy on the Call.
func TestPlainValuesCarryNoCopy(t *testing.T) {
	g := NewWithT(t)
	o := newOrg(t)
	plain := o.createCall(t, "+14155551234", map[string]any{"metadata": map[string]any{"order": 7, "rate": 0.25, "tag": "vip"}})
	exact := o.createCall(t, "+14155551234", map[string]any{"metadata": json.RawMessage(`{"order":12345678901234567890}`)})
	for id, copies := range map[string]int{plain: 0, exact: 1} {
		var c switchboardv1.Call
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: o.ns, Name: callName(id)}, &c)).To(Succeed())
		n := 0
		for _, a := range []string{switchboardv1.MetadataJSONAnnotation, switchboardv1.VariablesJSONAnnotation} {
			if _, ok := c.Annotations[a]; ok {
				n++
			}
		}
		g.Expect(n).To(Equal(copies), "call %s: annotations %v", id, c.Annotations)
	}
	g.Expect(o.getCall(t, plain)["metadata"]).To(Equal(map[string]any{"order": 7.0, "rate": 0.25, "tag": "vip"}))
}
