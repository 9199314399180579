package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NumberListType says what a match means for a call.
// +kubebuilder:validation:Enum=DoNotCall;Blocked
type NumberListType string

const (
	// DoNotCall: the callee asked not to be called; calls fail with dnc_blocked.
	DoNotCall NumberListType = "DoNotCall"
	// Blocked: the organization blocks the number; calls fail with number_blocked.
	Blocked NumberListType = "Blocked"
)

// NumberListSpec lists numbers and prefixes that calls may not be placed to.
// Every NumberList in a namespace applies to every call of that namespace.
// A list holds at most 100,000 numbers, which is also about what etcd's
// default object limit (1.5 MiB) holds: split larger lists into several
// NumberLists.
// +kubebuilder:validation:XValidation:rule="(has(self.numbers) && size(self.numbers) > 0) || (has(self.prefixes) && size(self.prefixes) > 0)",message="a NumberList needs at least one number or prefix"
type NumberListSpec struct {
	// type is DoNotCall or Blocked.
	// +required
	Type NumberListType `json:"type"`

	// numbers are exact E.164 numbers.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100000
	// +kubebuilder:validation:items:Pattern=`^\+[1-9][0-9]{6,14}$`
	Numbers []string `json:"numbers,omitempty"`

	// prefixes match every number that starts with them, for example +1900.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10000
	// +kubebuilder:validation:items:Pattern=`^\+[0-9]{1,15}$`
	Prefixes []string `json:"prefixes,omitempty"`
}

// NumberListStatus is the observed state of a NumberList.
type NumberListStatus struct {
	// entries is how many numbers and prefixes are in force.
	// +optional
	Entries int `json:"entries,omitempty"`
	// observedGeneration is the generation last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions: Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NumberList is a do-not-call or block list of an organization.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=switchboard
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Entries",type=integer,JSONPath=`.status.entries`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NumberList struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec NumberListSpec `json:"spec"`
	// +optional
	Status NumberListStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// NumberListList is a list of NumberLists.
type NumberListList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NumberList `json:"items"`
}
