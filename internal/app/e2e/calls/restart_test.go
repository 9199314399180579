package calls_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
)

// TestRestartLosesNothing stops the operator while calls are ringing,
// talking and queued, lets them end while it is down, and starts a new
// one: every call must reach its true final state, with its recording and
// analysis, and nothing may stay stuck.
func TestRestartLosesNothing(t *testing.T) {
	g := NewWithT(t)
	o := NewOrg(t)
	want := map[string]string{} // call_id -> disposition
	for number, disposition := range map[string]string{
		"+14155551001": "answered", "+14155551002": "answered", "+14155550003": "answering_machine",
		"+14155550001": "busy", "+14155550002": "no_answer",
	} {
		want[o.CreateCall(t, number, nil)] = disposition
	}
	g.Eventually(func() bool {
		for id := range want {
			if o.GetCall(t, id)["status"] == "in_progress" {
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond).Should(BeTrue(), "no call went out before the restart")

	Operator.Stop()

	// While the operator is down: a platform team applies a Call, and every
	// call in flight reaches its end on the carrier.
	queued := &switchboardv1.Call{
		ObjectMeta: metav1.ObjectMeta{Namespace: o.Ns, Name: "applied-while-down"},
		Spec: switchboardv1.CallSpec{AgentID: o.AgentID, ToNumber: "+14155551003",
			Variables: JSONObject(`{"customer_name":"Grace"}`)},
	}
	g.Expect(K8s.Create(context.Background(), queued)).To(Succeed())
	time.Sleep(TestTimings.Ring + TestTimings.Talk) // downtime outlasting every call

	restarted, err := StartOperator(true)
	g.Expect(err).NotTo(HaveOccurred())
	Operator = restarted

	for id, disposition := range want {
		call := o.WaitAnalyzed(t, id)
		g.Expect(call).To(HaveKeyWithValue("status", "ended"), id)
		g.Expect(call).To(HaveKeyWithValue("disposition", disposition), id)
		// The end is the carrier's, not the restart's.
		started, _ := time.Parse(time.RFC3339, call["started_at"].(string))
		ended, _ := time.Parse(time.RFC3339, call["ended_at"].(string))
		g.Expect(ended.Sub(started)).To(BeNumerically("<=", TestTimings.Ring+TestTimings.Talk+time.Millisecond), id)
		if disposition == "answered" || disposition == "answering_machine" {
			g.Expect(call["recording_url"]).NotTo(BeNil(), id)
		}
	}
	g.Eventually(func() string {
		var c switchboardv1.Call
		g.Expect(K8s.Get(context.Background(), client.ObjectKeyFromObject(queued), &c)).To(Succeed())
		return string(c.Status.Disposition)
	}, 20*time.Second, 50*time.Millisecond).Should(Equal("answered"))

	// Nothing stuck: every call of the org is final and Ready.
	var calls switchboardv1.CallList
	g.Eventually(func() []string {
		g.Expect(K8s.List(context.Background(), &calls, client.InNamespace(o.Ns))).To(Succeed())
		var notDone []string
		for _, c := range calls.Items {
			if !apimeta.IsStatusConditionTrue(c.Status.Conditions, switchboardv1.ReadyCondition) {
				notDone = append(notDone, c.Name)
			}
		}
		return notDone
	}, 20*time.Second, 50*time.Millisecond).Should(BeEmpty())
	g.Expect(calls.Items).To(HaveLen(len(want) + 1))
}
