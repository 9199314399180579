package apptest

// In a cluster the metrics are served over HTTPS to callers the apiserver
// authenticates (a ServiceAccount token) and authorizes (the
// metrics-reader ClusterRole of config/rbac): no one else reads them.

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ServiceAccountToken creates a ServiceAccount and a short-lived token for
// it, as the kubelet mounts into a pod.
func ServiceAccountToken(t *testing.T, ns, name string) string {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	NewWithT(t).Expect(K8s.Create(ctx, sa)).To(Succeed())
	tr, err := kubernetes.NewForConfigOrDie(RestConfig).CoreV1().ServiceAccounts(ns).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: PtrTo(int64(600))}},
		metav1.CreateOptions{})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return tr.Status.Token
}

// GrantMetricsAuth installs config/rbac's metrics-auth ClusterRole and its
// binding to the manager, as config/default does: the manager asks the
// apiserver about each scrape's token.
func GrantMetricsAuth(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	var role rbacv1.ClusterRole
	var binding rbacv1.ClusterRoleBinding
	for _, doc := range MetricsAuthDocs(t) {
		var meta metav1.TypeMeta
		_ = yaml.Unmarshal([]byte(doc), &meta)
		switch {
		case meta.Kind == "ClusterRole" && strings.Contains(doc, "name: metrics-auth-role"):
			NewWithT(t).Expect(yaml.Unmarshal([]byte(doc), &role)).To(Succeed())
		case meta.Kind == "ClusterRoleBinding":
			NewWithT(t).Expect(yaml.Unmarshal([]byte(doc), &binding)).To(Succeed())
		}
	}
	// The names and namespace config/default's kustomization gives them.
	role.Name, binding.Name, binding.RoleRef.Name = "switchboard-"+role.Name, "switchboard-"+binding.Name, "switchboard-"+binding.RoleRef.Name
	binding.Subjects[0].Namespace, binding.Subjects[0].Name = "switchboard-system", "switchboard-"+binding.Subjects[0].Name
	for _, obj := range []client.Object{&role, &binding} {
		err := K8s.Create(ctx, obj)
		if !apierrors.IsAlreadyExists(err) {
			NewWithT(t).Expect(err).NotTo(HaveOccurred())
		}
	}
}

func MetricsAuthDocs(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(RepoRoot, "config", "rbac", "metrics_auth_role.yaml"))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return strings.Split(string(raw), "\n---\n")
}

// BindMetricsReader binds config/rbac's metrics-reader ClusterRole to the
// ServiceAccount.
func BindMetricsReader(t *testing.T, ns, name string) {
	t.Helper()
	ctx := context.Background()
	var role *rbacv1.ClusterRole
	for _, doc := range MetricsAuthDocs(t) {
		var r rbacv1.ClusterRole
		if yaml.Unmarshal([]byte(doc), &r) == nil && r.Kind == "ClusterRole" && r.Name == "metrics-reader" {
			role = &r
		}
	}
	NewWithT(t).Expect(role).NotTo(BeNil(), "config/rbac/metrics_auth_role.yaml has no metrics-reader ClusterRole")
	role.Name = ns + "-metrics-reader"
	NewWithT(t).Expect(K8s.Create(ctx, role)).To(Succeed())
	t.Cleanup(func() { _ = K8s.Delete(ctx, role) })
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: name}}}
	NewWithT(t).Expect(K8s.Create(ctx, binding)).To(Succeed())
	t.Cleanup(func() { _ = K8s.Delete(ctx, binding) })
}

func PtrTo[T any](v T) *T { return &v }
