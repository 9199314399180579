package sip_test

// SIPTrunks as a platform team sees them: apply-time validation, and the
// Ready condition, columns and Events the operator reports after probing
// real SIP peers (sipp) with OPTIONS.

import (
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"

	"strconv"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/app"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/siptest"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// TestSIPTrunkStatus runs one operator with SIP enabled for the trunk
// cases driven by changes (restarting it per case would cost more than the
// cases).
func TestSIPTrunkStatus(t *testing.T) {
	WithOperator(t, func(o *app.Options) {
		o.SIP.ProbeInterval = LongProbeInterval
	})
	t.Run("reachable trunk shows in kubectl get", TestTrunkReachable)
	t.Run("dead trunk is unreachable", TestTrunkUnreachable)
	t.Run("missing Secret, then created", TestTrunkSecretAppears)
	t.Run("wrong password, then fixed", TestTrunkWrongPassword)
	t.Run("address changed", TestTrunkAddressChanged)
}

// A trunk that was down is probed again after the interval and turns Ready
// once it answers, with no change to the trunk.
func TestSIPTrunkReprobedPeriodically(t *testing.T) {
	WithOperator(t, func(o *app.Options) {
		o.SIP.ProbeInterval = ShortProbeInterval
	})
	g := NewWithT(t)
	ns := ResNamespace(t)
	port := siptest.FreePort(t, "udp")
	testsupport.CreateTrunk(t, K8s, ns, "carrier", "sip:127.0.0.1:"+strconv.Itoa(port), "")
	down := WaitTrunkReady(t, ns, "carrier", metav1.ConditionFalse, switchboardv1.ReasonUnreachable)
	siptest.StartSippOn(t, "udp", port, siptest.InlineScenario(t, OptionsOK)...)
	up := WaitTrunkReady(t, ns, "carrier", metav1.ConditionTrue, switchboardv1.ReasonReachable)
	g.Expect(up.Status.LastProbeAt.After(down.Status.LastProbeAt.Time)).To(BeTrue())
	g.Expect(up.Generation).To(Equal(down.Generation))
}
