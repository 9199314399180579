package organizations_test

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-dev/switchboard/internal/organizations"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// What Switchboard may read is what the apiserver's RBAC grants it, as a
// deployment has it: the Secrets of a namespace made an organization (its
// RoleBinding), none of a namespace that is not one.
func TestMayListSecretsAsRBACGrants(t *testing.T) {
	testsupport.Needs(t, "a control plane (kube-apiserver and etcd)")
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cp, err := testsupport.StartControlPlane("../..", scheme)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	manager, err := client.New(cp.Manager, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	org, plain := cp.NewOrganization(t, "acme-"), cp.NewNamespace(t, "team-")
	for ns, want := range map[string]bool{org: true, plain: false} {
		got, err := organizations.MayListSecrets(context.Background(), manager, ns)
		if err != nil || got != want {
			t.Errorf("MayListSecrets(%s) = %v, %v; want %v", ns, got, err, want)
		}
	}
}
