package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// CampaignLabel on a Call names the Campaign that placed it.
const CampaignLabel = "switchboard.dev/campaign"

// CampaignState is where a campaign is.
// +kubebuilder:validation:Enum=scheduled;running;paused;completed;canceled
type CampaignState string

// A campaign is scheduled until its start time, running while it has
// contacts to dial, paused while spec.paused, and ends completed (every
// contact final) or canceled.
const (
	CampaignScheduled CampaignState = "scheduled"
	CampaignRunning   CampaignState = "running"
	CampaignPaused    CampaignState = "paused"
	CampaignCompleted CampaignState = "completed"
	CampaignCanceled  CampaignState = "canceled"
)

// Weekday is a day of the week, in three lowercase letters.
// +kubebuilder:validation:Enum=mon;tue;wed;thu;fri;sat;sun
type Weekday string

// CallingWindow is when a contact may be called, in the contact's own
// time zone.
// +kubebuilder:validation:XValidation:rule="self.start < self.end",message="callingWindow.start must be before callingWindow.end (a window may not span midnight)"
// +kubebuilder:validation:XValidation:rule="!has(self.startAt) || !has(self.endAt) || self.startAt < self.endAt",message="callingWindow.startAt must be before callingWindow.endAt"
type CallingWindow struct {
	// start is the local time of day calls may begin, HH:MM (24 h).
	// +optional
	// +kubebuilder:default="08:00"
	// +kubebuilder:validation:Pattern=`^([01][0-9]|2[0-3]):[0-5][0-9]$`
	Start string `json:"start,omitempty"`
	// end is the local time of day calls stop being placed, HH:MM
	// (exclusive; 24:00 is midnight).
	// +optional
	// +kubebuilder:default="21:00"
	// +kubebuilder:validation:Pattern=`^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$`
	End string `json:"end,omitempty"`
	// days are the local days of the week calls may be placed on; all
	// when empty.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=7
	Days []Weekday `json:"days,omitempty"`
	// startAt is when the campaign may place its first call.
	// +optional
	StartAt *metav1.Time `json:"startAt,omitempty"`
	// endAt is when it stops placing calls; contacts left are then
	// skipped as window_closed.
	// +optional
	EndAt *metav1.Time `json:"endAt,omitempty"`
}

// CampaignPacing bounds how fast a campaign dials. Both bounds hold within
// the organization's own quotas, which several campaigns share fairly.
type CampaignPacing struct {
	// callsPerMinute is how many calls it places a minute at most.
	// +optional
	// +kubebuilder:default=60
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=60000
	CallsPerMinute int32 `json:"callsPerMinute,omitempty"`
	// maxConcurrent is how many of its calls may be live at once.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	MaxConcurrent int32 `json:"maxConcurrent,omitempty"`
}

// RedialRule is how a contact whose attempt ended one way is tried again.
type RedialRule struct {
	// attempts is how many attempts a contact gets in all, the first
	// included; 1 means no redial.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=20
	Attempts int32 `json:"attempts,omitempty"`
	// minGap is the least time between two attempts, for example 30m.
	// +optional
	MinGap *metav1.Duration `json:"minGap,omitempty"`
	// perDay is how many attempts a contact gets on one local day at most;
	// no bound when unset.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=20
	PerDay int32 `json:"perDay,omitempty"`
}

// RedialPolicy says how attempts that did not reach the callee are tried
// again, per outcome. An outcome without a rule is final.
type RedialPolicy struct {
	// +optional
	Busy *RedialRule `json:"busy,omitempty"`
	// +optional
	NoAnswer *RedialRule `json:"noAnswer,omitempty"`
	// +optional
	AnsweringMachine *RedialRule `json:"answeringMachine,omitempty"`
	// carrierFailure also covers calls the carrier did not accept
	// (dispatch_error, dispatch_failed).
	// +optional
	CarrierFailure *RedialRule `json:"carrierFailure,omitempty"`
	// lastAttemptVariables are merged into the variables of a contact's
	// last attempt (for example a script step that leaves a voicemail).
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:MaxProperties=20
	LastAttemptVariables *apiextensionsv1.JSON `json:"lastAttemptVariables,omitempty"`
}

// CampaignContact is one number to call, for Campaigns declared as YAML;
// the REST API keeps its contacts in the history store instead.
type CampaignContact struct {
	// toNumber in E.164 form.
	// +required
	// +kubebuilder:validation:Pattern=`^\+[1-9][0-9]{6,14}$`
	ToNumber string `json:"toNumber"`
	// timezone is the contact's IANA time zone; from the number when unset.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Timezone string `json:"timezone,omitempty"`
	// variables for this contact's calls.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:MaxProperties=100
	Variables *apiextensionsv1.JSON `json:"variables,omitempty"`
}

// CampaignSpec is a campaign: who calls, when, how fast, and how often.
// +kubebuilder:validation:XValidation:rule="self.agentID == oldSelf.agentID",message="a Campaign's agentID cannot be changed; create a new Campaign instead"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.canceled) || !oldSelf.canceled || (has(self.canceled) && self.canceled)",message="a canceled Campaign cannot be resumed: spec.canceled cannot be unset"
type CampaignSpec struct {
	// agentID is the agent_id of the Agent placing the calls.
	// +required
	// +kubebuilder:validation:Pattern=`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`
	AgentID string `json:"agentID"`
	// displayName is a name for people.
	// +optional
	// +kubebuilder:validation:MaxLength=200
	DisplayName string `json:"displayName,omitempty"`
	// callingWindow: 08:00 to 21:00 every day, local, when unset.
	// +optional
	CallingWindow CallingWindow `json:"callingWindow,omitempty"`
	// +optional
	Pacing CampaignPacing `json:"pacing,omitempty"`
	// +optional
	Redial RedialPolicy `json:"redial,omitempty"`
	// contacts declared in the resource (at most 1000; a larger campaign
	// is created through POST /v1/campaigns). They are copied to the
	// history store once; edits to this list after that are not applied.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1000
	Contacts []CampaignContact `json:"contacts,omitempty"`
	// paused stops new dials (calls in progress finish) until unset.
	// +optional
	Paused bool `json:"paused,omitempty"`
	// canceled ends the campaign: contacts not yet dialed are skipped,
	// calls in progress finish. It cannot be unset.
	// +optional
	Canceled bool `json:"canceled,omitempty"`
}

// CampaignStatus counts the campaign's contacts. The counters are written
// every few seconds while it runs, not per call.
type CampaignStatus struct {
	// state: scheduled, running, paused, completed or canceled.
	// +optional
	State CampaignState `json:"state,omitempty"`
	// contactsImported: spec.contacts are in the history store.
	// +optional
	ContactsImported bool `json:"contactsImported,omitempty"`
	// total contacts.
	// +optional
	Total int64 `json:"total"`
	// pending: not final yet (waiting or due).
	// +optional
	Pending int64 `json:"pending"`
	// dialing: an attempt in progress.
	// +optional
	Dialing int64 `json:"dialing"`
	// done: final (answered, out of attempts, skipped, canceled).
	// +optional
	Done int64 `json:"done"`
	// answered: final with a call a person answered.
	// +optional
	Answered int64 `json:"answered"`
	// skipped: never dialed (do-not-call or block list, no calling window).
	// +optional
	Skipped int64 `json:"skipped"`
	// waiting: pending contacts outside their calling window or redial gap.
	// +optional
	Waiting int64 `json:"waiting"`
	// nextDueAt is when the first waiting contact may be dialed.
	// +optional
	NextDueAt *metav1.Time `json:"nextDueAt,omitempty"`
	// waitingGroups are the waiting contacts by the time zones their
	// calling window is evaluated in, the group that opens first first:
	// at most ten groups.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	WaitingGroups []CampaignWaitingGroup `json:"waitingGroups,omitempty"`
	// outcomes counts final contacts by their last outcome.
	// +optional
	Outcomes map[string]int64 `json:"outcomes,omitempty"`
	// startedAt is when it first dialed; completedAt when it ended.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
	// observedGeneration is the generation last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions: Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Campaign is many calls declared once: contacts called by one agent,
// paced, inside each contact's calling window, redialed by policy. Its
// name is its campaign_id.
// CampaignWaitingGroup is the waiting contacts of one set of time zones.
type CampaignWaitingGroup struct {
	// zones are the IANA time zones (several for a number whose country
	// spans zones: its window must be open in all of them).
	// +optional
	// +listType=atomic
	Zones []string `json:"zones,omitempty"`
	// count is how many contacts wait.
	Count int64 `json:"count"`
	// nextDueAt is when the first of them may be dialed.
	NextDueAt metav1.Time `json:"nextDueAt"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=switchboard
// +kubebuilder:printcolumn:name="Agent",type=string,JSONPath=`.spec.agentID`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Total",type=integer,JSONPath=`.status.total`
// +kubebuilder:printcolumn:name="Done",type=integer,JSONPath=`.status.done`
// +kubebuilder:printcolumn:name="Answered",type=integer,JSONPath=`.status.answered`
// +kubebuilder:printcolumn:name="Pending",type=integer,JSONPath=`.status.pending`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Waiting",type=integer,JSONPath=`.status.waiting`,priority=1
// +kubebuilder:printcolumn:name="Next",type=date,JSONPath=`.status.nextDueAt`,priority=1
type Campaign struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec CampaignSpec `json:"spec"`
	// +optional
	Status CampaignStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// CampaignList is a list of Campaigns.
type CampaignList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Campaign `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, &Campaign{}, &CampaignList{})
		return nil
	})
}
