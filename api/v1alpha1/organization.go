package v1alpha1

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
