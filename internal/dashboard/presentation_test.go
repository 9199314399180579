package dashboard_test

import (
	"context"
	"net/http"
	"regexp"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// One way to show things: a call's duration and times read the same on its
// page as in the list, agents by their names, empty fields as "—", and a
// failed call in the list says why.
func TestCallsShowOneWay(t *testing.T) {
	suite.Need(t)
	o := newOrg(t)
	must(t, k8s.Create(context.Background(), &switchboardv1.NumberList{
		ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: "do-not-call"},
		Spec:       switchboardv1.NumberListSpec{Type: switchboardv1.DoNotCall, Numbers: []string{"+14155550199"}}}))
	var refused string
	eventually(t, "a call to the list is refused", func() bool {
		status, body := o.api(t, "POST", "/v1/calls", map[string]any{"agent_id": o.agentID, "to_number": "+14155550199",
			"variables": map[string]any{"customer_name": "Ada"}})
		if status != http.StatusUnprocessableEntity {
			return false
		}
		_, failed := o.api(t, "GET", "/v1/calls?status=failed", nil)
		if data, _ := failed["data"].([]any); len(data) > 0 {
			refused = data[0].(map[string]any)["call_id"].(string)
		}
		return body != nil && refused != ""
	})
	id := o.placeCall(t, "+14155551234")
	eventually(t, "the call ends", func() bool {
		_, call := o.api(t, "GET", "/v1/calls/"+id, nil)
		return call["duration_ms"] != nil
	})
	c := signInClient(t, o.key)
	_, call := c.get(t, "/dashboard/calls/"+id)
	_, list := c.get(t, "/dashboard/calls")

	duration := field(t, call, "call-duration")
	if row := callRow(t, list, id); !contains(row, `<td data-label="Duration">`+duration+"</td>") || !contains(row, "reminder") || contains(row, o.agentID) {
		t.Errorf("the list shows the call otherwise than its page (duration %q, agent reminder): %s", duration, row)
	}
	if started := field(t, call, "call-started"); !regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$`).MatchString(started) {
		t.Errorf("the call started at %q, not as the timeline shows times", started)
	}
	if agent := field(t, call, "call-agent"); agent != "reminder " {
		t.Errorf("the call's agent reads %q, want its name", agent)
	}
	if row := callRow(t, list, refused); !contains(row, "dnc_blocked") || !contains(row, `<td data-label="Disposition">—</td>`) {
		t.Errorf("the refused call's row: %s", row)
	}
}

// field is the text before the first tag inside the element with id.
func field(t *testing.T, page, id string) string {
	t.Helper()
	m := regexp.MustCompile(`id="` + id + `">([^<]*)<`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no #%s in the page: %s", id, page)
	}
	return m[1]
}

func callRow(t *testing.T, page, id string) string {
	t.Helper()
	row := regexp.MustCompile(`(?s)<tr data-call-id="` + id + `">.*?</tr>`).FindString(page)
	if row == "" {
		t.Fatalf("no row of %s in the list: %s", id, page)
	}
	return row
}
