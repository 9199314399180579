package calls_test

// What platform teams and operators on call see of the custom resources
// end to end, beside the REST API: the printed tables of calls placed over
// REST, Calls applied as resources and read over REST, and Agents that
// REST cannot tell apart. The reconcilers' own behaviour is tested in
// controllers/.

import (
	"context"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
	"github.com/switchboard-dev/switchboard/internal/workers"
)

func TestKubectlGetCallsShowsColumns(t *testing.T) {
	g := NewWithT(t)
	kc := ControlPlane.Kubectl(t)
	o := NewOrg(t)
	id := o.CreateCall(t, "+14155551234", nil)
	o.WaitAnalyzed(t, id)
	name := "call-" + strings.TrimPrefix(id, "call_")

	out := kc.MustRun(t, "get", "calls", "-n", o.Ns).Stdout
	lines := strings.Split(strings.TrimSpace(out), "\n")
	g.Expect(lines).To(HaveLen(2), out)
	g.Expect(lines[0]).To(MatchRegexp(`^NAME\s+CALL ID\s+AGENT\s+TO\s+STATUS\s+DISPOSITION\s+DURATION\s+AGE\s*$`), out)
	fields := strings.Fields(lines[1])
	g.Expect(fields).To(HaveLen(8), out)
	g.Expect(fields[:7]).To(Equal([]string{name, id, o.AgentID, "+14155551234", "ended", "answered",
		TestTimings.Talk.Round(time.Second).String()}), out)

	// -o wide adds source, reason, error, the transfer and the worker that carried it.
	wide := kc.MustRun(t, "get", "calls", "-n", o.Ns, "-o", "wide").Stdout
	g.Expect(wide).To(MatchRegexp(`(?m)^NAME\s+CALL ID\s+AGENT\s+TO\s+STATUS\s+DISPOSITION\s+DURATION\s+AGE\s+SOURCE\s+REASON\s+ERROR\s+TRANSFER\s+TRANSFER TO\s+WORKER\s*$`), wide)
	g.Expect(wide).To(MatchRegexp(`(?m)^`+name+`\s+.*\s+answered\s+.*\s+api\s+agent_hangup\s+`+regexp.QuoteMeta(workers.DefaultOptions().ID)+`\s*$`), wide)
}

func TestKubectlGetSwitchboardCategory(t *testing.T) {
	g := NewWithT(t)
	kc := ControlPlane.Kubectl(t)
	o := NewOrg(t)
	list := &switchboardv1.NumberList{ObjectMeta: metav1.ObjectMeta{Namespace: o.Ns, Name: "do-not-call"},
		Spec: switchboardv1.NumberListSpec{Type: switchboardv1.DoNotCall, Numbers: []string{"+14155550199"}}}
	g.Expect(K8s.Create(context.Background(), list)).To(Succeed())
	id := o.CreateCall(t, "+14155551234", nil)
	name := "call-" + strings.TrimPrefix(id, "call_")

	out := kc.MustRun(t, "get", "switchboard", "-n", o.Ns).Stdout
	g.Expect(out).To(ContainSubstring("agent.switchboard.dev/reminder"), out)
	g.Expect(out).To(ContainSubstring("call.switchboard.dev/"+name), out)
	g.Expect(out).To(ContainSubstring("numberlist.switchboard.dev/do-not-call"), out)
	// Nothing but Switchboard's kinds.
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] != "NAME" {
			g.Expect(f[0]).To(MatchRegexp(`^(agent|call|numberlist)\.switchboard\.dev/`), out)
		}
	}
}

func TestKubectlDescribeCallShowsEvents(t *testing.T) {
	g := NewWithT(t)
	kc := ControlPlane.Kubectl(t)
	o := NewOrg(t)
	id := o.CreateCall(t, "+14155551234", nil)
	o.WaitAnalyzed(t, id)
	name := "call-" + strings.TrimPrefix(id, "call_")

	var out string
	g.Eventually(func(g Gomega) {
		out = kc.MustRun(t, "describe", "call", name, "-n", o.Ns).Stdout
		g.Expect(out).To(MatchRegexp(`(?m)^Events:\s*$`))
		for _, reason := range []string{"Dialing", "Ended", "RecordingStored", "Analyzed"} {
			g.Expect(out).To(MatchRegexp(`(?m)^\s+Normal\s+`+reason+`\s+`), "no %s event", reason)
		}
	}, ResWait, 100*time.Millisecond).Should(Succeed(), func() string { return out })
	g.Expect(out).To(ContainSubstring("Calling +14155551234 from " + AgentFrom))
	g.Expect(out).To(ContainSubstring("Call ended: answered (agent_hangup)"))
	g.Expect(out).NotTo(MatchRegexp(`(?m)^\s+Warning\s+`))
}

func TestSampleCallAppliedWithKubectl(t *testing.T) {
	g := NewWithT(t)
	kc := ControlPlane.Kubectl(t)
	ns := ResNamespace(t)
	key := CreateKey(t, ns, "")
	samples := filepath.Join(RepoRoot, "config", "samples")
	kc.MustRun(t, "apply", "-n", ns, "-f", filepath.Join(samples, "switchboard_v1alpha1_agent.yaml"))
	kc.MustRun(t, "apply", "-n", ns, "-f", filepath.Join(samples, "switchboard_v1alpha1_numberlist.yaml"))
	res := kc.MustRun(t, "apply", "-n", ns, "-f", filepath.Join(samples, "switchboard_v1alpha1_call.yaml"))
	g.Expect(res.Stdout).To(ContainSubstring("call.switchboard.dev/smoke-test created"))

	var created switchboardv1.Call
	g.Expect(K8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "smoke-test"}, &created)).To(Succeed())
	g.Expect(created.Spec.Source).To(Equal(switchboardv1.SourceKubectl), "spec.source default")

	c := testsupport.WaitCallFinished(t, K8s, ns, "smoke-test")
	g.Expect(c.Status.Phase).To(Equal(switchboardv1.CallEnded))
	g.Expect(c.Status.Disposition).To(Equal(switchboardv1.DispositionAnswered))
	g.Expect(c.Status.DisconnectionReason).To(Equal("agent_hangup"))
	g.Expect(c.Status.FromNumber).To(Equal(AgentFrom))
	g.Expect(c.Status.Recording).NotTo(BeNil())
	g.Expect(c.Status.Analysis).NotTo(BeNil())
	g.Expect(c.Status.CallID).To(MatchRegexp(`^call_[0-9a-f]{32}$`))
	g.Expect(c.Status.CallID).To(Equal("call_" + strings.ReplaceAll(string(c.UID), "-", "")))
	ready := testsupport.Ready(g, c.Status.Conditions)
	g.Expect(ready.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(ready.Reason).To(Equal(switchboardv1.ReasonCompleted))

	// The REST API knows it by its call_id, with the org's key, once the
	// operator's cache has caught up with the analysis.
	var r Response
	g.Eventually(func() any {
		r = Do(t, "GET", "/v1/calls/"+c.Status.CallID, key, nil)
		return r.Body["analysis"]
	}, ResWait, ResPoll).ShouldNot(BeNil(), func() string { return string(r.Raw) })
	g.Expect(r.Status).To(Equal(http.StatusOK), string(r.Raw))
	g.Expect(r.Body).To(HaveKeyWithValue("call_id", c.Status.CallID))
	g.Expect(r.Body).To(HaveKeyWithValue("source", "kubectl"))
	g.Expect(r.Body).To(HaveKeyWithValue("status", "ended"))
	g.Expect(r.Body).To(HaveKeyWithValue("disposition", "answered"))
	g.Expect(r.Body).To(HaveKeyWithValue("agent_id", SampleAgentID))
	g.Expect(r.Body).To(HaveKeyWithValue("to_number", "+14155551234"))
	g.Expect(r.Body).To(HaveKeyWithValue("from_number", AgentFrom))
	g.Expect(r.Body).To(HaveKeyWithValue("variables", map[string]any{"customer_name": "Ada"}))
	g.Expect(r.Body).To(HaveKeyWithValue("metadata", map[string]any{"ticket": "OPS-42"}))
	g.Expect(r.Body["recording_url"]).To(HavePrefix(Operator.BaseURL + "/recordings/"))
	analysis, ok := r.Body["analysis"].(map[string]any)
	g.Expect(ok).To(BeTrue(), "analysis is not an object: %s", r.Raw)
	g.Expect(analysis["summary"]).To(ContainSubstring("answered"))
	g.Expect(analysis["extracted_data"]).To(Equal(map[string]any{
		"customer_name": "Ada", "confirmed": true, "party_size": 4.0}))

	// Another organization's key does not see it.
	other := NewOrg(t)
	g.Expect(Do(t, "GET", "/v1/calls/"+c.Status.CallID, other.Key, nil).Status).To(Equal(http.StatusNotFound))
}

func TestCallResourceRefusedByNumberLists(t *testing.T) {
	o := NewOrg(t)
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(K8s.Create(ctx, &switchboardv1.NumberList{ObjectMeta: metav1.ObjectMeta{Namespace: o.Ns, Name: "do-not-call"},
		Spec: switchboardv1.NumberListSpec{Type: switchboardv1.DoNotCall, Numbers: []string{"+14155550199"}}})).To(Succeed())
	g.Expect(K8s.Create(ctx, &switchboardv1.NumberList{ObjectMeta: metav1.ObjectMeta{Namespace: o.Ns, Name: "premium-rate"},
		Spec: switchboardv1.NumberListSpec{Type: switchboardv1.Blocked, Prefixes: []string{"+1900"}}})).To(Succeed())
	// Wait until the operator's number index holds both lists (the REST API
	// reads the same index as the reconciler).
	for number, code := range map[string]string{"+14155550199": "dnc_blocked", "+19005550123": "number_blocked"} {
		g.Eventually(func() any {
			r := Do(t, "POST", "/v1/calls", o.Key, map[string]any{"agent_id": o.AgentID, "to_number": number,
				"variables": map[string]any{"customer_name": "Ada"}})
			if r.Status != http.StatusUnprocessableEntity {
				return r.Status
			}
			return Detail(t, r)["error_code"]
		}, ResWait, ResPoll).Should(Equal(code))
	}

	tests := []struct{ name, to, code string }{
		{"dnc", "+14155550199", "dnc_blocked"},
		{"premium", "+19005550123", "number_blocked"},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			g := NewWithT(t)
			testsupport.CreateCall(t, K8s, o.Ns, tt.name, o.AgentID, tt.to)
			c := testsupport.WaitCallFinished(t, K8s, o.Ns, tt.name)
			g.Expect(c.Status.Phase).To(Equal(switchboardv1.CallFailed))
			g.Expect(c.Status.Failure).NotTo(BeNil())
			g.Expect(c.Status.Failure.ErrorCode).To(Equal(tt.code))
			g.Expect(c.Status.Failure.Message).To(ContainSubstring(tt.to))
			g.Expect(c.Status.StartedAt).To(BeNil(), "a refused call never went out")
			g.Expect(c.Status.Disposition).To(BeEmpty())
			ready := testsupport.Ready(g, c.Status.Conditions)
			g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(ready.Reason).To(Equal(switchboardv1.ReasonFailed))
			g.Expect(ready.Message).To(HavePrefix(tt.code + ": "))

			// The REST API reads the operator's cache, a moment behind.
			call := ResWaitRESTStatus(t, o.Key, c.Status.CallID, "failed")
			g.Expect(call).To(HaveKeyWithValue("source", "kubectl"))
		})
	}
}

func TestCallResourceFailures(t *testing.T) {
	o := NewOrg(t)
	tests := []struct{ name, agentID, to, code string }{
		{"unknown-agent", "00000000-0000-4000-8000-000000000001", "+14155551234", "agent_not_found"},
		{"dispatch-failed", o.AgentID, "+14155550009", "dispatch_failed"},
		{"dispatch-error", o.AgentID, "+14155550008", "dispatch_error"},
	}
	for _, tt := range tests {
		testsupport.CreateCall(t, K8s, o.Ns, tt.name, tt.agentID, tt.to)
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			g := NewWithT(t)
			c := testsupport.WaitCallFinished(t, K8s, o.Ns, tt.name)
			g.Expect(c.Status.Phase).To(Equal(switchboardv1.CallFailed))
			g.Expect(c.Status.Failure).NotTo(BeNil())
			g.Expect(c.Status.Failure.ErrorCode).To(Equal(tt.code))
			g.Expect(c.Status.Failure.Message).NotTo(BeEmpty())
			g.Expect(c.Status.CallID).To(MatchRegexp(`^call_[0-9a-f]{32}$`))
			ready := testsupport.Ready(g, c.Status.Conditions)
			g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(ready.Reason).To(Equal(switchboardv1.ReasonFailed))
			g.Expect(c.Status.ObservedGeneration).To(Equal(c.Generation))

			call := ResWaitRESTStatus(t, o.Key, c.Status.CallID, "failed")
			g.Expect(call["analysis"]).To(BeNil())
		})
	}

	// On call, kubectl shows why each call failed.
	g := NewWithT(t)
	kc := ControlPlane.Kubectl(t)
	wide := kc.MustRun(t, "get", "calls", "-n", o.Ns, "-o", "wide").Stdout
	for _, tt := range tests {
		g.Expect(wide).To(MatchRegexp(`(?m)^`+tt.name+`\s+call_[0-9a-f]{32}\s+\S+\s+\`+tt.to+`\s+failed\s+\S+\s+kubectl\s+`+tt.code+
			// the worker that recorded the failure: the suite's one replica
			`\s+`+regexp.QuoteMeta(workers.DefaultOptions().ID)+`\s*$`), wide)
	}
	var out string
	g.Eventually(func(g Gomega) {
		out = kc.MustRun(t, "describe", "call", "dispatch-failed", "-n", o.Ns).Stdout
		g.Expect(out).To(MatchRegexp(`(?m)^\s+Warning\s+Failed\s+.*dispatch_failed: `))
	}, ResWait, 100*time.Millisecond).Should(Succeed(), func() string { return out })
}

func TestDuplicateAgentIDs(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := ResNamespace(t)
	key := CreateKey(t, ns, "")
	const id = "5d6e7f80-1a2b-4c3d-8e4f-a0b1c2d3e4f5"
	first := CreateAgent(t, ns, "first", func(s *switchboardv1.AgentSpec) { s.ID = id })
	second := CreateAgent(t, ns, "second", func(s *switchboardv1.AgentSpec) { s.ID = strings.ToUpper(id) })

	readyOf := func(a *switchboardv1.Agent) func(Gomega) metav1.Condition {
		return func(g Gomega) metav1.Condition {
			var cur switchboardv1.Agent
			g.Expect(K8s.Get(ctx, client.ObjectKeyFromObject(a), &cur)).To(Succeed())
			g.Expect(cur.Status.AgentID).To(Equal(id))
			return testsupport.Ready(g, cur.Status.Conditions)
		}
	}
	duplicate := And(
		HaveField("Status", metav1.ConditionFalse),
		HaveField("Reason", switchboardv1.ReasonDuplicateAgentID))
	g.Eventually(readyOf(first), ResWait, ResPoll).Should(duplicate)
	g.Eventually(readyOf(second), ResWait, ResPoll).Should(duplicate)
	g.Expect(readyOf(first)(g).Message).To(ContainSubstring("second"))
	g.Expect(readyOf(second)(g).Message).To(ContainSubstring("first"))

	// The REST API cannot tell them apart.
	body := map[string]any{"agent_id": id, "to_number": "+14155551234", "variables": map[string]any{"customer_name": "Ada"}}
	r := Do(t, "POST", "/v1/calls", key, body)
	g.Expect(r.Status).To(Equal(http.StatusNotFound), string(r.Raw))
	g.Expect(Detail(t, r)).To(HaveKeyWithValue("error_code", "agent_not_found"))
	g.Expect(CountCalls(t, ns)).To(BeZero())

	// Deleting one makes the other usable again.
	g.Expect(K8s.Delete(ctx, second)).To(Succeed())
	g.Eventually(readyOf(first), ResWait, ResPoll).Should(And(
		HaveField("Status", metav1.ConditionTrue),
		HaveField("Reason", switchboardv1.ReasonReconciled)))
	g.Eventually(func() int {
		return Do(t, "POST", "/v1/calls", key, body).Status
	}, ResWait, ResPoll).Should(Equal(http.StatusCreated))

	// So does changing spec.id of one of them, as the condition advises.
	third := CreateAgent(t, ns, "third", func(s *switchboardv1.AgentSpec) { s.ID = id })
	g.Eventually(readyOf(first), ResWait, ResPoll).Should(duplicate)
	g.Eventually(readyOf(third), ResWait, ResPoll).Should(duplicate)
	const moved = "6e7f8091-2b3c-4d4e-9f50-b1c2d3e4f506"
	g.Eventually(func() error {
		var cur switchboardv1.Agent
		if err := K8s.Get(ctx, client.ObjectKeyFromObject(third), &cur); err != nil {
			return err
		}
		cur.Spec.ID = moved
		return K8s.Update(ctx, &cur)
	}, ResWait, ResPoll).Should(Succeed())
	g.Eventually(readyOf(first), ResWait, ResPoll).Should(And(
		HaveField("Status", metav1.ConditionTrue),
		HaveField("Reason", switchboardv1.ReasonReconciled)))
	g.Eventually(func(g Gomega) {
		var cur switchboardv1.Agent
		g.Expect(K8s.Get(ctx, client.ObjectKeyFromObject(third), &cur)).To(Succeed())
		g.Expect(cur.Status.AgentID).To(Equal(moved))
		g.Expect(testsupport.Ready(g, cur.Status.Conditions).Status).To(Equal(metav1.ConditionTrue))
	}, ResWait, ResPoll).Should(Succeed())
}
