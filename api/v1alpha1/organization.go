package v1alpha1

import "fmt"

// An organization is a namespace labelled OrganizationLabel=true, in which
// the platform team has bound the ClusterRole switchboard-organization to
// Switchboard's service account (a RoleBinding). Switchboard watches the
// Secrets of organization namespaces only, so only their API keys are served.
const (
	// OrganizationLabel marks a namespace as an organization when "true".
	OrganizationLabel = "switchboard.dev/organization"
	// OrganizationClusterRole is the ClusterRole that grants Switchboard the
	// Secrets and ConfigMaps of an organization namespace, as
	// config/default names it.
	OrganizationClusterRole = "switchboard-organization"
)

// OrganizationServiceAccount is Switchboard's service account
// (namespace:name) as config/default deploys it: the subject of an
// organization's RoleBinding.
const OrganizationServiceAccount = "switchboard-system:switchboard-manager"

// OrganizationRoleBindingCommand lets Switchboard read the Secrets of
// namespace, as the operations guide (config/README.md, "Organizations and
// RBAC") writes it.
func OrganizationRoleBindingCommand(namespace string) string {
	return fmt.Sprintf("kubectl create rolebinding %s -n %s --clusterrole=%s --serviceaccount=%s",
		OrganizationClusterRole, namespace, OrganizationClusterRole, OrganizationServiceAccount)
}

// OrganizationLabelCommand labels namespace an organization, as
// config/README.md writes it.
func OrganizationLabelCommand(namespace string) string {
	return fmt.Sprintf("kubectl label namespace %s %s=true", namespace, OrganizationLabel)
}

// MakeOrganization is the end of a message about a namespace that is no
// organization: the two commands that make it one, in config/README.md's
// order, ready to paste.
func MakeOrganization(namespace string) string {
	return "Make it one: " + OrganizationRoleBindingCommand(namespace) + " && " + OrganizationLabelCommand(namespace)
}

// SecretAccessDeniedMessage says why Switchboard was refused the Secret
// namespace/name, and what the platform team does about it. It lives beside
// the label so that whatever reads an organization's Secrets (telephony,
// controllers) words the refusal alike without importing the organizations
// package.
func SecretAccessDeniedMessage(namespace, name string) string {
	return fmt.Sprintf("Switchboard may not read the Secret %s/%s: namespace %s is not set up as an organization. %s",
		namespace, name, namespace, MakeOrganization(namespace))
}
