package apptest

// Per-organization limits, set as annotations on the organization's
// namespace: calls created per second and calls queued or live at once.

import (
	"context"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-dev/switchboard/internal/quota"
)

// AnnotateOrg sets annotations on o's namespace and waits until the API
// reports the limits they set.
func AnnotateOrg(t *testing.T, o *Org, annotations map[string]string) {
	t.Helper()
	g := NewWithT(t)
	var ns corev1.Namespace
	g.Expect(K8s.Get(context.Background(), client.ObjectKey{Name: o.Ns}, &ns)).To(Succeed())
	patch := client.MergeFrom(ns.DeepCopy())
	if ns.Annotations == nil {
		ns.Annotations = map[string]string{}
	}
	for k, v := range annotations {
		ns.Annotations[k] = v
	}
	g.Expect(K8s.Patch(context.Background(), &ns, patch)).To(Succeed())
	// GET /v1/concurrency reports the limits once the operator sees them.
	fields := map[string]string{quota.ActiveCallsAnnotation: "concurrency_limit",
		quota.CreateRateAnnotation: "create_rate_limit", quota.WebhookEndpointsAnnotation: "webhook_endpoint_limit"}
	g.Eventually(func(g Gomega) {
		r := Do(t, "GET", "/v1/concurrency", o.Key, nil)
		for annotation, field := range fields {
			switch v, ok := annotations[annotation]; {
			case !ok:
			case v == quota.Unlimited:
				g.Expect(r.Body).To(HaveKeyWithValue(field, BeNil()))
			default:
				g.Expect(r.Body).To(HaveKeyWithValue(field, MustFloat(t, v)))
			}
		}
	}, 10*time.Second, 20*time.Millisecond).Should(Succeed())
}

func MustFloat(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
