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
// +kubebuilder:validation:XValidation:rule="!has(self.script) || self.script.all(s, !has(s.gather) || (has(self.extractedData) && self.extractedData.exists(f, f.name == s.gather.field)))",message="a gather step's field must be one of extractedData"
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
	// On the simulated carrier it opens the conversation; on a SIP trunk it
	// is spoken before the script when set.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Greeting string `json:"greeting,omitempty"`

	// trunkRef names the SIPTrunk (same namespace) the agent's calls go out
	// on. Without it, calls use the simulated carrier where it is enabled.
	// +optional
	TrunkRef *LocalObjectReference `json:"trunkRef,omitempty"`

	// maxDurationSeconds ends a connected call after this long
	// (disconnection_reason max_duration). Defaults to 3600.
	// +optional
	// +kubebuilder:default=3600
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	MaxDurationSeconds int32 `json:"maxDurationSeconds,omitempty"`

	// script is what the agent does once a human answers, step by step.
	// Without a script the agent answers and listens until the callee hangs
	// up or maxDurationSeconds passes. After the last step the agent hangs up.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Script []ScriptStep `json:"script,omitempty"`

	// voicemail turns answering-machine detection on and says what to do
	// when a machine answers. Without it, every answered call runs the
	// script at once.
	// +optional
	Voicemail *VoicemailSpec `json:"voicemail,omitempty"`

	// answeringMachineDetection tunes the detector (used with voicemail).
	// Unset fields take the defaults shown.
	// +optional
	AnsweringMachineDetection *AMDSpec `json:"answeringMachineDetection,omitempty"`

	// analysis adds a language model to the post-call analysis (see
	// AgentAnalysis); without it, the built-in rules analyze the call.
	// +optional
	Analysis *AgentAnalysis `json:"analysis,omitempty"`
}

// ScriptStep is one step of an agent's script: exactly one of say, play,
// gather or hangup.
// +kubebuilder:validation:XValidation:rule="[has(self.say), has(self.play), has(self.gather), has(self.hangup)].filter(x, x).size() == 1",message="a script step has exactly one of say, play, gather, hangup"
type ScriptStep struct {
	// say speaks the text with text-to-speech. {{name}} placeholders are
	// filled from the call's variables.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Say string `json:"say,omitempty"`

	// play sends an audio file: a WAV (8 kHz, 16-bit, mono) stored under a
	// key of a ConfigMap's binaryData in the agent's namespace.
	// +optional
	Play *AudioSource `json:"play,omitempty"`

	// gather collects DTMF digits into one of the agent's extractedData
	// fields.
	// +optional
	Gather *GatherStep `json:"gather,omitempty"`

	// hangup ends the call.
	// +optional
	Hangup *HangupStep `json:"hangup,omitempty"`
}

// AudioSource is an audio file kept in a ConfigMap.
type AudioSource struct {
	// configMapKeyRef names the ConfigMap and its binaryData key.
	// +required
	ConfigMapKeyRef ConfigMapKeyReference `json:"configMapKeyRef"`
}

// ConfigMapKeyReference names a key of a ConfigMap in the same namespace.
type ConfigMapKeyReference struct {
	// name of the ConfigMap.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// key in its binaryData (or data).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`
}

// GatherStep collects digits the callee keys in (RFC 4733 telephone-events).
type GatherStep struct {
	// field is the extractedData field the digits go to: a string keeps
	// them as keyed, a number parses them, a boolean takes 1 as true and
	// 0 or 2 as false.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Field string `json:"field"`

	// prompt is spoken (text-to-speech, {{name}} placeholders filled) before
	// listening; keys pressed during it count.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Prompt string `json:"prompt,omitempty"`

	// numDigits stops gathering after that many digits. Without it,
	// gathering stops at finishOnKey or the timeout.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	NumDigits int32 `json:"numDigits,omitempty"`

	// finishOnKey ends the input (not kept). Defaults to #.
	// +optional
	// +kubebuilder:default="#"
	// +kubebuilder:validation:Pattern=`^[0-9*#]?$`
	FinishOnKey string `json:"finishOnKey,omitempty"`

	// timeoutSeconds is how long to wait for the first digit after the
	// prompt, and between digits. Defaults to 5.
	// +optional
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=60
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`
}

// HangupStep ends the call (disconnection_reason agent_hangup).
type HangupStep struct{}

// VoicemailAction is what an agent does when a machine answers.
// +kubebuilder:validation:Enum=hangup;leave_message
type VoicemailAction string

const (
	VoicemailHangup       VoicemailAction = "hangup"
	VoicemailLeaveMessage VoicemailAction = "leave_message"
)

// VoicemailSpec is what an agent does when an answering machine answers.
// +kubebuilder:validation:XValidation:rule="self.action != 'leave_message' || (has(self.message) && size(self.message) > 0)",message="leave_message needs a message"
type VoicemailSpec struct {
	// action: hangup at once, or leave_message once the greeting ends.
	// +required
	Action VoicemailAction `json:"action"`

	// message is spoken (text-to-speech, {{name}} placeholders filled)
	// after the machine's greeting.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Message string `json:"message,omitempty"`
}

// AMDSpec tunes answering-machine detection (in milliseconds). The
// defaults are those of the classic app_amd algorithm.
type AMDSpec struct {
	// initialSilenceMS of silence before the callee says anything: machine.
	// Defaults to 2500.
	// +optional
	// +kubebuilder:validation:Minimum=20
	// +kubebuilder:validation:Maximum=60000
	InitialSilenceMS *int32 `json:"initialSilenceMS,omitempty"`
	// greetingMS of speech in total: machine (a greeting too long for a
	// human's hello). Defaults to 1500.
	// +optional
	// +kubebuilder:validation:Minimum=20
	// +kubebuilder:validation:Maximum=60000
	GreetingMS *int32 `json:"greetingMS,omitempty"`
	// afterGreetingSilenceMS of silence after a word: human. Defaults to 800.
	// +optional
	// +kubebuilder:validation:Minimum=20
	// +kubebuilder:validation:Maximum=60000
	AfterGreetingSilenceMS *int32 `json:"afterGreetingSilenceMS,omitempty"`
	// totalAnalysisTimeMS without a decision: treated as human. Defaults to
	// 5000.
	// +optional
	// +kubebuilder:validation:Minimum=20
	// +kubebuilder:validation:Maximum=60000
	TotalAnalysisTimeMS *int32 `json:"totalAnalysisTimeMS,omitempty"`
	// minWordLengthMS of speech makes a word. Defaults to 100.
	// +optional
	// +kubebuilder:validation:Minimum=20
	// +kubebuilder:validation:Maximum=60000
	MinWordLengthMS *int32 `json:"minWordLengthMS,omitempty"`
	// betweenWordsSilenceMS of silence ends a word. Defaults to 50.
	// +optional
	// +kubebuilder:validation:Minimum=20
	// +kubebuilder:validation:Maximum=60000
	BetweenWordsSilenceMS *int32 `json:"betweenWordsSilenceMS,omitempty"`
	// maximumNumberOfWords: one more is a machine. Defaults to 3.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	MaximumNumberOfWords *int32 `json:"maximumNumberOfWords,omitempty"`
	// maximumWordLengthMS of uninterrupted speech: machine. Defaults to 5000.
	// +optional
	// +kubebuilder:validation:Minimum=20
	// +kubebuilder:validation:Maximum=60000
	MaximumWordLengthMS *int32 `json:"maximumWordLengthMS,omitempty"`
	// silenceThreshold is the mean absolute 16-bit amplitude under which a
	// 20 ms frame is silence. Defaults to 256.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=32768
	SilenceThreshold *int32 `json:"silenceThreshold,omitempty"`
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

	// conditions: Ready, False with reason NotAnOrganization or
	// SecretAccessDenied while the namespace is not an organization (its
	// API keys answer 401), DuplicateAgentID or TrunkNotFound.
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
// +kubebuilder:printcolumn:name="Trunk",type=string,JSONPath=`.spec.trunkRef.name`
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
