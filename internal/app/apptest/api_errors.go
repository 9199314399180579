package apptest

// Error responses of the REST API (the OpenAPI document's error responses), as a
// customer backend sees them: status codes, body shapes, and whether a call
// record was left behind.

import (
	"context"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// CallIDPattern is the form of every call_id the API issues.
const CallIDPattern = `^call_[0-9a-f]{32}$`

// ExpectStatusJSON asserts the status code and that the body is JSON.
func ExpectStatusJSON(t *testing.T, r Response, status int) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(r.Status).To(Equal(status), "status of a response with body %s", r.Raw)
	g.Expect(r.Header.Get("Content-Type")).To(Equal("application/json"),
		"Content-Type of a %d response with body %s", r.Status, r.Raw)
}

// ExpectStringDetail asserts a {"detail": "<text>"} body and returns the text.
func ExpectStringDetail(t *testing.T, r Response, status int) string {
	t.Helper()
	ExpectStatusJSON(t, r, status)
	g := NewWithT(t)
	g.Expect(r.Body).To(HaveLen(1), "body %s: want only the detail key", r.Raw)
	msg, ok := r.Body["detail"].(string)
	g.Expect(ok).To(BeTrue(), "detail is not a string: %s", r.Raw)
	g.Expect(msg).NotTo(BeEmpty(), "detail is empty: %s", r.Raw)
	return msg
}

// ExpectErrorDetail asserts a create-call error body: detail is an object
// with error, error_code, call_id, expected_from_number and
// missing_variables, as the error table in the README lists it. It returns the detail object.
func ExpectErrorDetail(t *testing.T, r Response, status int, code string) map[string]any {
	t.Helper()
	ExpectStatusJSON(t, r, status)
	g := NewWithT(t)
	g.Expect(r.Body).To(HaveLen(1), "body %s: want only the detail key", r.Raw)
	d := Detail(t, r)
	g.Expect(d).To(HaveKeyWithValue("error_code", code), "body %s", r.Raw)
	g.Expect(d["error"]).To(BeAssignableToTypeOf(""), "error is not a string: %s", r.Raw)
	g.Expect(d["error"]).NotTo(BeEmpty(), "error is empty: %s", r.Raw)
	for _, k := range []string{"call_id", "expected_from_number", "missing_variables"} {
		g.Expect(d).To(HaveKey(k), "body %s", r.Raw)
	}
	g.Expect(d).To(HaveLen(5), "unexpected keys in detail: %s", r.Raw)
	return d
}

// ValidationItem is what a test expects of one 422 validation-array item.
type ValidationItem struct {
	Loc []any
	Typ string
	// locPrefix: loc need only start with loc (json_invalid adds an offset).
	LocPrefix bool
	// input, when not nil, is the expected input (as decoded JSON).
	Input any
}

// ExpectValidation asserts a 422 whose detail is an array of validation
// items with loc, msg, type and input, matching want in order.
func ExpectValidation(t *testing.T, r Response, want ...ValidationItem) []map[string]any {
	t.Helper()
	ExpectStatusJSON(t, r, http.StatusUnprocessableEntity)
	g := NewWithT(t)
	g.Expect(r.Body).To(HaveLen(1), "body %s: want only the detail key", r.Raw)
	arr, ok := r.Body["detail"].([]any)
	g.Expect(ok).To(BeTrue(), "detail is not an array: %s", r.Raw)
	g.Expect(arr).To(HaveLen(len(want)), "validation items of %s", r.Raw)
	items := make([]map[string]any, len(arr))
	for i, v := range arr {
		item, ok := v.(map[string]any)
		g.Expect(ok).To(BeTrue(), "item %d is not an object: %s", i, r.Raw)
		g.Expect(item).To(HaveKey("input"), "item %d of %s", i, r.Raw)
		g.Expect(item["msg"]).To(BeAssignableToTypeOf(""), "item %d of %s: msg", i, r.Raw)
		g.Expect(item["msg"]).NotTo(BeEmpty(), "item %d of %s: msg", i, r.Raw)
		g.Expect(item["type"]).To(Equal(want[i].Typ), "item %d of %s: type", i, r.Raw)
		loc, ok := item["loc"].([]any)
		g.Expect(ok).To(BeTrue(), "item %d of %s: loc is not an array", i, r.Raw)
		if want[i].LocPrefix {
			g.Expect(len(loc)).To(BeNumerically(">=", len(want[i].Loc)), "item %d of %s: loc", i, r.Raw)
			g.Expect(loc[:len(want[i].Loc)]).To(Equal(want[i].Loc), "item %d of %s: loc", i, r.Raw)
		} else {
			g.Expect(loc).To(Equal(want[i].Loc), "item %d of %s: loc", i, r.Raw)
		}
		if want[i].Input != nil {
			g.Expect(item["input"]).To(Equal(want[i].Input), "item %d of %s: input", i, r.Raw)
		}
		items[i] = item
	}
	return items
}

// CallBody is a valid create-call body for o, changed by mutate.
func (o *Org) CallBody(number string, mutate func(map[string]any)) map[string]any {
	body := map[string]any{"agent_id": o.AgentID, "to_number": number,
		"variables": map[string]any{"customer_name": "Ada"}}
	if mutate != nil {
		mutate(body)
	}
	return body
}

// WaitCallSettled waits until the reconciler has finished with the Call
// whose call_id is id (its Ready condition is set and it is final), so that
// what the API reports afterwards is the call's last word.
func WaitCallSettled(t *testing.T, ns, id string) {
	t.Helper()
	NewWithT(t).Eventually(func() bool {
		var calls switchboardv1.CallList
		if err := K8s.List(context.Background(), &calls, client.InNamespace(ns)); err != nil {
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

// ExpectFailedCall asserts that call_id id reads as a failed call that
// never went out once the reconciler is done with it.
func ExpectFailedCall(t *testing.T, o *Org, id, toNumber string) {
	t.Helper()
	g := NewWithT(t)
	check := func(when string) {
		r := Do(t, "GET", "/v1/calls/"+id, o.Key, nil)
		ExpectStatusJSON(t, r, http.StatusOK)
		g.Expect(r.Body).To(HaveKeyWithValue("call_id", id), when)
		g.Expect(r.Body).To(HaveKeyWithValue("status", "failed"), "%s: %s", when, r.Raw)
		g.Expect(r.Body).To(HaveKeyWithValue("disposition", BeNil()), "%s: %s", when, r.Raw)
		g.Expect(r.Body).To(HaveKeyWithValue("to_number", toNumber), when)
		g.Expect(r.Body).To(HaveKeyWithValue("agent_id", o.AgentID), when)
		g.Expect(r.Body).To(HaveKeyWithValue("recording_url", BeNil()), when)
		rec := Do(t, "GET", "/v1/calls/"+id+"/recording", o.Key, nil)
		ExpectStringDetail(t, rec, http.StatusNotFound)
	}
	// Whether it reads failed at once, right after the refusal, is
	// TestRefusedCallReadsFailedAtOnce's business: here, the final state.
	WaitCallSettled(t, o.Ns, id)
	check("once the reconciler is done")
}

// CreateNumberList stores a NumberList in ns.
func CreateNumberList(t *testing.T, ns, name string, typ switchboardv1.NumberListType, numbers, prefixes []string) {
	t.Helper()
	l := &switchboardv1.NumberList{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       switchboardv1.NumberListSpec{Type: typ, Numbers: numbers, Prefixes: prefixes},
	}
	NewWithT(t).Expect(K8s.Create(context.Background(), l)).To(Succeed())
}

// WaitRefused polls POST /v1/calls until number is refused with code: number
// lists reach the API through an informer. Calls accepted meanwhile are
// harmless.
func WaitRefused(t *testing.T, o *Org, number, code string) {
	t.Helper()
	NewWithT(t).Eventually(func() any {
		r := Do(t, "POST", "/v1/calls", o.Key, o.CallBody(number, nil))
		d, _ := r.Body["detail"].(map[string]any)
		return d["error_code"]
	}, 10*time.Second, 20*time.Millisecond).Should(Equal(code), "%s never refused with %s", number, code)
}
