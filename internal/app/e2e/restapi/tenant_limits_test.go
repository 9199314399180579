package restapi_test

// Limits that keep one organization from hurting the others: the defaults
// of the binary's flags, the endpoint limit, and the same limits for
// Calls and endpoints applied with kubectl.

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/app"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
	"github.com/switchboard-dev/switchboard/internal/quota"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

func TestDefaultLimitsHoldWithoutAnnotations(t *testing.T) {
	g := NewWithT(t)
	WithOperator(t, func(o *app.Options) {
		o.SimTimings = SlowCarrier
		o.Quota = quota.Limits{CreateRate: 100, CreateBurst: 100, ActiveCalls: 1, WebhookEndpoints: 1}
	})
	o := NewOrg(t)
	usage := Do(t, "GET", "/v1/concurrency", o.Key, nil)
	g.Expect(usage.Body).To(And(HaveKeyWithValue("concurrency_limit", BeNumerically("==", 1)),
		HaveKeyWithValue("create_rate_limit", BeNumerically("==", 100)),
		HaveKeyWithValue("create_burst_limit", BeNumerically("==", 100)),
		HaveKeyWithValue("webhook_endpoint_limit", BeNumerically("==", 1))), "%s", usage.Raw)

	o.CreateCall(t, "+14155550170", nil)
	refused := Do(t, "POST", "/v1/calls", o.Key, o.CallBody("+14155550171", nil))
	g.Expect(refused.Status).To(Equal(http.StatusTooManyRequests), "%s", refused.Raw)
	g.Expect(Detail(t, refused)["error_code"]).To(Equal("concurrency_limit_reached"))

	rc := NewReceiver(t, nil)
	g.Expect(Do(t, "POST", "/v1/webhook-endpoints", o.Key, map[string]any{"url": rc.URL()}).Status).To(Equal(http.StatusCreated))
	over := Do(t, "POST", "/v1/webhook-endpoints", o.Key, map[string]any{"url": rc.URL()})
	g.Expect(over.Status).To(Equal(http.StatusUnprocessableEntity), "%s", over.Raw)
	g.Expect(Detail(t, over)["error_code"]).To(Equal("webhook_endpoint_limit_reached"))
	g.Expect(Detail(t, over)["error"]).To(ContainSubstring("limit of 1"))
	var eps switchboardv1.WebhookEndpointList
	g.Expect(K8s.List(context.Background(), &eps, client.InNamespace(o.Ns))).To(Succeed())
	g.Expect(eps.Items).To(HaveLen(1), "a refused request creates nothing")

	// The platform team lifts a limit for one organization.
	AnnotateOrg(t, o, map[string]string{quota.WebhookEndpointsAnnotation: quota.Unlimited})
	g.Expect(Do(t, "POST", "/v1/webhook-endpoints", o.Key, map[string]any{"url": rc.URL()}).Status).To(Equal(http.StatusCreated))
}

func TestEndpointLimitHoldsUnderConcurrentCreates(t *testing.T) {
	g := NewWithT(t)
	o := NewOrg(t)
	AnnotateOrg(t, o, map[string]string{quota.WebhookEndpointsAnnotation: "3"})
	rc := NewReceiver(t, nil)
	statuses := make(chan int, 10)
	for range 10 {
		go func() {
			statuses <- Do(t, "POST", "/v1/webhook-endpoints", o.Key, map[string]any{"url": rc.URL()}).Status
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
	WithOperator(t, func(o *app.Options) { o.SimTimings = SlowCarrier })
	o := NewOrg(t)
	AnnotateOrg(t, o, map[string]string{quota.ActiveCallsAnnotation: "2"})
	names := []string{"applied-a", "applied-b", "applied-c", "applied-d"}
	for _, name := range names {
		testsupport.CreateCall(t, K8s, o.Ns, name, o.AgentID, "+14155550172")
	}
	failedWith := func(ns, name string) func(Gomega) string {
		return func(g Gomega) string {
			var c switchboardv1.Call
			g.Expect(K8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &c)).To(Succeed())
			g.Expect(c.Status.Phase).NotTo(BeEmpty())
			if c.Status.Failure == nil {
				return string(c.Status.Phase)
			}
			return c.Status.Failure.ErrorCode
		}
	}
	for _, name := range names[:2] {
		g.Eventually(failedWith(o.Ns, name), ResWait, ResPoll).Should(Equal(string(switchboardv1.CallInProgress)), name)
	}
	for _, name := range names[2:] {
		g.Eventually(failedWith(o.Ns, name), ResWait, ResPoll).Should(Equal("concurrency_limit_reached"), name)
	}

	// The create rate, shared with the REST API.
	rated := NewOrg(t)
	AnnotateOrg(t, rated, map[string]string{quota.CreateRateAnnotation: "0.01", quota.CreateBurstAnnotation: "1"})
	testsupport.CreateCall(t, K8s, rated.Ns, "rated-a", rated.AgentID, "+14155550173")
	g.Eventually(failedWith(rated.Ns, "rated-a"), ResWait, ResPoll).Should(Equal(string(switchboardv1.CallInProgress)))
	refused := Do(t, "POST", "/v1/calls", rated.Key, rated.CallBody("+14155550173", nil))
	g.Expect(refused.Status).To(Equal(http.StatusTooManyRequests), "the applied call took the burst: %s", refused.Raw)
	testsupport.CreateCall(t, K8s, rated.Ns, "rated-b", rated.AgentID, "+14155550173")
	g.Eventually(failedWith(rated.Ns, "rated-b"), ResWait, ResPoll).Should(Equal("rate_limited"))

	// Size: 16 KiB of metadata at most; 100 variables at most (refused by
	// the apiserver at apply).
	fat := &switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Namespace: rated.Ns, Name: "fat"},
		Spec: switchboardv1.CallSpec{AgentID: rated.AgentID, ToNumber: "+14155550174",
			Metadata: &apiextensionsv1.JSON{Raw: []byte(`{"blob":"` + strings.Repeat("x", 17<<10) + `"}`)}}}
	g.Expect(K8s.Create(context.Background(), fat)).To(Succeed())
	g.Eventually(failedWith(rated.Ns, "fat"), ResWait, ResPoll).Should(Equal("call_too_large"))
	vars := make([]string, 101)
	for i := range vars {
		vars[i] = `"v` + strings.Repeat("x", i) + `":1`
	}
	many := &switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Namespace: rated.Ns, Name: "many"},
		Spec: switchboardv1.CallSpec{AgentID: rated.AgentID, ToNumber: "+14155550174",
			Variables: &apiextensionsv1.JSON{Raw: []byte("{" + strings.Join(vars, ",") + "}")}}}
	err := K8s.Create(context.Background(), many)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "101 variables: %v", err)
	g.Expect(err.Error()).To(ContainSubstring("100"))
}

// An endpoint applied with kubectl beyond the organization's limit says so
// and receives no events.
func TestAppliedEndpointBeyondLimitReceivesNothing(t *testing.T) {
	g := NewWithT(t)
	o := NewOrg(t)
	AnnotateOrg(t, o, map[string]string{quota.WebhookEndpointsAnnotation: "1"})
	within, beyond := NewReceiver(t, nil), NewReceiver(t, nil)
	first, _ := ApplyEndpoint(t, o.Ns, within.URL(), nil)
	second := &switchboardv1.WebhookEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: o.Ns, Name: "second"},
		Spec: switchboardv1.WebhookEndpointSpec{URL: beyond.URL()}}
	g.Expect(K8s.Create(context.Background(), second)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(K8s.Get(context.Background(), client.ObjectKeyFromObject(second), second)).To(Succeed())
		ready := apimeta.FindStatusCondition(second.Status.Conditions, switchboardv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(switchboardv1.ReasonEndpointLimitReached))
		g.Expect(ready.Message).To(ContainSubstring("may have 1"))
	}, ResWait, ResPoll).Should(Succeed())

	id := o.CreateCall(t, "+14155550175", nil)
	o.WaitAnalyzed(t, id)
	g.Eventually(func() int { return len(within.ForCall(id)) }, ResWait, ResPoll).Should(Equal(3))
	g.Consistently(func() int { return len(beyond.ForCall(id)) }, time.Second, 50*time.Millisecond).Should(BeZero())

	// Once the older endpoint is gone, the other one is within the limit.
	g.Expect(K8s.Delete(context.Background(), first)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(K8s.Get(context.Background(), client.ObjectKeyFromObject(second), second)).To(Succeed())
		g.Expect(apimeta.IsStatusConditionTrue(second.Status.Conditions, switchboardv1.ReadyCondition)).To(BeTrue())
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
}

func TestRotatingADeclaredSecretIsRefused(t *testing.T) {
	g := NewWithT(t)
	o := NewOrg(t)
	rc := NewReceiver(t, nil)
	declared := NewSecretObject(o.Ns, "platform-secret", "whsec_"+RandHex(24))
	g.Expect(K8s.Create(context.Background(), declared)).To(Succeed())
	ep, _ := ApplyEndpoint(t, o.Ns, rc.URL(), func(s *switchboardv1.WebhookEndpointSpec) {
		s.SecretRef = &switchboardv1.SecretReference{Name: "platform-secret"}
	})
	r := Do(t, "POST", "/v1/webhook-endpoints/"+ep.ResolvedID()+"/rotate-secret", o.Key, nil)
	g.Expect(r.Status).To(Equal(http.StatusConflict), "%s", r.Raw)
	g.Expect(Detail(t, r)["error_code"]).To(Equal("secret_managed_in_cluster"))
	var now corev1.Secret
	g.Expect(K8s.Get(context.Background(), client.ObjectKeyFromObject(declared), &now)).To(Succeed())
	g.Expect(now.Data).To(Equal(declared.Data), "the Secret is untouched")
	g.Expect(now.ResourceVersion).To(Equal(declared.ResourceVersion))
}

// Only Switchboard creates Calls with source "api": config/policy's
// admission policy, enforced by the apiserver, refuses it from anyone else.
func TestCallSourceIsSetBySwitchboard(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	o := NewOrg(t)
	// In the suite the operator runs as its service account, the user the
	// policy names.
	review, err := kubernetes.NewForConfigOrDie(ManagerConfig).AuthenticationV1().SelfSubjectReviews().
		Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(review.Status.UserInfo.Username).To(Equal("system:serviceaccount:switchboard-system:switchboard-manager"))
	kubectl := PlatformEngineerUnderCallSourcePolicy(t)
	claim := func(name string, source switchboardv1.CallSource) *switchboardv1.Call {
		return &switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Namespace: o.Ns, Name: name},
			Spec: switchboardv1.CallSpec{AgentID: o.AgentID, ToNumber: "+14155550176", Source: source,
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
	id := o.CreateCall(t, "+14155550176", nil)
	g.Expect(o.GetCall(t, id)["source"]).To(Equal("api"))
}

// Only Switchboard assigns a call to a replica: a Call applied with its own
// switchboard.dev/worker label would run outside every replica's capacity,
// so the policy refuses it, and refuses relabelling a Call, from anyone
// but the manager.
func TestWorkerLabelIsSetBySwitchboard(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	o := NewOrg(t)
	kubectl := PlatformEngineerUnderCallSourcePolicy(t)
	call := func(name string, labels map[string]string) *switchboardv1.Call {
		return &switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Namespace: o.Ns, Name: name, Labels: labels},
			Spec: switchboardv1.CallSpec{AgentID: o.AgentID, ToNumber: "+14155550177",
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
		g.Expect(K8s.Get(ctx, client.ObjectKeyFromObject(applied), applied)).To(Succeed())
		g.Expect(applied.Labels).To(HaveKey(switchboardv1.WorkerLabel))
	}, ResWait, ResPoll).Should(Succeed())
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
		if err := K8s.Get(ctx, client.ObjectKeyFromObject(applied), &now); err != nil {
			return err
		}
		now.Labels["team"] = "support"
		return kubectl.Update(ctx, &now)
	}, ResWait, ResPoll).Should(Succeed())
}
