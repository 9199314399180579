package controllers

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony"
)

// A call the carrier reports ended on its own keeps the carrier's reason,
// unless it ended once the stop had been asked for (a SIP callee hanging
// up while our hangup was on its way): the stop's 202 then holds.
func TestDisconnectionReasonAfterAStop(t *testing.T) {
	stop := time.Unix(1_700_000_000, 0)
	for _, tc := range []struct {
		name    string
		stopped *time.Time
		ended   time.Time
		want    string
	}{
		{"never stopped", nil, stop, "user_hangup"},
		{"ended before the stop was asked for", &stop, stop.Add(-time.Millisecond), "user_hangup"},
		{"ended as the stop was asked for", &stop, stop, telephony.APIHangup},
		{"ended after, before the hangup reached the carrier", &stop, stop.Add(300 * time.Millisecond), telephony.APIHangup},
	} {
		c := &switchboardv1.Call{}
		if tc.stopped != nil {
			c.Status.StoppedAt = &metav1.MicroTime{Time: *tc.stopped}
		}
		p := telephony.Progress{Phase: telephony.Ended, EndedAt: &tc.ended, DisconnectionReason: "user_hangup"}
		if got := disconnectionReason(c, p); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
