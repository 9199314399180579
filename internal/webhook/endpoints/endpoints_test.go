package endpoints

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// Pages run oldest first from the endpoint after the cursor; a cursor of
// no endpoint of the organization is ErrUnknownCursor.
func TestPage(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := switchboardv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 31, 9, 0, 0, 0, time.UTC)
	mk := func(name, uid string, at time.Time) client.Object {
		return &switchboardv1.WebhookEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "org", Name: name,
			UID: types.UID(uid), CreationTimestamp: metav1.NewTime(at)}}
	}
	s := &Service{Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		mk("c", "00000000-0000-0000-0000-00000000000c", t0.Add(time.Second)),
		mk("b", "00000000-0000-0000-0000-00000000000b", t0),
		mk("a", "00000000-0000-0000-0000-00000000000a", t0),
	).Build()}
	ctx := context.Background()
	names := func(eps []switchboardv1.WebhookEndpoint) []string {
		var out []string
		for _, ep := range eps {
			out = append(out, ep.Name)
		}
		return out
	}

	first, more, err := s.Page(ctx, "org", "", 2)
	if err != nil || !more || !slices.Equal(names(first), []string{"a", "b"}) {
		t.Fatalf("first page = %v, %v, %v; want [a b], more", names(first), more, err)
	}
	rest, more, err := s.Page(ctx, "org", first[1].ResolvedID(), 2)
	if err != nil || more || !slices.Equal(names(rest), []string{"c"}) {
		t.Fatalf("second page = %v, %v, %v; want [c], no more", names(rest), more, err)
	}
	if _, _, err := s.Page(ctx, "org", "we_0123456789abcdef0123456789abcdef", 2); !errors.Is(err, ErrUnknownCursor) {
		t.Fatalf("unknown cursor: err %v, want ErrUnknownCursor", err)
	}
}
