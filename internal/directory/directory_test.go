package directory

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// recordingIndexer collects the indexes IndexFields registers, so that the
// fake cache below is indexed by the very same functions.
type recordingIndexer struct {
	indexes []index
}

type index struct {
	obj     client.Object
	field   string
	extract client.IndexerFunc
}

func (r *recordingIndexer) IndexField(_ context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	r.indexes = append(r.indexes, index{obj, field, extract})
	return nil
}

func webhookEndpoint(ns, name, uid string) *switchboardv1.WebhookEndpoint {
	return &switchboardv1.WebhookEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)},
		Spec:       switchboardv1.WebhookEndpointSpec{URL: "https://example.com/hooks"},
	}
}

func TestEndpoint(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := switchboardv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var ix recordingIndexer
	if err := IndexFields(context.Background(), &ix); err != nil {
		t.Fatal(err)
	}
	cached := webhookEndpoint("org-a", "crm", "11111111-1111-4111-8111-111111111111")
	fresh := webhookEndpoint("org-a", "endpoint-x", "22222222-2222-4222-8222-222222222222")
	other := webhookEndpoint("org-b", "crm", "33333333-3333-4333-8333-333333333333")

	builder := fake.NewClientBuilder().WithScheme(scheme).WithObjects(cached.DeepCopy(), other.DeepCopy())
	for _, i := range ix.indexes {
		builder = builder.WithIndex(i.obj, i.field, i.extract)
	}
	// The cache has not seen fresh yet; the API server has. Leaving cached
	// out of the API server shows that the cache (its index) answers it.
	d := &Directory{
		Cache: builder.Build(),
		Live:  fake.NewClientBuilder().WithScheme(scheme).WithObjects(fresh.DeepCopy(), other.DeepCopy()).Build(),
	}
	tests := []struct {
		name, ns, id, want string
	}{
		{"in the cache", "org-a", "we_11111111111141118111111111111111", "crm"},
		{"not yet in the cache", "org-a", "we_22222222222242228222222222222222", "endpoint-x"},
		{"another organization's", "org-a", "we_33333333333343338333333333333333", ""},
		{"unknown", "org-a", "we_44444444444444444444444444444444", ""},
		{"the name is not the id", "org-a", "crm", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep, err := d.Endpoint(context.Background(), tt.ns, tt.id)
			if tt.want == "" {
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("got %v, %v; want ErrNotFound", ep, err)
				}
				return
			}
			if err != nil || ep.Name != tt.want || ep.ResolvedID() != tt.id {
				t.Fatalf("got %v, %v; want %s", ep, err, tt.want)
			}
		})
	}
}
