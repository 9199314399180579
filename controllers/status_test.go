package controllers

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// statusClient is a fake client holding obj, read back into obj as stored,
// that keeps the body of every status patch it is sent.
func statusClient(t *testing.T, obj client.Object) (client.Client, *[]string) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := switchboardv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var sent []string
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(obj).WithStatusSubresource(obj).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client,
			sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			data, err := patch.Data(obj)
			if err != nil {
				return err
			}
			sent = append(sent, string(data))
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		}}).Build()
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	return c, &sent
}

func TestStatusPatcherWritesChangesOnce(t *testing.T) {
	list := &switchboardv1.NumberList{ObjectMeta: metav1.ObjectMeta{Namespace: "org", Name: "dnc"}}
	c, sent := statusClient(t, list)
	ctx := context.Background()

	p := newStatusPatcher(c, list)
	list.Spec.Numbers = []string{"+15550100"} // not status: not written
	if wrote, err := p.patch(ctx, list); wrote || err != nil || len(*sent) != 0 {
		t.Fatalf("unchanged status: wrote %v, err %v, sent %q", wrote, err, *sent)
	}

	p = newStatusPatcher(c, list)
	list.Status.Entries = 3
	if wrote, err := p.patch(ctx, list); !wrote || err != nil {
		t.Fatalf("changed status: wrote %v, err %v", wrote, err)
	}
	if len(*sent) != 1 || strings.Contains((*sent)[0], "resourceVersion") {
		t.Fatalf("sent %q, want one patch without a resourceVersion precondition", *sent)
	}
	var stored switchboardv1.NumberList
	if err := c.Get(ctx, client.ObjectKeyFromObject(list), &stored); err != nil || stored.Status.Entries != 3 {
		t.Fatalf("stored %+v, err %v", stored.Status, err)
	}
}

func TestWholeStatusPatcherSendsZeroes(t *testing.T) {
	trunk := &switchboardv1.SIPTrunk{ObjectMeta: metav1.ObjectMeta{Namespace: "org", Name: "carrier"}}
	c, sent := statusClient(t, trunk)
	ctx := context.Background()
	p := newWholeStatusPatcher(c, trunk)
	trunk.Status.ObservedGeneration = 1
	if wrote, err := p.patch(ctx, trunk); !wrote || err != nil {
		t.Fatalf("wrote %v, err %v", wrote, err)
	}
	if len(*sent) != 1 || !strings.Contains((*sent)[0], `"activeCalls":0`) {
		t.Fatalf("sent %q, want the whole status", *sent)
	}
}
