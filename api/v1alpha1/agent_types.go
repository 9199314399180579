package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ExtractedDataType is the type of one analysis field.
// +kubebuilder:validation:Enum=string;number;boolean
type ExtractedDataType string

const (
	ExtractedString  ExtractedDataType = "string"
	ExtractedNumber  ExtractedDataType = "number"
	ExtractedBoolean ExtractedDataType = "boolean"
)

// ExtractedDataField is one value the post-call analysis extracts from the
// conversation; it becomes a key of analysis.extracted_data.
type ExtractedDataField struct {
	// name is the key in analysis.extracted_data.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-zA-Z_][a-zA-Z0-9_]*$`
	Name string `json:"name"`

	// type of the extracted value: string, number or boolean.
	// +required
	Type ExtractedDataType `json:"type"`

	// description tells the analyzer what to look for.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Description string `json:"description,omitempty"`
}

// AgentSpec is a scripted voice agent that places outbound calls.
// +kubebuilder:validation:XValidation:rule="!has(self.extractedData) || self.extractedData.all(f, self.extractedData.exists_one(g, g.name == f.name))",message="extractedData names must be unique"
type AgentSpec struct {
	// id pins the agent_id (a UUID) used by the REST API, for example to keep
	// the same id across re-creation or a migration. Defaults to metadata.uid.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`
	ID string `json:"id,omitempty"`

	// active agents can place calls. Defaults to true.
	// +optional
	// +kubebuilder:default=true
	Active *bool `json:"active,omitempty"`

	// outbound agents can place outbound calls. Defaults to true.
	// +optional
	// +kubebuilder:default=true
	Outbound *bool `json:"outbound,omitempty"`

	// fromNumber is the caller ID the agent calls from, in E.164 form.
	// A create-call request that names another from_number is refused.
	// +required
	// +kubebuilder:validation:Pattern=`^\+[1-9][0-9]{6,14}$`
	FromNumber string `json:"fromNumber"`

	// requiredVariables are the variables every call must provide.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=128
	RequiredVariables []string `json:"requiredVariables,omitempty"`

	// extractedData are the fields the post-call analysis extracts.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	ExtractedData []ExtractedDataField `json:"extractedData,omitempty"`

	// greeting is what the agent says first when the call is answered.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Greeting string `json:"greeting,omitempty"`
}

// IsActive reports spec.active, true when unset.
func (s *AgentSpec) IsActive() bool { return s.Active == nil || *s.Active }

// IsOutbound reports spec.outbound, true when unset.
func (s *AgentSpec) IsOutbound() bool { return s.Outbound == nil || *s.Outbound }

// AgentStatus is the observed state of an Agent.
type AgentStatus struct {
	// agentID is the resolved agent_id: spec.id, or metadata.uid.
	// +optional
	AgentID string `json:"agentID,omitempty"`

	// observedGeneration is the generation last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Agent is a scripted voice agent of an organization (its namespace).
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=switchboard
// +kubebuilder:printcolumn:name="Agent ID",type=string,JSONPath=`.status.agentID`
// +kubebuilder:printcolumn:name="From",type=string,JSONPath=`.spec.fromNumber`
// +kubebuilder:printcolumn:name="Active",type=boolean,JSONPath=`.spec.active`
// +kubebuilder:printcolumn:name="Outbound",type=boolean,JSONPath=`.spec.outbound`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Agent struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec AgentSpec `json:"spec"`
	// +optional
	Status AgentStatus `json:"status,omitempty"`
}

// ResolvedID is the agent_id the REST API knows this agent by.
func (a *Agent) ResolvedID() string {
	if a.Spec.ID != "" {
		return a.Spec.ID
	}
	return string(a.UID)
}

// +kubebuilder:object:root=true

// AgentList is a list of Agents.
type AgentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Agent `json:"items"`
}
