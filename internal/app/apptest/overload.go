package apptest

// An apiserver that does not answer: POST /v1/calls fails within the
// request deadline as 503 with Retry-After instead of waiting on it, and a
// retry with the same Idempotency-Key gets the one call, never a second.

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// StalledCreates is an admission webhook that holds every create of a Call
// in one namespace until released (or for its delay): an apiserver that
// takes the request and does not answer (or answers slowly).
type StalledCreates struct {
	Released chan struct{}
	// Delay, when set, holds each create that long instead (a slowed
	// apiserver).
	Delay atomic.Int64
	Seen  atomic.Int32
	Once  atomic.Bool

	Mu    sync.Mutex
	Names []string // the Calls whose create came (dry runs aside)
}

func (s *StalledCreates) Creates() []string {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	return slices.Clone(s.Names)
}

func (s *StalledCreates) Release() {
	if s.Once.CompareAndSwap(false, true) {
		close(s.Released)
	}
}

// StallCallCreates registers the webhook for o's namespace and returns once
// the apiserver calls it.
func StallCallCreates(t *testing.T, o *Org) *StalledCreates {
	t.Helper()
	s := &StalledCreates{Released: make(chan struct{})}
	srv := httptest.NewTLSServer(http.HandlerFunc(s.Review))
	t.Cleanup(srv.Close)
	t.Cleanup(s.Release)

	ignore, none, timeout := admissionregistrationv1.Ignore, admissionregistrationv1.SideEffectClassNone, int32(15)
	url := srv.URL + "/stall"
	hook := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "stall-calls-"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "stall.switchboard.dev",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url,
				CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{switchboardv1.GroupVersion.Group},
					APIVersions: []string{switchboardv1.GroupVersion.Version}, Resources: []string{"calls"}},
			}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": o.Ns}},
			FailurePolicy:           &ignore,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	ctx := context.Background()
	NewWithT(t).Expect(K8s.Create(ctx, hook)).To(Succeed())
	t.Cleanup(func() { _ = K8s.Delete(ctx, hook) })

	// The apiserver picks the configuration up asynchronously: probe with
	// dry-run creates (which the webhook lets through) until it is called.
	probe := &switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Namespace: o.Ns, Name: "probe"},
		Spec: switchboardv1.CallSpec{AgentID: o.AgentID, ToNumber: "+14155550142"}}
	NewWithT(t).Eventually(func() int32 {
		_ = K8s.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		return s.Seen.Load()
	}, 20*time.Second, 100*time.Millisecond).To(BeNumerically(">", 0))
	return s
}

// Review answers an AdmissionReview: dry runs at once, the rest once
// released (or when the apiserver gives up on it).
func (s *StalledCreates) Review(w http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
		return
	}
	s.Seen.Add(1)
	if dry := review.Request.DryRun; dry == nil || !*dry {
		s.Mu.Lock()
		s.Names = append(s.Names, review.Request.Name)
		s.Mu.Unlock()
		var until <-chan time.Time
		if d := time.Duration(s.Delay.Load()); d > 0 {
			until = time.After(d)
		}
		select {
		case <-s.Released:
		case <-until:
		case <-r.Context().Done():
			return
		}
	}
	review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	review.Request = nil
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&review)
}
