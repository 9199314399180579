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

// NotAnOrganization says what a resource of an unlabelled namespace is
// missing and how to fix it. The REST API answers such a namespace's keys
// with a bare 401, so the resources are where a platform team learns why.
func NotAnOrganization(namespace string) string {
	return fmt.Sprintf("Namespace %s is not an organization, so Switchboard serves none of its API keys "+
		"(they answer 401) and reads none of its Secrets. %s", namespace, switchboardv1.MakeOrganization(namespace))
}

// NoRoleBinding says why the API keys of a namespace labelled an
// organization are not served: Switchboard may not read its Secrets.
func NoRoleBinding(namespace string) string {
	return fmt.Sprintf("Namespace %s is labelled an organization, but Switchboard may not read its Secrets, "+
		"so it serves none of its API keys (they answer 401). Bind the ClusterRole %s there: %s",
		namespace, switchboardv1.OrganizationClusterRole, switchboardv1.OrganizationRoleBindingCommand(namespace))
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
