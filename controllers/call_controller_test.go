package controllers_test

// The Call reconciler on the simulated carrier: a Call applied as a
// resource is dialed, answered or not, recorded and analyzed; it is
// archived to the history store and deleted after its retention; its
// recording expires once it has left the cluster.

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// newCallOrganization creates an organization with an agent and returns
// the namespace and the agent's id.
func newCallOrganization(t *testing.T) (ns, agentID string) {
	t.Helper()
	ns = newOrganization(t)
	return ns, testsupport.CreateAgent(t, k8s, ns, "reminder", func(*switchboardv1.AgentSpec) {}).ResolvedID()
}

func TestCallReadyConditionCompleted(t *testing.T) {
	suite.Need(t)
	ns, agentID := newCallOrganization(t)
	tests := []struct{ name, to, disposition string }{
		{"answered", "+14155551234", "answered"},
		{"voicemail", "+14155550003", "answering_machine"},
		{"busy", "+14155550001", "busy"},
	}
	for _, tt := range tests {
		testsupport.CreateCall(t, k8s, ns, tt.name, agentID, tt.to)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := testsupport.WaitCallFinished(t, k8s, ns, tt.name)
			g.Expect(c.Status.Phase).To(Equal(switchboardv1.CallEnded))
			g.Expect(string(c.Status.Disposition)).To(Equal(tt.disposition))
			g.Expect(c.Status.Analysis).NotTo(BeNil())
			g.Expect(c.Status.CallID).To(MatchRegexp(`^call_[0-9a-f]{32}$`))
			ready := testsupport.Ready(g, c.Status.Conditions)
			g.Expect(ready.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(ready.Reason).To(Equal(switchboardv1.ReasonCompleted))
			g.Expect(ready.Message).To(Equal(c.Status.Analysis.Summary))
			g.Expect(ready.ObservedGeneration).To(Equal(c.Generation))
			g.Expect(c.Status.ObservedGeneration).To(Equal(c.Generation))
			g.Expect(c.Status.ObservedGeneration).To(BeNumerically(">", 0))
		})
	}
}

// An answered call goes through every state for real: dialed from the
// agent's number, answered, hung up by the agent, recorded, analyzed.
func TestCallLifecycleOnSimulatedCarrier(t *testing.T) {
	suite.Need(t)
	g := NewWithT(t)
	ns, agentID := newCallOrganization(t)
	testsupport.CreateCall(t, k8s, ns, "lifecycle", agentID, "+14155551234")

	c := testsupport.WaitCallFinished(t, k8s, ns, "lifecycle")
	g.Expect(c.Spec.Source).To(Equal(switchboardv1.SourceKubectl))
	g.Expect(c.Status.Phase).To(Equal(switchboardv1.CallEnded))
	g.Expect(c.Status.Disposition).To(Equal(switchboardv1.DispositionAnswered))
	g.Expect(c.Status.DisconnectionReason).To(Equal("agent_hangup"))
	g.Expect(c.Status.FromNumber).To(Equal(testsupport.AgentFrom))
	g.Expect(c.Status.StartedAt).NotTo(BeNil())
	g.Expect(c.Status.Recording).NotTo(BeNil())
	g.Expect(filepath.Join(recordDir, ns, c.Status.CallID+".wav")).To(BeARegularFile())
	g.Expect(c.Status.Analysis).NotTo(BeNil())
	g.Expect(c.Status.Analysis.Summary).To(ContainSubstring("answered"))

	// The transcript is in the history store, never in the Call.
	transcript, err := historyStore.GetTranscript(context.Background(), ns, c.Status.CallID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(transcript.Turns).NotTo(BeEmpty())
	g.Expect(transcript.Turns[0].Speaker).To(Equal("agent"))
	raw, err := json.Marshal(c)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(raw)).NotTo(ContainSubstring(transcript.Turns[len(transcript.Turns)-1].Text))

	// `kubectl describe` tells an operator on call what happened.
	kc := controlPlane.Kubectl(t)
	var out string
	g.Eventually(func(g Gomega) {
		out = kc.MustRun(t, "describe", "call", "lifecycle", "-n", ns).Stdout
		for _, reason := range []string{"Dialing", "Ended", "RecordingStored", "Analyzed"} {
			g.Expect(out).To(MatchRegexp(`(?m)^\s+Normal\s+`+reason+`\s+`), "no %s event", reason)
		}
	}, resWait, 100*time.Millisecond).Should(Succeed(), func() string { return out })
	g.Expect(out).To(ContainSubstring("Calling +14155551234 from " + testsupport.AgentFrom))
	g.Expect(out).NotTo(MatchRegexp(`(?m)^\s+Warning\s+`))
}

// A stop asked for before the call's natural end ends it as api_hangup,
// as the REST API's 202 promised, even when the reconciler gets to the
// stop only after that end: here its clock is a talk's length ahead when
// the stop arrives, as a busy operator's would be late.
func TestStopAskedBeforeTheEndWinsWhenActedOnLate(t *testing.T) {
	suite.Need(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns, agentID := newCallOrganization(t)
	call := testsupport.CreateCall(t, k8s, ns, "late-stop", agentID, "+14155551234")
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(call), call)).To(Succeed())
		g.Expect(call.Status.StartedAt).NotTo(BeNil())
	}, resWait, 10*time.Millisecond).Should(Succeed())
	answered := call.Status.StartedAt.Add(timings.Ring)
	time.Sleep(time.Until(answered.Add(timings.Talk / 4))) // talking, well before its end

	requested := time.Now()
	callClock.skip(t, timings.Talk)
	patch := client.MergeFrom(call.DeepCopy())
	call.Spec.Stop = true
	call.Annotations = map[string]string{switchboardv1.StopRequestedAtAnnotation: requested.Format(time.RFC3339Nano)}
	g.Expect(k8s.Patch(ctx, call, patch)).To(Succeed()) // as POST /v1/calls/{call_id}/stop does

	c := testsupport.WaitCallFinished(t, k8s, ns, "late-stop")
	g.Expect(c.Status.Disposition).To(Equal(switchboardv1.DispositionAnswered))
	g.Expect(c.Status.DisconnectionReason).To(Equal("api_hangup"))
	g.Expect(c.Status.StoppedAt.Time).To(BeTemporally("~", requested, time.Millisecond))
	g.Expect(c.Status.EndedAt.Time).To(BeTemporally("~", requested, time.Millisecond))
	g.Expect(*c.Status.DurationMS).To(BeNumerically("<", timings.Talk.Milliseconds()/2), "cut short when asked")
}

// A finished Call is written to the history store while it is still in the
// cluster, and deleted from the cluster only once its retention has
// passed: it is always in one place or the other.
func TestCallArchivedThenDeletedAfterRetention(t *testing.T) {
	suite.Need(t)
	g := NewWithT(t)
	ns, agentID := newCallOrganization(t)
	testsupport.CreateCall(t, k8s, ns, "archived", agentID, "+14155550001")
	c := testsupport.WaitCallFinished(t, k8s, ns, "archived")
	waitArchived(t, c)
	g.Consistently(func() error {
		return k8s.Get(context.Background(), client.ObjectKeyFromObject(c), &switchboardv1.Call{})
	}, 500*time.Millisecond, 100*time.Millisecond).Should(Succeed(), "deleted before its retention")

	removeAfterRetention(t, c)
	stored, err := historyStore.GetCall(context.Background(), ns, c.Status.CallID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stored.Status.Phase).To(Equal(switchboardv1.CallEnded))
	g.Expect(stored.Status.Disposition).To(Equal(switchboardv1.DispositionBusy))
	g.Expect(stored.Status.Analysis).To(Equal(c.Status.Analysis))
}

// A recording is deleted after the recording retention once its call has
// left the cluster; the archived call stays, without it.
func TestRecordingRetention(t *testing.T) {
	suite.Need(t)
	g := NewWithT(t)
	ns, agentID := newCallOrganization(t)
	testsupport.CreateCall(t, k8s, ns, "recorded", agentID, "+14155551234")
	c := testsupport.WaitCallFinished(t, k8s, ns, "recorded")
	g.Expect(c.Status.Recording).NotTo(BeNil())
	file := filepath.Join(recordDir, ns, c.Status.CallID+".wav")
	g.Expect(file).To(BeARegularFile())
	transcript, err := historyStore.GetTranscript(context.Background(), ns, c.Status.CallID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(transcript.Turns).NotTo(BeEmpty())
	waitArchived(t, c)
	g.Consistently(func() string { return file }, recordingRetention+time.Second, 200*time.Millisecond).
		Should(BeARegularFile(), "a recording expired while its call was in the cluster")

	removeAfterRetention(t, c)
	g.Eventually(func() error {
		_, err := os.Stat(file)
		return err
	}, 10*time.Second, 100*time.Millisecond).Should(MatchError(fs.ErrNotExist))
	g.Eventually(func(g Gomega) {
		stored, err := historyStore.GetCall(context.Background(), ns, c.Status.CallID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(stored.Status.Recording).To(BeNil())
		g.Expect(stored.Status.Analysis).To(Equal(c.Status.Analysis))
		// The transcript is personal data too, deleted with the recording.
		_, err = historyStore.GetTranscript(context.Background(), ns, c.Status.CallID)
		g.Expect(err).To(MatchError(history.ErrNotFound))
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
}

// waitArchived waits until the history store holds c.
func waitArchived(t *testing.T, c *switchboardv1.Call) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		_, err := historyStore.GetCall(context.Background(), c.Namespace, c.Status.CallID)
		return err
	}, resWait, resPoll).Should(Succeed(), "call %s never archived", c.Status.CallID)
}

// removeAfterRetention moves the call reconciler's clock past the call
// retention, has it look at c again (a label; a Call's own status writes
// are what move it otherwise) and waits until c has left the cluster.
func removeAfterRetention(t *testing.T, c *switchboardv1.Call) {
	t.Helper()
	g := NewWithT(t)
	callClock.skip(t, callRetention)
	patch := client.MergeFrom(c.DeepCopy())
	c.Labels = map[string]string{"test": "retention-passed"}
	g.Expect(k8s.Patch(context.Background(), c, patch)).To(Succeed())
	g.Eventually(func() bool {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(c), &switchboardv1.Call{})
		return apierrors.IsNotFound(err)
	}, resWait, resPoll).Should(BeTrue(), "call %s still in the cluster", c.Name)
}
