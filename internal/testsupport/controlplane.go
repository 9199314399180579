package testsupport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/switchboard-dev/switchboard/internal/devenv"
)

// ControlPlane is a real kube-apiserver and etcd (envtest) with
// Switchboard's CRDs and roles installed, as a suite starts it once in
// TestMain.
type ControlPlane struct {
	// Admin is the cluster administrator's config.
	Admin *rest.Config
	// Client acts as the administrator, without a cache: what the cluster
	// really holds.
	Client client.Client
	// Manager is Switchboard's identity: its service account, bound to the
	// roles of config/rbac and nothing else, as in a cluster.
	Manager *rest.Config
	// RBACDir is config/rbac: the manager's roles and the organization
	// template.
	RBACDir string

	env         *envtest.Environment
	managerUser *envtest.AuthenticatedUser
}

// StartControlPlane starts the control plane. root is the module's root as
// seen from the test's package folder ("../.." from internal/app); scheme
// is the one Client speaks.
func StartControlPlane(root string, scheme *runtime.Scheme) (*ControlPlane, error) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return nil, errors.New("KUBEBUILDER_ASSETS is not set: run `make test`, which builds the envtest binaries (hack/setup-envtest.sh)")
	}
	ctrllog.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting envtest: %w", err)
	}
	cp := &ControlPlane{Admin: cfg, RBACDir: filepath.Join(root, "config", "rbac"), env: env}
	if err := cp.installIdentities(scheme); err != nil {
		_ = env.Stop()
		return nil, err
	}
	return cp, nil
}

// installIdentities makes the administrator's client and the manager's
// service account with the roles of config/rbac, as a deployment has them.
func (cp *ControlPlane) installIdentities(scheme *runtime.Scheme) error {
	// No client-side throttling: the suites and benchmarks measure the
	// server side.
	cp.Admin.QPS, cp.Admin.Burst = -1, 0
	var err error
	if cp.Client, err = client.New(cp.Admin, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	if err := devenv.InstallRBAC(context.Background(), cp.Client, cp.RBACDir); err != nil {
		return fmt.Errorf("installing RBAC: %w", err)
	}
	user, err := cp.env.AddUser(devenv.ManagerUser, cp.Admin)
	if err != nil {
		return fmt.Errorf("the manager's identity: %w", err)
	}
	cp.Manager, cp.managerUser = user.Config(), user
	cp.Manager.QPS, cp.Manager.Burst = -1, 0
	return nil
}

// ManagerKubeconfig writes a kubeconfig for Switchboard's identity into a
// folder of t's and returns its path: what a Switchboard process started
// by a test reads, as a pod reads its service account.
func (cp *ControlPlane) ManagerKubeconfig(t testing.TB) string {
	t.Helper()
	kubeconfig, err := cp.managerUser.KubeConfig()
	if err != nil {
		t.Fatalf("the manager's kubeconfig: %v", err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Stop stops kube-apiserver and etcd.
func (cp *ControlPlane) Stop() error { return cp.env.Stop() }

// NewNamespace creates a namespace named prefix and a random suffix, which
// is no organization.
func (cp *ControlPlane) NewNamespace(t testing.TB, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	if err := cp.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	return ns.Name
}

// NewOrganization creates a namespace named prefix and a random suffix and
// makes it an organization, as a platform team does
// (config/rbac/organization).
func (cp *ControlPlane) NewOrganization(t testing.TB, prefix string) string {
	t.Helper()
	ns := cp.NewNamespace(t, prefix)
	if err := devenv.AddOrganization(context.Background(), cp.Client, cp.RBACDir, ns); err != nil {
		t.Fatalf("making %s an organization: %v", ns, err)
	}
	return ns
}
