// Package v1alpha1 contains the Switchboard API types: Agents, Calls,
// NumberLists, WebhookEndpoints and SIPTrunks, and the shape of the webhook
// delivery records kept in the history store. Every resource is namespaced;
// a namespace is an organization.
//
// +kubebuilder:object:generate=true
// +groupName=switchboard.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of the Switchboard API.
	GroupVersion = schema.GroupVersion{Group: "switchboard.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the Switchboard types with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the Switchboard types to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&Agent{}, &AgentList{},
		&Call{}, &CallList{},
		&NumberList{}, &NumberListList{},
		&WebhookEndpoint{}, &WebhookEndpointList{},
		&SIPTrunk{}, &SIPTrunkList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
