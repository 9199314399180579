package calls_test

// A call's metadata is echoed back untouched and its variables as they
// were sent: the exact numbers and text, on GET, in every
// webhook event, in the list, and once the call lives only in the history
// store. The Kubernetes API server reads numbers as int64 or float64, so
// this is not a given.

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/app"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
)

func TestCallKeepsExactValues(t *testing.T) {
	WithOperator(t, func(o *app.Options) { o.Retention.Calls = ShortRetention })
	g := NewWithT(t)
	o := NewOrg(t)
	rc := NewReceiver(t, nil)
	_, secret := ApplyEndpoint(t, o.Ns, rc.URL(), nil)
	rc.Trust(secret)
	wantVars, wantMeta := JSONValue(t, []byte(ExactVariables)), JSONValue(t, []byte(ExactMetadata))
	expectExact := func(raw []byte, where string) {
		t.Helper()
		vars, meta := CallFields(t, raw)
		g.Expect(meta).To(Equal(wantMeta), "metadata %s", where)
		g.Expect(vars).To(Equal(wantVars), "variables %s", where)
	}

	r := Do(t, "POST", "/v1/calls", o.Key, `{"agent_id": "`+o.AgentID+`", "to_number": "+14155551234",
		"variables": `+ExactVariables+`, "metadata": `+ExactMetadata+`}`)
	ExpectStatusJSON(t, r, http.StatusCreated)
	id := r.Body["call_id"].(string)
	expectExact(Do(t, "GET", "/v1/calls/"+id, o.Key, nil).Raw, "on GET of the live call")

	g.Eventually(func() []string { return Events(rc.ForCall(id)) }, 20*time.Second, 20*time.Millisecond).
		Should(Equal([]string{"call.started", "call.ended", "call.analyzed"}))
	for _, d := range rc.ForCall(id) {
		ExpectSigned(g, d)
		var envelope struct {
			Call json.RawMessage `json:"call"`
		}
		g.Expect(json.Unmarshal(d.Body, &envelope)).To(Succeed())
		expectExact(envelope.Call, "in the "+d.Event+" event")
	}

	list := func() []byte {
		r := Do(t, "GET", "/v1/calls?limit=1", o.Key, nil)
		g.Expect(r.Status).To(Equal(http.StatusOK), string(r.Raw))
		var page struct {
			Data []json.RawMessage `json:"data"`
		}
		g.Expect(json.Unmarshal(r.Raw, &page)).To(Succeed())
		g.Expect(page.Data).To(HaveLen(1))
		return page.Data[0]
	}
	expectExact(list(), "in the list of live calls")

	WaitRemoved(t, o.Ns, id)
	expectExact(Do(t, "GET", "/v1/calls/"+id, o.Key, nil).Raw, "on GET of the archived call")
	expectExact(list(), "in the list of archived calls")
}

// TestPlainValuesCarryNoCopy: metadata the API server stores as sent
// (integers, short decimals, text) costs no extra copy on the Call.
func TestPlainValuesCarryNoCopy(t *testing.T) {
	g := NewWithT(t)
	o := NewOrg(t)
	plain := o.CreateCall(t, "+14155551234", map[string]any{"metadata": map[string]any{"order": 7, "rate": 0.25, "tag": "vip"}})
	exact := o.CreateCall(t, "+14155551234", map[string]any{"metadata": json.RawMessage(`{"order":12345678901234567890}`)})
	for id, copies := range map[string]int{plain: 0, exact: 1} {
		var c switchboardv1.Call
		g.Expect(K8s.Get(context.Background(), client.ObjectKey{Namespace: o.Ns, Name: CallName(id)}, &c)).To(Succeed())
		n := 0
		for _, a := range []string{switchboardv1.MetadataJSONAnnotation, switchboardv1.VariablesJSONAnnotation} {
			if _, ok := c.Annotations[a]; ok {
				n++
			}
		}
		g.Expect(n).To(Equal(copies), "call %s: annotations %v", id, c.Annotations)
	}
	g.Expect(o.GetCall(t, plain)["metadata"]).To(Equal(map[string]any{"order": 7.0, "rate": 0.25, "tag": "vip"}))
}
