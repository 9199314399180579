package endpoints

// The endpoint operations the REST API and the dashboard share, against
// controller-runtime's fake client: creating (URL guard, the
// organization's limit, a signing Secret owned by the endpoint), rotating
// (a new secret, the old one signing for the overlap; never a Secret
// declared in the cluster) and deleting. internal/app's webhook API tests
// drive the same operations over HTTP against a real apiserver.

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/directory"
	"github.com/switchboard-dev/switchboard/internal/egress"
	"github.com/switchboard-dev/switchboard/internal/quota"
	"github.com/switchboard-dev/switchboard/internal/webhook/deliveries"
)

var rotatedAt = time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)

// newService serves the organization "acme", allowed endpoints endpoints.
func newService(t *testing.T, endpoints string) (*Service, client.Client) {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{switchboardv1.AddToScheme, corev1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "acme",
		Annotations: map[string]string{quota.WebhookEndpointsAnnotation: endpoints}}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(ns).Build()
	return &Service{Directory: &directory.Directory{Cache: c, Live: c}, Client: c, Live: c,
		Quota:  &quota.Admission{Cache: c, Now: time.Now},
		Policy: egress.URLPolicy{AllowInsecure: false}, RotationOverlap: time.Hour,
		Now: func() time.Time { return rotatedAt }}, c
}

func create(t *testing.T, s *Service, url string) (*switchboardv1.WebhookEndpoint, string, error) {
	t.Helper()
	return s.Create(context.Background(), "acme", &Change{URL: url, URLSet: true})
}

// An endpoint is created with its signing Secret, owned by it; a URL the
// guard refuses, or one endpoint over the organization's limit, creates
// nothing.
func TestCreate(t *testing.T) {
	s, c := newService(t, "1")
	ctx := context.Background()
	if _, _, err := create(t, s, "http://127.0.0.1/hooks"); err == nil || !errors.As(err, new(*egress.URLError)) {
		t.Fatalf("a loopback http URL: %v, want the URL guard's refusal", err)
	}
	ep, secret, err := create(t, s, "https://1.1.1.1/hooks")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, "whsec_") {
		t.Errorf("secret %q, want whsec_...", secret)
	}
	var stored corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: "acme", Name: ep.SigningSecretName()}, &stored); err != nil {
		t.Fatalf("the signing Secret: %v", err)
	}
	if !metav1.IsControlledBy(&stored, ep) || string(stored.Data[switchboardv1.WebhookSecretKey]) != secret {
		t.Errorf("the Secret is not the endpoint's, or holds another secret: %+v", stored.OwnerReferences)
	}
	_, _, err = create(t, s, "https://1.0.0.1/hooks")
	var refused *Refused
	if !errors.As(err, &refused) || refused.Code != quota.CodeEndpointLimit {
		t.Fatalf("a second endpoint with a limit of one: %v, want %s", err, quota.CodeEndpointLimit)
	}
	var all switchboardv1.WebhookEndpointList
	if err := c.List(ctx, &all, client.InNamespace("acme")); err != nil || len(all.Items) != 1 {
		t.Fatalf("endpoints: %d (%v), want the one created", len(all.Items), err)
	}
}

// A rotation returns a new secret and keeps the old one signing for the
// overlap; a Secret declared in the cluster (spec.secretRef) is never
// rewritten through the API.
func TestRotate(t *testing.T) {
	s, c := newService(t, "5")
	ctx := context.Background()
	ep, first, err := create(t, s, "https://1.1.1.1/hooks")
	if err != nil {
		t.Fatal(err)
	}
	rotated, err := s.Rotate(ctx, ep)
	if err != nil {
		t.Fatal(err)
	}
	if rotated.Secret == first || !strings.HasPrefix(rotated.Secret, "whsec_") {
		t.Fatalf("rotated secret %q (was %q), want a new whsec_ secret", rotated.Secret, first)
	}
	if !rotated.HasPrevious || !rotated.PreviousExpiresAt.Equal(rotatedAt.Add(time.Hour)) {
		t.Fatalf("the old secret signs until %v (%v), want %v", rotated.PreviousExpiresAt, rotated.HasPrevious, rotatedAt.Add(time.Hour))
	}
	var stored corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: "acme", Name: ep.SigningSecretName()}, &stored); err != nil {
		t.Fatal(err)
	}
	if at, ok := deliveries.PreviousExpiresAt(&stored); !ok || !at.Equal(rotatedAt.Add(time.Hour)) {
		t.Fatalf("the stored Secret keeps the old secret until %v (%v)", at, ok)
	}

	declared := ep.DeepCopy()
	declared.Spec.SecretRef = &switchboardv1.SecretReference{Name: "platform-secret"}
	if err := c.Update(ctx, declared); err != nil {
		t.Fatal(err)
	}
	var refused *Refused
	if _, err := s.Rotate(ctx, declared); !errors.As(err, &refused) || refused.Code != CodeSecretManaged {
		t.Fatalf("rotating a declared Secret: %v, want %s", err, CodeSecretManaged)
	}
}

// Deleting an endpoint twice finds it gone the second time.
func TestDelete(t *testing.T) {
	s, _ := newService(t, "5")
	ep, _, err := create(t, s, "https://1.1.1.1/hooks")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(context.Background(), ep); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(context.Background(), ep); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v, want ErrNotFound", err)
	}
}
