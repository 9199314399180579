package organizations

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// ServiceAccount is Switchboard's service account (namespace:name) as
// config/default deploys it: the subject of an organization's RoleBinding.
const ServiceAccount = "switchboard-system:switchboard-manager"

// RoleBindingCommand lets Switchboard read the Secrets of namespace, as the
// operations guide (config/README.md, "Organizations and RBAC") writes it.
func RoleBindingCommand(namespace string) string {
	return fmt.Sprintf("kubectl create rolebinding %s -n %s --clusterrole=%s --serviceaccount=%s",
		switchboardv1.OrganizationClusterRole, namespace, switchboardv1.OrganizationClusterRole, ServiceAccount)
}

// LabelCommand labels namespace an organization, as config/README.md writes it.
func LabelCommand(namespace string) string {
	return fmt.Sprintf("kubectl label namespace %s %s=true", namespace, switchboardv1.OrganizationLabel)
}

// makeIt is the end of a message about a namespace that is no organization:
// the two commands that make it one, in config/README.md's order, ready to paste.
func makeIt(namespace string) string {
	return "Make it one: " + RoleBindingCommand(namespace) + " && " + LabelCommand(namespace)
}

// NotAnOrganization says what a resource of an unlabelled namespace is
// missing and how to fix it. The REST API answers such a namespace's keys
// with a bare 401, so the resources are where a platform team learns why.
func NotAnOrganization(namespace string) string {
	return fmt.Sprintf("Namespace %s is not an organization, so Switchboard serves none of its API keys "+
		"(they answer 401) and reads none of its Secrets. %s", namespace, makeIt(namespace))
}

// NoRoleBinding says why the API keys of a namespace labelled an
// organization are not served: Switchboard may not read its Secrets.
func NoRoleBinding(namespace string) string {
	return fmt.Sprintf("Namespace %s is labelled an organization, but Switchboard may not read its Secrets, "+
		"so it serves none of its API keys (they answer 401). Bind the ClusterRole %s there: %s",
		namespace, switchboardv1.OrganizationClusterRole, RoleBindingCommand(namespace))
}

// SecretAccessDenied says why Switchboard was refused the Secret
// namespace/name, and what the platform team does about it.
func SecretAccessDenied(namespace, name string) string {
	return fmt.Sprintf("Switchboard may not read the Secret %s/%s: namespace %s is not set up as an organization. %s",
		namespace, name, namespace, makeIt(namespace))
}

// MayListSecrets asks the apiserver, through live, whether Switchboard may
// list the Secrets of namespace: what its RoleBinding there grants.
func MayListSecrets(ctx context.Context, live client.Reader, namespace string) (bool, error) {
	err := listOneSecret(ctx, live, namespace)
	if apierrors.IsForbidden(err) {
		return false, nil
	}
	return err == nil, err
}

// listOneSecret lists the metadata of one Secret of namespace at most: the
// cheapest request that Secret access decides.
func listOneSecret(ctx context.Context, live client.Reader, namespace string) error {
	var list metav1.PartialObjectMetadataList
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	return live.List(ctx, &list, client.InNamespace(namespace), client.Limit(1))
}
