package controllers

import (
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/events"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony"
)

// The carrier's transfer outcome goes in the Call's status with the end,
// and an Event says how it went (a Warning when it failed).
func TestRecordTransfer(t *testing.T) {
	rec := events.NewFakeRecorder(4)
	r := &CallReconciler{Events: rec}
	c := &switchboardv1.Call{}
	r.recordTransfer(c, telephony.Progress{})
	if c.Status.Transfer != nil || len(rec.Events) != 0 {
		t.Fatalf("a call without a transfer got %+v", c.Status.Transfer)
	}
	at := time.Now()
	r.recordTransfer(c, telephony.Progress{Transfer: &telephony.TransferOutcome{To: "+14155550100",
		Mode: switchboardv1.TransferWarm, Method: switchboardv1.TransferByBridge, Result: switchboardv1.TransferDeclined,
		Detail: "the person did not accept within 15s", RequestedAt: at}})
	got := c.Status.Transfer
	if got == nil || got.Result != switchboardv1.TransferDeclined || got.To != "+14155550100" ||
		got.RequestedAt == nil || got.ConnectedAt != nil || got.SecondLegMS != nil {
		t.Fatalf("status.transfer = %+v", got)
	}
	ev := <-rec.Events
	if !strings.HasPrefix(ev, "Warning TransferFailed") || !strings.Contains(ev, "did not accept") {
		t.Errorf("event %q", ev)
	}
	r.recordTransfer(c, telephony.Progress{Transfer: &telephony.TransferOutcome{To: "+14155550100",
		Mode: switchboardv1.TransferCold, Method: switchboardv1.TransferByRefer, Result: switchboardv1.TransferTransferred}})
	if ev := <-rec.Events; !strings.HasPrefix(ev, "Normal Transferred") {
		t.Errorf("event %q", ev)
	}
}
