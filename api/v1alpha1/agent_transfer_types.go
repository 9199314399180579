package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// TransferMode is how the callee is handed to a person.
// +kubebuilder:validation:Enum=cold;warm
type TransferMode string

const (
	// TransferCold hands the callee over at once: by SIP REFER, or by
	// bridging when the trunk refuses REFER or method says bridge.
	TransferCold TransferMode = "cold"
	// TransferWarm dials the person first, tells them who is calling (the
	// whisper) and connects the callee only once they accept.
	TransferWarm TransferMode = "warm"
)

// TransferMethod is how a cold transfer reaches the person.
// +kubebuilder:validation:Enum=refer;bridge
type TransferMethod string

const (
	// TransferByRefer asks the far end to call the person (SIP REFER, RFC
	// 3515); the result is the terminal NOTIFY's, not the 202. A trunk
	// that refuses REFER (405, 501, 603) gets a bridge instead.
	TransferByRefer TransferMethod = "refer"
	// TransferByBridge dials the person as a second call on the same trunk
	// and joins the two; both stay recorded.
	TransferByBridge TransferMethod = "bridge"
)

// TransferOptions say how a transfer is made. Unset fields take the
// defaults shown.
// +kubebuilder:validation:XValidation:rule="!has(self.mode) || self.mode != 'warm' || !has(self.method) || self.method == 'bridge'",message="a warm transfer always bridges: its method is bridge"
type TransferOptions struct {
	// mode is cold (hand over at once) or warm (the person hears a whisper
	// and accepts first). Defaults to cold.
	// +optional
	// +kubebuilder:default=cold
	Mode TransferMode `json:"mode,omitempty"`

	// method of a cold transfer: refer (the far end calls the person) or
	// bridge (Switchboard does, and stays on the line). Defaults to refer;
	// a warm transfer always bridges.
	// +optional
	Method TransferMethod `json:"method,omitempty"`

	// ringTimeoutSeconds bounds how long the person's phone rings (and, for
	// refer, how long the far end's result may take); then the transfer
	// failed with no_answer and the agent has the call back. Defaults to 30.
	// +optional
	// +kubebuilder:default=30
	// +kubebuilder:validation:Minimum=5
	// +kubebuilder:validation:Maximum=300
	RingTimeoutSeconds int32 `json:"ringTimeoutSeconds,omitempty"`

	// holdLine is said to the callee while the person's phone rings
	// (bridge and warm), then repeated every few seconds, so that the
	// callee is never left in silence. {{name}} placeholders are filled.
	// +optional
	// +kubebuilder:default="Please hold while I connect you."
	// +kubebuilder:validation:MaxLength=1024
	HoldLine string `json:"holdLine,omitempty"`

	// whisper is said to the person before the callee is connected (warm):
	// {{name}} placeholders are filled, and in a conversation {{summary}}
	// is the model's summary of the call so far.
	// +optional
	// +kubebuilder:default="You have a transferred call. Press 1 to accept, or hang up to decline."
	// +kubebuilder:validation:MaxLength=2048
	Whisper string `json:"whisper,omitempty"`

	// acceptDigit is the key the person presses to accept a warm transfer;
	// saying "yes" or "accept" counts too.
	// +optional
	// +kubebuilder:default="1"
	// +kubebuilder:validation:Pattern=`^[0-9*#]$`
	AcceptDigit string `json:"acceptDigit,omitempty"`

	// acceptTimeoutSeconds is how long the person has to accept after the
	// whisper; then the transfer failed (declined) and the agent has the
	// call back. Defaults to 15.
	// +optional
	// +kubebuilder:default=15
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=120
	AcceptTimeoutSeconds int32 `json:"acceptTimeoutSeconds,omitempty"`

	// showCalleeAsCaller sends the callee's number, not the agent's, as the
	// caller ID of a bridged call to the person (the trunk must allow it).
	// +optional
	ShowCalleeAsCaller bool `json:"showCalleeAsCaller,omitempty"`
}

// TransferStep hands the callee to a person. When the transfer fails
// (busy, no answer, declined, refused) the script goes on at next, or
// with the following step; the callee is never left in silence.
type TransferStep struct {
	// to is the person's number, E.164, or a {{name}} placeholder filled
	// from the call's variables. It must be one of the agent's
	// transferDestinations, and pass the number lists as a call would.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=132
	// +kubebuilder:validation:Pattern=`^(\+[1-9][0-9]{6,14}|\{\{[a-zA-Z_][a-zA-Z0-9_]*\}\})$`
	To string `json:"to"`

	TransferOptions `json:",inline"`

	// next is the id of the step to go to when the transfer failed.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Next string `json:"next,omitempty"`
}

// PressDigitsStep keys digits to the far end, to get through a phone menu
// ("press 2 for billing"): RFC 4733 telephone events, or SIP INFO where the
// trunk says so.
type PressDigitsStep struct {
	// digits to press: 0-9, *, #, A-D; w pauses half a second.
	// +required
	// +kubebuilder:validation:Pattern=`^[0-9*#A-Dw]{1,64}$`
	Digits string `json:"digits"`

	// delayMs is waited before the first key, since phone menus speak
	// slowly and drop keys pressed over their prompt. Defaults to 1000
	// (Retell's press_digit default).
	// +optional
	// +kubebuilder:default=1000
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=5000
	DelayMs *int32 `json:"delayMs,omitempty"`
}

// TransferDestination is a number a conversation's model may transfer to,
// and when.
type TransferDestination struct {
	// number is the person's number, E.164, or a {{name}} placeholder.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=132
	// +kubebuilder:validation:Pattern=`^(\+[1-9][0-9]{6,14}|\{\{[a-zA-Z_][a-zA-Z0-9_]*\}\})$`
	Number string `json:"number"`

	// description tells the model when to pick it ("billing questions").
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Description string `json:"description"`
}

// ConversationTransfer is what the transfer_call tool (and a Retell
// server's transfer_number) may do.
type ConversationTransfer struct {
	// destinations the model chooses from by their description (llm's
	// transfer_call); each must be one of the agent's transferDestinations.
	// +optional
	// +listType=map
	// +listMapKey=number
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Destinations []TransferDestination `json:"destinations,omitempty"`

	TransferOptions `json:",inline"`
}

// SIPHeaderValue is a custom SIP header's value: printable ASCII.
// +kubebuilder:validation:MaxLength=256
// +kubebuilder:validation:Pattern=`^[ -~]*$`
type SIPHeaderValue string

// SIPHeadersMaxCount and friends bound custom SIP headers: the name is
// X- and up to 62 letters, digits and hyphens; the value printable ASCII.
const (
	SIPHeadersMaxCount      = 16
	SIPHeaderValueMaxLength = 256
	SIPHeaderNamePattern    = `^[Xx]-[A-Za-z0-9-]{1,62}$`
	SIPHeaderValuePattern   = `^[ -~]*$`
	SIPHeaderReservedPrefix = "x-switchboard-"
)

// TransferResult is how a transfer ended.
// +kubebuilder:validation:Enum=transferred;bridged;busy;no_answer;declined;refused;failed;not_allowed
type TransferResult string

const (
	// TransferTransferred: the far end reported the person answered (the
	// REFER's final NOTIFY said 200); the agent left the call.
	TransferTransferred TransferResult = "transferred"
	// TransferBridged: the person answered (and accepted, warm) and was
	// joined to the callee; the call ends when either hangs up.
	TransferBridged TransferResult = "bridged"
	// TransferBusy, TransferNoAnswer: the person's line was busy, or did
	// not answer within ringTimeoutSeconds (or the REFER's NOTIFY never
	// came).
	TransferBusy     TransferResult = "busy"
	TransferNoAnswer TransferResult = "no_answer"
	// TransferDeclined: the person hung up on the whisper, or did not
	// accept in time (warm).
	TransferDeclined TransferResult = "declined"
	// TransferRefused: the far end refused the REFER and bridging was not
	// possible, or the person's number refused the call.
	TransferRefused TransferResult = "refused"
	// TransferFailed: anything else (the second call could not be placed).
	TransferFailed TransferResult = "failed"
	// TransferNotAllowed: the number is not one of the agent's
	// transferDestinations, or a number list blocks it; nothing was dialed.
	TransferNotAllowed TransferResult = "not_allowed"
)

// Succeeded reports whether the callee reached the person.
func (r TransferResult) Succeeded() bool { return r == TransferTransferred || r == TransferBridged }

// Disconnection reasons of a transferred call, as Retell names them.
const (
	// ReasonCallTransfer: a cold transfer by REFER succeeded.
	ReasonCallTransfer = "call_transfer"
	// ReasonTransferBridged: a bridged (cold or warm) transfer connected
	// the callee to the person, and the call then ended.
	ReasonTransferBridged = "transfer_bridged"
)

// CallTransfer is a call's transfer, as its status and events report it.
type CallTransfer struct {
	// to is the person's number.
	// +required
	To string `json:"to"`
	// mode is cold or warm.
	// +required
	Mode TransferMode `json:"mode"`
	// method is refer or bridge: how it was made, after any fallback
	// (a refused REFER bridges).
	// +required
	Method TransferMethod `json:"method"`
	// result is how it ended.
	// +required
	Result TransferResult `json:"result"`
	// sipStatus is the SIP status that decided it (the NOTIFY's sipfrag,
	// the REFER's refusal, the second call's final response); 0 when none.
	// +optional
	SIPStatus int32 `json:"sipStatus,omitempty"`
	// detail says in words why it failed.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Detail string `json:"detail,omitempty"`
	// requestedAt is when the agent asked for it.
	// +optional
	RequestedAt *metav1.MicroTime `json:"requestedAt,omitempty"`
	// connectedAt is when the callee reached the person.
	// +optional
	ConnectedAt *metav1.MicroTime `json:"connectedAt,omitempty"`
	// secondLegMS is how long the call to the person lasted once answered
	// (bridged transfers), in milliseconds.
	// +optional
	SecondLegMS *int64 `json:"secondLegMS,omitempty"`
}

// The defaults of TransferOptions, as the CRD sets them.
const (
	DefaultTransferRingTimeoutSeconds   = 30
	DefaultTransferAcceptTimeoutSeconds = 15
	DefaultTransferHoldLine             = "Please hold while I connect you."
	DefaultTransferWhisper              = "You have a transferred call. Press 1 to accept, or hang up to decline."
	DefaultTransferAcceptDigit          = "1"
)

// WithDefaults is o with every unset field at the CRD's default, and a
// warm transfer's method bridge: an Agent read from a cache written before
// a default existed, or built in code, behaves as one applied today.
func (o TransferOptions) WithDefaults() TransferOptions {
	if o.Mode == "" {
		o.Mode = TransferCold
	}
	if o.Method == "" {
		o.Method = TransferByRefer
	}
	if o.Mode == TransferWarm {
		o.Method = TransferByBridge
	}
	if o.RingTimeoutSeconds <= 0 {
		o.RingTimeoutSeconds = DefaultTransferRingTimeoutSeconds
	}
	if o.AcceptTimeoutSeconds <= 0 {
		o.AcceptTimeoutSeconds = DefaultTransferAcceptTimeoutSeconds
	}
	if o.HoldLine == "" {
		o.HoldLine = DefaultTransferHoldLine
	}
	if o.Whisper == "" {
		o.Whisper = DefaultTransferWhisper
	}
	if o.AcceptDigit == "" {
		o.AcceptDigit = DefaultTransferAcceptDigit
	}
	return o
}
