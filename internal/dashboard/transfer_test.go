package dashboard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony"
)

// A transferred call's page says where the callee was handed, how, and
// how it went; the REST API's call object says the same. The status is
// written as the reconciler writes it from the carrier's outcome (the
// simulated carrier of this suite does not transfer).
func TestCallPageShowsTheTransfer(t *testing.T) {
	suite.Need(t)
	o := newOrg(t)
	id := o.placeCall(t, "+14155550001")
	ctx := context.Background()
	key := client.ObjectKey{Namespace: o.ns, Name: "call-" + strings.TrimPrefix(id, "call_")}
	var c switchboardv1.Call
	eventually(t, "the call is done", func() bool {
		must(t, k8s.Get(ctx, key, &c))
		return apimeta.IsStatusConditionTrue(c.Status.Conditions, switchboardv1.ReadyCondition)
	})
	at := time.Now()
	out := telephony.TransferOutcome{To: "+14155550100", Mode: switchboardv1.TransferWarm,
		Method: switchboardv1.TransferByBridge, Result: switchboardv1.TransferDeclined, SIPStatus: 200,
		Detail: "the person did not accept within 15s", RequestedAt: at, ConnectedAt: at.Add(3 * time.Second)}
	patch := client.MergeFrom(c.DeepCopy())
	c.Status.Transfer = out.Status()
	must(t, k8s.Status().Patch(ctx, &c, patch))

	eventually(t, "the REST API shows the transfer", func() bool {
		_, call := o.api(t, "GET", "/v1/calls/"+id, nil)
		tr, _ := call["transfer"].(map[string]any)
		return tr["result"] == "declined" && tr["to"] == "+14155550100" && tr["sip_status"] == float64(200)
	})
	tab := newTab(t)
	do(t, tab, signIn(o.key), chromedp.Navigate(baseURL+"/dashboard/calls/"+id),
		chromedp.WaitVisible(chromedp.CSS(`#call-transfer`)))
	got := text(t, tab, "#call-transfer")
	for _, want := range []string{"The person declined", "declined", "+14155550100", "warm by bridge", "SIP 200",
		"the person did not accept within 15s"} {
		if !strings.Contains(got, want) {
			t.Errorf("the transfer row reads %q, want %q in it", got, want)
		}
	}
}
