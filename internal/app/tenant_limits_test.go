package app_test

// Limits that keep one organization from hurting the others: the defaults
// of the binary's flags, the endpoint limit, and the same limits for
// Calls and endpoints applied with kubectl.

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/app"
	"github.com/switchboard-dev/switchboard/internal/quota"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

func TestDefaultLimitsHoldWithoutAnnotations(t *testing.T) {
	g := NewWithT(t)
	withOperator(t, func(o *app.Options) {
		o.SimTimings = slowCarrier
		o.Quota = quota.Limits{CreateRate: 100, CreateBurst: 100, ActiveCalls: 1, WebhookEndpoints: 1}
	})
	o := newOrg(t)
	usage := do(t, "GET", "/v1/concurrency", o.key, nil)
	g.Expect(usage.body).To(And(HaveKeyWithValue("concurrency_limit", BeNumerically("==", 1)),
		HaveKeyWithValue("create_rate_limit", BeNumerically("==", 100)),
		HaveKeyWithValue("create_burst_limit", BeNumerically("==", 100)),
		HaveKeyWithValue("webhook_endpoint_limit", BeNumerically("==", 1))), "%s", usage.raw)

	o.createCall(t, "+14155550170", nil)
	refused := do(t, "POST", "/v1/calls", o.key, o.callBody("+14155550171", nil))
	g.Expect(refused.status).To(Equal(http.StatusTooManyRequests), "%s", refused.raw)
	g.Expect(detail(t, refused)["error_code"]).To(Equal("concurrency_limit_reached"))

	rc := newReceiver(t, nil)
	g.Expect(do(t, "POST", "/v1/webhook-endpoints", o.key, map[string]any{"url": rc.url()}).status).To(Equal(http.StatusCreated))
	over := do(t, "POST", "/v1/webhook-endpoints", o.key, map[string]any{"url": rc.url()})
	g.Expect(over.status).To(Equal(http.StatusUnprocessableEntity), "%s", over.raw)
	g.Expect(detail(t, over)["error_code"]).To(Equal("webhook_endpoint_limit_reached"))
	g.Expect(detail(t, over)["error"]).To(ContainSubstring("limit of 1"))
	var eps switchboardv1.WebhookEndpointList
	g.Expect(k8s.List(context.Background(), &eps, client.InNamespace(o.ns))).To(Succeed())
	g.Expect(eps.Items).To(HaveLen(1), "a refused request creates nothing")

	// The platform team lifts a limit for one organization.
	annotateOrg(t, o, map[string]string{quota.WebhookEndpointsAnnotation: quota.Unlimited})
	g.Expect(do(t, "POST", "/v1/webhook-endpoints", o.key, map[string]any{"url": rc.url()}).status).To(Equal(http.StatusCreated))
}

func TestEndpointLimitHoldsUnderConcurrentCreates(t *testing.T) {
	g := NewWithT(t)
	o := newOrg(t)
	annotateOrg(t, o, map[string]string{quota.WebhookEndpointsAnnotation: "3"})
	rc := newReceiver(t, nil)
	statuses := make(chan int, 10)
	for range 10 {
		go func() {
			statuses <- do(t, "POST", "/v1/webhook-endpoints", o.key, map[string]any{"url": rc.url()}).status
		}()
	}
	created := 0
	for range 10 {
		if <-statuses == http.StatusCreated {
			created++
		}
	}
	g.Expect(created).To(Equal(3), "10 creates at once, a limit of 3")
}

// A Call applied with kubectl meets the limits the REST API holds its
// calls to: it fails before it is dialed instead of being refused.
func TestAppliedCallsHeldToLimits(t *testing.T) {
	g := NewWithT(t)
	withOperator(t, func(o *app.Options) { o.SimTimings = slowCarrier })
	o := newOrg(t)
	annotateOrg(t, o, map[string]string{quota.ActiveCallsAnnotation: "2"})
	names := []string{"applied-a", "applied-b", "applied-c", "applied-d"}
	for _, name := range names {
		testsupport.CreateCall(t, k8s, o.ns, name, o.agentID, "+14155550172")
	}
	failedWith := func(ns, name string) func(Gomega) string {
		return func(g Gomega) string {
			var c switchboardv1.Call
			g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &c)).To(Succeed())
			g.Expect(c.Status.Phase).NotTo(BeEmpty())
			if c.Status.Failure == nil {
				return string(c.Status.Phase)
			}
			return c.Status.Failure.ErrorCode
		}
	}
	for _, name := range names[:2] {
		g.Eventually(failedWith(o.ns, name), resWait, resPoll).Should(Equal(string(switchboardv1.CallInProgress)), name)
	}
	for _, name := range names[2:] {
		g.Eventually(failedWith(o.ns, name), resWait, resPoll).Should(Equal("concurrency_limit_reached"), name)
	}

	// The create rate, shared with the REST API.
	rated := newOrg(t)
	annotateOrg(t, rated, map[string]string{quota.CreateRateAnnotation: "0.01", quota.CreateBurstAnnotation: "1"})
	testsupport.CreateCall(t, k8s, rated.ns, "rated-a", rated.agentID, "+14155550173")
	g.Eventually(failedWith(rated.ns, "rated-a"), resWait, resPoll).Should(Equal(string(switchboardv1.CallInProgress)))
	refused := do(t, "POST", "/v1/calls", rated.key, rated.callBody("+14155550173", nil))
	g.Expect(refused.status).To(Equal(http.StatusTooManyRequests), "the applied call took the burst: %s", refused.raw)
	testsupport.CreateCall(t, k8s, rated.ns, "rated-b", rated.agentID, "+14155550173")
	g.Eventually(failedWith(rated.ns, "rated-b"), resWait, resPoll).Should(Equal("rate_limited"))

	// Size: 16 KiB of metadata at most; 100 variables at most (refused by
	// the apiserver at apply).
	fat := &switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Namespace: rated.ns, Name: "fat"},
		Spec: switchboardv1.CallSpec{AgentID: rated.agentID, ToNumber: "+14155550174",
			Metadata: &apiextensionsv1.JSON{Raw: []byte(`{"blob":"` + strings.Repeat("x", 17<<10) + `"}`)}}}
	g.Expect(k8s.Create(context.Background(), fat)).To(Succeed())
	g.Eventually(failedWith(rated.ns, "fat"), resWait, resPoll).Should(Equal("call_too_large"))
	vars := make([]string, 101)
	for i := range vars {
		vars[i] = `"v` + strings.Repeat("x", i) + `":1`
	}
	many := &switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Namespace: rated.ns, Name: "many"},
		Spec: switchboardv1.CallSpec{AgentID: rated.agentID, ToNumber: "+14155550174",
			Variables: &apiextensionsv1.JSON{Raw: []byte("{" + strings.Join(vars, ",") + "}")}}}
	err := k8s.Create(context.Background(), many)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "101 variables: %v", err)
	g.Expect(err.Error()).To(ContainSubstring("100"))
}

// An endpoint applied with kubectl beyond the organization's limit says so
// and receives no events.
func TestAppliedEndpointBeyondLimitReceivesNothing(t *testing.T) {
	g := NewWithT(t)
	o := newOrg(t)
	annotateOrg(t, o, map[string]string{quota.WebhookEndpointsAnnotation: "1"})
	within, beyond := newReceiver(t, nil), newReceiver(t, nil)
	first, _ := applyEndpoint(t, o.ns, within.url(), nil)
	second := &switchboardv1.WebhookEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: "second"},
		Spec: switchboardv1.WebhookEndpointSpec{URL: beyond.url()}}
	g.Expect(k8s.Create(context.Background(), second)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(second), second)).To(Succeed())
		ready := apimeta.FindStatusCondition(second.Status.Conditions, switchboardv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(switchboardv1.ReasonEndpointLimitReached))
		g.Expect(ready.Message).To(ContainSubstring("may have 1"))
	}, resWait, resPoll).Should(Succeed())

	id := o.createCall(t, "+14155550175", nil)
	o.waitAnalyzed(t, id)
	g.Eventually(func() int { return len(within.forCall(id)) }, resWait, resPoll).Should(Equal(3))
	g.Consistently(func() int { return len(beyond.forCall(id)) }, time.Second, 50*time.Millisecond).Should(BeZero())

	// Once the older endpoint is gone, the other one is within the limit.
	g.Expect(k8s.Delete(context.Background(), first)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(second), second)).To(Succeed())
		g.Expect(apimeta.IsStatusConditionTrue(second.Status.Conditions, switchboardv1.ReadyCondition)).To(BeTrue())
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
}

func TestRotatingADeclaredSecretIsRefused(t *testing.T) {
	g := NewWithT(t)
	o := newOrg(t)
	rc := newReceiver(t, nil)
	declared := newSecretObject(o.ns, "platform-secret", "whsec_"+randHex(24))
	g.Expect(k8s.Create(context.Background(), declared)).To(Succeed())
	ep, _ := applyEndpoint(t, o.ns, rc.url(), func(s *switchboardv1.WebhookEndpointSpec) {
		s.SecretRef = &switchboardv1.SecretReference{Name: "platform-secret"}
	})
	r := do(t, "POST", "/v1/webhook-endpoints/"+ep.ResolvedID()+"/rotate-secret", o.key, nil)
	g.Expect(r.status).To(Equal(http.StatusConflict), "%s", r.raw)
	g.Expect(detail(t, r)["error_code"]).To(Equal("secret_managed_in_cluster"))
	var now corev1.Secret
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(declared), &now)).To(Succeed())
	g.Expect(now.Data).To(Equal(declared.Data), "the Secret is untouched")
	g.Expect(now.ResourceVersion).To(Equal(declared.ResourceVersion))
}

// Only Switchboard creates Calls with source "api": config/policy's
// admission policy, enforced by the apiserver, refuses it from anyone else.
func TestCallSourceIsSetBySwitchboard(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	o := newOrg(t)
	// In the suite the operator runs as its service account, the user the
	// policy names.
	review, err := kubernetes.NewForConfigOrDie(managerConfig).AuthenticationV1().SelfSubjectReviews().
		Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(review.Status.UserInfo.Username).To(Equal("system:serviceaccount:switchboard-system:switchboard-manager"))
	kubectl := platformEngineerUnderCallSourcePolicy(t)
	claim := func(name string, source switchboardv1.CallSource) *switchboardv1.Call {
		return &switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: name},
			Spec: switchboardv1.CallSpec{AgentID: o.agentID, ToNumber: "+14155550176", Source: source,
				Variables: &apiextensionsv1.JSON{Raw: []byte(`{"customer_name":"Ada"}`)}}}
	}
	// The apiserver takes a moment to load a new policy; dry runs wait
	// for it without creating anything.
	g.Eventually(func() bool {
		return apierrors.IsForbidden(kubectl.Create(ctx, claim("probe", switchboardv1.SourceAPI), client.DryRunAll))
	}, 10*time.Second, 50*time.Millisecond).Should(BeTrue())

	err = kubectl.Create(ctx, claim("claims-api", switchboardv1.SourceAPI))
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring(`spec.source "api" is set by Switchboard`))

	applied := claim("applied", "")
	g.Expect(kubectl.Create(ctx, applied)).To(Succeed())
	g.Expect(applied.Spec.Source).To(Equal(switchboardv1.SourceKubectl))
	// Switchboard's own REST API still creates calls with source api.
	id := o.createCall(t, "+14155550176", nil)
	g.Expect(o.getCall(t, id)["source"]).To(Equal("api"))
}

// Only Switchboard assigns a call to a replica: a Call applied with its own
// switchboard.dev/worker label would run outside every replica's capacity,
// so the policy refuses it, and refuses relabelling a Call, from anyone
// but the manager.
func TestWorkerLabelIsSetBySwitchboard(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	o := newOrg(t)
	kubectl := platformEngineerUnderCallSourcePolicy(t)
	call := func(name string, labels map[string]string) *switchboardv1.Call {
		return &switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: name, Labels: labels},
			Spec: switchboardv1.CallSpec{AgentID: o.agentID, ToNumber: "+14155550177",
				Variables: &apiextensionsv1.JSON{Raw: []byte(`{"customer_name":"Ada"}`)}}}
	}
	labelled := map[string]string{switchboardv1.WorkerLabel: "switchboard-manager-0"}
	g.Eventually(func() bool {
		return apierrors.IsForbidden(kubectl.Create(ctx, call("probe", labelled), client.DryRunAll))
	}, 10*time.Second, 50*time.Millisecond).Should(BeTrue())

	err := kubectl.Create(ctx, call("labelled", labelled))
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("the label switchboard.dev/worker is set by Switchboard"))

	// Other labels are the platform team's own; the call is assigned and
	// runs as any other.
	applied := call("applied", map[string]string{"team": "billing"})
	g.Expect(kubectl.Create(ctx, applied)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(applied), applied)).To(Succeed())
		g.Expect(applied.Labels).To(HaveKey(switchboardv1.WorkerLabel))
	}, resWait, resPoll).Should(Succeed())
	// Moving it to another replica, or out of its replica, is refused too.
	for _, worker := range []string{"switchboard-manager-9", ""} {
		moved := applied.DeepCopy()
		if worker == "" {
			delete(moved.Labels, switchboardv1.WorkerLabel)
		} else {
			moved.Labels[switchboardv1.WorkerLabel] = worker
		}
		// A patch, as `kubectl label` sends: it applies to the latest
		// version, so the reconciler's status writes cannot turn the
		// refusal into a conflict.
		err = kubectl.Patch(ctx, moved, client.MergeFrom(applied))
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%q: %v", worker, err)
		g.Expect(err.Error()).To(ContainSubstring("cannot be added, changed or removed"))
	}
	// Its other labels stay the platform team's to change.
	g.Eventually(func() error {
		var now switchboardv1.Call
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(applied), &now); err != nil {
			return err
		}
		now.Labels["team"] = "support"
		return kubectl.Update(ctx, &now)
	}, resWait, resPoll).Should(Succeed())
}

// loadCallSourcePolicy reads config/policy/call_source.yaml.
// platformEngineerUnderCallSourcePolicy installs the admission policy of
// config/policy/call_source.yaml for the test and returns a client acting
// as a platform engineer (a cluster admin, not Switchboard's manager).
func platformEngineerUnderCallSourcePolicy(t *testing.T) client.Client {
	t.Helper()
	g, ctx := NewWithT(t), context.Background()
	policy, binding := loadCallSourcePolicy(t)
	g.Expect(k8s.Create(ctx, policy)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(ctx, policy) })
	g.Expect(k8s.Create(ctx, binding)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(ctx, binding) })

	cfg := rest.CopyConfig(restConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "platform-engineer", Groups: []string{"system:masters"}}
	kubectl, err := client.New(cfg, client.Options{Scheme: app.NewScheme()})
	g.Expect(err).NotTo(HaveOccurred())
	return kubectl
}

func loadCallSourcePolicy(t *testing.T) (*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyBinding) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "policy", "call_source.yaml"))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	docs := strings.Split(string(raw), "\n---\n")
	NewWithT(t).Expect(docs).To(HaveLen(2))
	policy, binding := &admissionv1.ValidatingAdmissionPolicy{}, &admissionv1.ValidatingAdmissionPolicyBinding{}
	NewWithT(t).Expect(yaml.Unmarshal([]byte(docs[0]), policy)).To(Succeed())
	NewWithT(t).Expect(yaml.Unmarshal([]byte(docs[1]), binding)).To(Succeed())
	// kustomize's namePrefix names them switchboard-...; the binding
	// already refers to the prefixed name.
	policy.Name = binding.Spec.PolicyName
	binding.Name = "switchboard-" + binding.Name
	return policy, binding
}
