package apptest

// Least privilege: the suite's operator runs as Switchboard's service
// account, bound to exactly the roles of config/rbac (the ClusterRole that
// controller-gen generates, and the ClusterRole switchboard-organization
// bound in each organization namespace), so every test of the suite runs
// with a deployment's rights. These tests check what those rights allow
// and refuse, and what a platform team sees while setting up an
// organization.

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-dev/switchboard/internal/app"
)

// AsManager is a client with the operator's identity.
func AsManager(t *testing.T) client.Client {
	t.Helper()
	c, err := client.New(ManagerConfig, client.Options{Scheme: app.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func OpaqueSecret(ns string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "credentials-"},
		Data: map[string][]byte{"password": []byte("hunter2")}}
}

func ExpectForbidden(g Gomega, err error, what string) {
	g.ExpectWithOffset(1, apierrors.IsForbidden(err)).To(BeTrue(), "%s: want Forbidden, got %v", what, err)
}
