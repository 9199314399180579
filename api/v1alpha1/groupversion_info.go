// Package v1alpha1 contains the Switchboard API types: Agents, Calls and
// NumberLists. Every resource is namespaced; a namespace is an organization.
//
// +kubebuilder:object:generate=true
// +groupName=switchboard.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of the Switchboard API.
	GroupVersion = schema.GroupVersion{Group: "switchboard.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the Switchboard types with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the Switchboard types to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
