package devenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// The local instance runs the manager with the rights it has in a cluster:
// the ClusterRoles of config/rbac, under the names config/default gives
// them, bound to its service account, and the organization RoleBinding in
// each organization namespace.
const (
	namePrefix            = "switchboard-"
	managerNamespace      = "switchboard-system"
	managerServiceAccount = "switchboard-manager"
)

// ManagerUser is the manager's service account, as a user of the control
// plane (RBAC matches a ServiceAccount subject by this name).
var ManagerUser = envtest.User{Name: "system:serviceaccount:" + managerNamespace + ":" + managerServiceAccount}

// clusterRoleFiles are the ClusterRoles of config/rbac.
var clusterRoleFiles = []string{"role.yaml", "organization_role.yaml"}

// InstallRBAC creates or updates the ClusterRoles of rbacDir (config/rbac)
// and binds the manager's to ManagerUser.
func InstallRBAC(ctx context.Context, c client.Client, rbacDir string) error {
	var managerRole string
	for _, f := range clusterRoleFiles {
		objs, err := readYAML(filepath.Join(rbacDir, f))
		if err != nil {
			return err
		}
		for _, o := range objs {
			o.SetName(namePrefix + o.GetName())
			if err := createOrUpdate(ctx, c, o); err != nil {
				return fmt.Errorf("ClusterRole %s: %w", o.GetName(), err)
			}
			if f == "role.yaml" {
				managerRole = o.GetName()
			}
		}
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: namePrefix + "manager"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: managerRole},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: managerNamespace, Name: managerServiceAccount}}}
	if err := c.Create(ctx, binding); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("ClusterRoleBinding: %w", err)
	}
	return installLeaderElection(ctx, c, rbacDir)
}

// LeaderElectionNamespace holds the leader-election lease, and the Role
// that lets the manager take it (config/rbac/leader_election_role.yaml).
const LeaderElectionNamespace = managerNamespace

// installLeaderElection creates the manager's namespace with the Role and
// RoleBinding of leader election, so that --leader-elect works locally as
// in a cluster.
func installLeaderElection(ctx context.Context, c client.Client, rbacDir string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: managerNamespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("namespace %s: %w", managerNamespace, err)
	}
	for _, f := range []string{"leader_election_role.yaml", "leader_election_role_binding.yaml"} {
		objs, err := readYAML(filepath.Join(rbacDir, f))
		if err != nil {
			return err
		}
		for _, o := range objs {
			o.SetName(namePrefix + o.GetName())
			o.SetNamespace(managerNamespace)
			if o.GetKind() == "RoleBinding" {
				_ = unstructured.SetNestedField(o.Object, namePrefix+"leader-election", "roleRef", "name")
				_ = unstructured.SetNestedSlice(o.Object, []any{map[string]any{"kind": "ServiceAccount",
					"name": managerServiceAccount, "namespace": managerNamespace}}, "subjects")
			}
			if err := createOrUpdate(ctx, c, o); err != nil {
				return fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
			}
		}
	}
	return nil
}

// AddOrganization makes namespace an organization, as a platform team does:
// the RoleBinding of rbacDir/organization, then the label.
func AddOrganization(ctx context.Context, c client.Client, rbacDir, namespace string) error {
	objs, err := readYAML(filepath.Join(rbacDir, "organization", "role_binding.yaml"))
	if err != nil {
		return err
	}
	for _, o := range objs {
		o.SetNamespace(namespace)
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("organization RoleBinding in %s: %w", namespace, err)
		}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	patch := []byte(`{"metadata":{"labels":{"` + switchboardv1.OrganizationLabel + `":"true"}}}`)
	return c.Patch(ctx, ns, client.RawPatch(types.MergePatchType, patch))
}

func createOrUpdate(ctx context.Context, c client.Client, o *unstructured.Unstructured) error {
	err := c.Create(ctx, o)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	existing := o.DeepCopy()
	if err := c.Get(ctx, client.ObjectKeyFromObject(o), existing); err != nil {
		return err
	}
	o.SetResourceVersion(existing.GetResourceVersion())
	return c.Update(ctx, o)
}

func readYAML(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	objs, err := decodeAll(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return objs, nil
}
