package v1alpha1

import (
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CallPhase is the call's status in the REST API.
// +kubebuilder:validation:Enum=queued;in_progress;ended;failed
type CallPhase string

const (
	CallQueued     CallPhase = "queued"
	CallInProgress CallPhase = "in_progress"
	CallEnded      CallPhase = "ended"
	CallFailed     CallPhase = "failed"
)

// Final reports whether no further transition can happen.
func (p CallPhase) Final() bool { return p == CallEnded || p == CallFailed }

// Disposition is what happened on the wire.
// +kubebuilder:validation:Enum=answered;answering_machine;no_answer;busy;rejected;unreachable;invalid_number;carrier_failure
type Disposition string

const (
	DispositionAnswered         Disposition = "answered"
	DispositionAnsweringMachine Disposition = "answering_machine"
	DispositionNoAnswer         Disposition = "no_answer"
	DispositionBusy             Disposition = "busy"
	DispositionRejected         Disposition = "rejected"
	DispositionUnreachable      Disposition = "unreachable"
	DispositionInvalidNumber    Disposition = "invalid_number"
	DispositionCarrierFailure   Disposition = "carrier_failure"
)

// Connected reports whether audio flowed, so there is a recording and a
// conversation to analyze.
func (d Disposition) Connected() bool {
	return d == DispositionAnswered || d == DispositionAnsweringMachine
}

// unconnectedReasons are the disconnection reasons of calls that never
// connected: every carrier reports the same for the same disposition.
var unconnectedReasons = map[Disposition]string{
	DispositionNoAnswer:       "no_answer",
	DispositionBusy:           "dial_busy",
	DispositionRejected:       "dial_rejected",
	DispositionUnreachable:    "dial_failed",
	DispositionInvalidNumber:  "invalid_destination",
	DispositionCarrierFailure: "carrier_error",
}

// UnconnectedReason is the disconnection reason of a call that ended with
// d without connecting, and "" for a connected one, whose reason says who
// hung up.
func (d Disposition) UnconnectedReason() string { return unconnectedReasons[d] }

// CallSource says where a call came from.
// +kubebuilder:validation:Enum=api;kubectl;dashboard;campaign
type CallSource string

const (
	// SourceAPI: created through POST /v1/calls.
	SourceAPI CallSource = "api"
	// SourceKubectl: created as a resource by a platform team.
	SourceKubectl CallSource = "kubectl"
	// SourceDashboard: placed from the dashboard's form.
	SourceDashboard CallSource = "dashboard"
	// SourceCampaign: placed by a Campaign; its metadata carries
	// campaign_id.
	SourceCampaign CallSource = "campaign"
)

// Annotations the REST API puts on the record of a call it refused (a
// blocked number, a carrier that would not accept it), so that the record
// is failed from the moment it exists: the reconciler copies them into
// status.failure and never dials.
const (
	RefusalCodeAnnotation    = "switchboard.dev/refusal-code"
	RefusalMessageAnnotation = "switchboard.dev/refusal-message"
)

// AcceptedAtAnnotation is when the REST API accepted the call (RFC 3339
// with nanoseconds): calls waiting for a trunk go out in that order, which
// creationTimestamp (whole seconds) cannot tell apart.
const AcceptedAtAnnotation = "switchboard.dev/accepted-at"

// QueueOrder is when the call joined the queue: the REST API's acceptance
// time, else (a Call applied with kubectl) its creation time.
func (c *Call) QueueOrder() time.Time {
	if t, err := time.Parse(time.RFC3339Nano, c.Annotations[AcceptedAtAnnotation]); err == nil {
		return t
	}
	return c.CreationTimestamp.Time
}

// WorkerLabel on a Call names the replica (its pod) that carries it: only
// that worker dials it, and it stays there for its whole life unless the
// worker is lost. A Call without it waits, queued, for the leader to
// assign it.
const WorkerLabel = "switchboard.dev/worker"

// Processed: the call is final and nothing is left to do after its end
// (a failure recorded, or an ended call analyzed); only its archive and
// deletion remain.
func (c *Call) Processed() bool {
	switch c.Status.Phase {
	case CallFailed:
		return meta.FindStatusCondition(c.Status.Conditions, ReadyCondition) != nil
	case CallEnded:
		return c.Status.Analysis != nil
	}
	return false
}

// StopRequestedAtAnnotation is when the REST API or the dashboard set
// spec.stop (RFC 3339 with nanoseconds). The stop counts from then, not
// from when the reconciler gets to it: a call the carrier had not ended by
// then ends as api_hangup, as the 202 promised.
const StopRequestedAtAnnotation = "switchboard.dev/stop-requested-at"

// StopRequestedAt is StopRequestedAtAnnotation's time; false when the
// stop came without one (kubectl patch) or it does not parse.
func (c *Call) StopRequestedAt() (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, c.Annotations[StopRequestedAtAnnotation])
	return t, err == nil
}

// CurrentPhase is the call's status. A Call the reconciler has not seen yet
// is queued, or failed when the REST API refused it.
func (c *Call) CurrentPhase() CallPhase {
	switch {
	case c.Status.Phase != "":
		return c.Status.Phase
	case c.Refusal() != nil:
		return CallFailed
	default:
		return CallQueued
	}
}

// Refusal is the REST API's reason for refusing the call, or nil.
func (c *Call) Refusal() *CallFailure {
	code := c.Annotations[RefusalCodeAnnotation]
	if code == "" {
		return nil
	}
	return &CallFailure{ErrorCode: code, Message: c.Annotations[RefusalMessageAnnotation]}
}

// CallSpec is what was asked for. It cannot change once the Call exists,
// except to ask for the call to stop, which cannot be undone.
// +kubebuilder:validation:XValidation:rule="self.agentID == oldSelf.agentID && self.toNumber == oldSelf.toNumber && (has(self.fromNumber) ? has(oldSelf.fromNumber) && self.fromNumber == oldSelf.fromNumber : !has(oldSelf.fromNumber)) && (has(self.variables) ? has(oldSelf.variables) && self.variables == oldSelf.variables : !has(oldSelf.variables)) && (has(self.metadata) ? has(oldSelf.metadata) && self.metadata == oldSelf.metadata : !has(oldSelf.metadata)) && (has(self.source) ? has(oldSelf.source) && self.source == oldSelf.source : !has(oldSelf.source))",message="a Call's spec cannot be changed (only spec.stop can be set); create a new Call instead"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.stop) || !oldSelf.stop || (has(self.stop) && self.stop)",message="a stopped Call cannot be resumed: spec.stop cannot be unset"
type CallSpec struct {
	// agentID is the agent_id (a UUID) of the Agent placing the call.
	// +required
	// +kubebuilder:validation:Pattern=`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`
	AgentID string `json:"agentID"`

	// toNumber is the number dialed, in E.164 form.
	// +required
	// +kubebuilder:validation:Pattern=`^\+[1-9][0-9]{6,14}$`
	ToNumber string `json:"toNumber"`

	// fromNumber is the caller ID asked for; it must equal the agent's
	// fromNumber. When empty, the agent's fromNumber at dial time is used.
	// +optional
	// +kubebuilder:validation:Pattern=`^\+[1-9][0-9]{6,14}$`
	FromNumber string `json:"fromNumber,omitempty"`

	// variables are the per-call values used by the agent's script: at
	// most 100, each value at most 1 KiB (a larger Call fails as
	// call_too_large before it is dialed).
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:MaxProperties=100
	Variables *apiextensionsv1.JSON `json:"variables,omitempty"`

	// metadata is the caller's JSON object, echoed back untouched: at most
	// 16 KiB as compact JSON (a larger Call fails as call_too_large before
	// it is dialed).
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	Metadata *apiextensionsv1.JSON `json:"metadata,omitempty"`

	// source is where the call came from: api for the REST API. Defaults to
	// kubectl, for Calls a platform team applies directly.
	// +optional
	// +kubebuilder:default=kubectl
	Source CallSource `json:"source,omitempty"`

	// sipHeaders are custom X- headers for this call's INVITE and
	// transfers (the create-call body's custom_sip_headers), added to the
	// agent's sipHeaders and winning on a clash; the same rules apply.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^[Xx]-[A-Za-z0-9-]{1,62}$') && !k.lowerAscii().startsWith('x-switchboard-'))",message="sipHeaders names are X- and up to 62 letters, digits and hyphens; X-Switchboard-* is reserved"
	SIPHeaders map[string]SIPHeaderValue `json:"sipHeaders,omitempty"`

	// stop asks for the call to end: a call not yet dialed fails as
	// canceled and is never dialed; a ringing or answered call is hung up
	// and ends as api_hangup. POST /v1/calls/{call_id}/stop sets it, as
	// does `kubectl patch call NAME --type merge -p '{"spec":{"stop":true}}'`.
	// It cannot be unset.
	// +optional
	Stop bool `json:"stop,omitempty"`
}

// CallFailure explains why a call never went out.
type CallFailure struct {
	// errorCode is the REST API error_code: dnc_blocked, number_blocked,
	// dispatch_error, dispatch_failed, agent_not_found, ...
	// +required
	ErrorCode string `json:"errorCode"`
	// message is the human-readable explanation.
	// +optional
	Message string `json:"message,omitempty"`
}

// CallRecording references a stored recording. Links to it are signed when
// the call is read, never stored.
type CallRecording struct {
	// key locates the recording in the recording store.
	// +required
	Key string `json:"key"`
	// contentType of the recording, for example audio/wav.
	// +optional
	ContentType string `json:"contentType,omitempty"`
	// sizeBytes of the stored recording.
	// +optional
	SizeBytes int64 `json:"sizeBytes,omitempty"`
	// storedAt is when the recording became available.
	// +optional
	StoredAt *metav1.Time `json:"storedAt,omitempty"`
}

// CallAnalysis is the post-call analysis.
type CallAnalysis struct {
	// summary of the call, in text.
	// +required
	Summary string `json:"summary"`
	// extractedData holds one entry per extractedData field of the agent,
	// in its order; the REST API renders them as the extracted_data object.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	ExtractedData []ExtractedValue `json:"extractedData,omitempty"`
	// analyzedAt is when the analysis completed.
	// +optional
	AnalyzedAt *metav1.Time `json:"analyzedAt,omitempty"`
}

// ExtractedValue is one extracted field. It is a list entry rather than an
// object key so that a null value survives status patches.
type ExtractedValue struct {
	// name is the agent's extractedData name.
	// +required
	Name string `json:"name"`
	// value is the extracted JSON value; absent when the conversation did
	// not provide it (null in the REST API).
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	Value *apiextensionsv1.JSON `json:"value,omitempty"`
}

// CallStatus is everything the REST API's call object reports, plus
// conditions for kubectl.
type CallStatus struct {
	// callID is the REST API's call_id.
	// +optional
	CallID string `json:"callID,omitempty"`
	// phase is the call's status: queued, in_progress, ended or failed.
	// +optional
	Phase CallPhase `json:"phase,omitempty"`
	// disposition is what happened on the wire; set when the call ends.
	// +optional
	Disposition Disposition `json:"disposition,omitempty"`
	// fromNumber is the caller ID actually used.
	// +optional
	FromNumber string `json:"fromNumber,omitempty"`
	// startedAt is when the call went out (microsecond precision, since the
	// carrier's progress is computed from it).
	// +optional
	StartedAt *metav1.MicroTime `json:"startedAt,omitempty"`
	// trunk is the SIPTrunk the call went out on; empty on the simulated
	// carrier.
	// +optional
	Trunk string `json:"trunk,omitempty"`
	// answeredAt is when the callee (or a machine) answered; SIP calls
	// only, so that a call interrupted by an operator restart is known to
	// have connected.
	// +optional
	AnsweredAt *metav1.MicroTime `json:"answeredAt,omitempty"`
	// endedAt is when the call ended.
	// +optional
	EndedAt *metav1.MicroTime `json:"endedAt,omitempty"`
	// durationMS is the connected time in milliseconds.
	// +optional
	DurationMS *int64 `json:"durationMS,omitempty"`
	// duration is durationMS for humans, for example 1m4s.
	// +optional
	Duration string `json:"duration,omitempty"`
	// stoppedAt is when the call was asked to stop (the
	// switchboard.dev/stop-requested-at annotation, else when the
	// reconciler acted on spec.stop): the call ended then (api_hangup)
	// unless the carrier had ended it before.
	// +optional
	StoppedAt *metav1.MicroTime `json:"stoppedAt,omitempty"`
	// disconnectionReason says why the call ended, for example agent_hangup.
	// +optional
	DisconnectionReason string `json:"disconnectionReason,omitempty"`
	// transfer is the agent's last transfer of the callee to a person, and
	// how it went.
	// +optional
	Transfer *CallTransfer `json:"transfer,omitempty"`

	// failure says why a failed call never went out.
	// +optional
	Failure *CallFailure `json:"failure,omitempty"`
	// recording is set once the recording is stored.
	// +optional
	Recording *CallRecording `json:"recording,omitempty"`
	// analysis is set once the post-call analysis is done.
	// +optional
	Analysis *CallAnalysis `json:"analysis,omitempty"`
	// emittedEvents are the event kinds whose deliveries have been created
	// for every endpoint subscribed at the time.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=3
	EmittedEvents []string `json:"emittedEvents,omitempty"`
	// observedGeneration is the generation last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions: Ready (True once the call is final and fully processed).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Call is one outbound phone call. Calls created through the REST API are
// named after their call_id (call-<hex>, as call_<hex> is not a valid name).
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=switchboard
// +kubebuilder:printcolumn:name="Call ID",type=string,JSONPath=`.status.callID`
// +kubebuilder:printcolumn:name="Agent",type=string,JSONPath=`.spec.agentID`
// +kubebuilder:printcolumn:name="To",type=string,JSONPath=`.spec.toNumber`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Disposition",type=string,JSONPath=`.status.disposition`
// +kubebuilder:printcolumn:name="Duration",type=string,JSONPath=`.status.duration`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Source",type=string,JSONPath=`.spec.source`,priority=1
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.disconnectionReason`,priority=1
// +kubebuilder:printcolumn:name="Error",type=string,JSONPath=`.status.failure.errorCode`,priority=1
// +kubebuilder:printcolumn:name="Transfer",type=string,JSONPath=`.status.transfer.result`,priority=1
// +kubebuilder:printcolumn:name="Transfer To",type=string,JSONPath=`.status.transfer.to`,priority=1
// +kubebuilder:printcolumn:name="Worker",type=string,JSONPath=`.metadata.labels.switchboard\.dev/worker`,priority=1
// +kubebuilder:selectablefield:JSONPath=`.status.callID`
type Call struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec CallSpec `json:"spec"`
	// +optional
	Status CallStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// CallList is a list of Calls.
type CallList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Call `json:"items"`
}
