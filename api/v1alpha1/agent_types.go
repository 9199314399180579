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
// +kubebuilder:validation:XValidation:rule="[has(self.script), has(self.stream), has(self.conversation)].filter(x, x).size() <= 1",message="an agent has at most one of script, stream and conversation: each decides what the agent says"
// +kubebuilder:validation:XValidation:rule="!has(self.extractedData) || self.extractedData.all(f, self.extractedData.exists_one(g, g.name == f.name))",message="extractedData names must be unique"
// +kubebuilder:validation:XValidation:rule="!has(self.script) || self.script.all(s, !has(s.gather) || !has(s.gather.field) || (has(self.extractedData) && self.extractedData.exists(f, f.name == s.gather.field)))",message="a gather step's field must be one of extractedData"
// +kubebuilder:validation:XValidation:rule="!has(self.script) || self.script.all(s, !has(s.id) || self.script.exists_one(t, has(t.id) && t.id == s.id))",message="script step ids must be unique"
// +kubebuilder:validation:XValidation:rule="!has(self.script) || self.script.all(s, !has(s.gather) || ((!has(s.gather.next) || self.script.exists(t, has(t.id) && t.id == s.gather.next)) && (!has(s.gather.noMatch) || !has(s.gather.noMatch.next) || self.script.exists(t, has(t.id) && t.id == s.gather.noMatch.next)) && (!has(s.gather.noInput) || !has(s.gather.noInput.next) || self.script.exists(t, has(t.id) && t.id == s.gather.noInput.next))))",message="a gather's next (or its noMatch's or noInput's) must name a script step's id"
// +kubebuilder:validation:XValidation:rule="!has(self.script) || self.script.all(s, !has(s.gather) || !has(s.gather.choices) || s.gather.choices.all(c, !has(c.next) || self.script.exists(t, has(t.id) && t.id == c.next)))",message="a choice's next must name a script step's id"
// +kubebuilder:validation:XValidation:rule="!has(self.script) || self.script.all(s, !has(s.transfer) || !has(s.transfer.next) || self.script.exists(t, has(t.id) && t.id == s.transfer.next))",message="a transfer's next must name a script step's id"
// +kubebuilder:validation:XValidation:rule="!has(self.script) || !self.script.exists(s, has(s.transfer)) || has(self.transferDestinations)",message="a transfer step needs the agent's transferDestinations"
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

	// voice is how the agent sounds: the embedded voice by default, or a
	// text-to-speech server the organization runs (see AgentVoice).
	// +optional
	Voice *AgentVoice `json:"voice,omitempty"`

	// speech is the speech recognition server for this agent's calls.
	// Without it the embedded recognizer, on Switchboard's own CPU, hears
	// the callee.
	// +optional
	Speech *AgentSpeech `json:"speech,omitempty"`

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
	// stream hands the answered call's audio to the organization's own
	// voice bot over a WebSocket speaking Twilio's bidirectional Media
	// Streams protocol, after answering-machine detection, instead of a
	// script (the greeting is not spoken on a SIP trunk: the bot speaks).
	// +optional
	Stream *StreamSpec `json:"stream,omitempty"`

	// conversation puts the organization's language model on the line,
	// after answering-machine detection, instead of a script: the callee's
	// turns go to the model and its streamed answers are spoken (see
	// Conversation). The greeting is not spoken: beginMessage is.
	// +optional
	Conversation *Conversation `json:"conversation,omitempty"`

	// transferDestinations are the numbers this agent may hand a callee to
	// (transfer steps, the transfer_call tool, a Retell server's
	// transfer_number): E.164 numbers, or prefixes ending in * (+1415*). A
	// transfer to any other number is refused, as are numbers the number
	// lists block. Without it the agent cannot transfer.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:Pattern=`^\+[1-9][0-9]{0,14}\*?$`
	TransferDestinations []string `json:"transferDestinations,omitempty"`

	// sipHeaders are custom X- headers sent on every call's INVITE (and on
	// its transfers), which carriers and PBXs route on; a create-call
	// request's custom_sip_headers add to them and win on a clash. Names
	// are X- and up to 62 letters, digits and hyphens (X-Switchboard-* is
	// reserved); values printable ASCII up to 256 characters.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^[Xx]-[A-Za-z0-9-]{1,62}$') && !k.lowerAscii().startsWith('x-switchboard-'))",message="sipHeaders names are X- and up to 62 letters, digits and hyphens; X-Switchboard-* is reserved"
	SIPHeaders map[string]SIPHeaderValue `json:"sipHeaders,omitempty"`
}

// StreamSpec is where an agent streams its calls' audio: the bot's
// WebSocket. The URL goes through the same guard as webhook URLs when the
// call connects (public addresses only, ws:// only with --dev).
type StreamSpec struct {
	// url of the bot's WebSocket, wss://host/path (ws:// is accepted only
	// when the operator runs with --dev).
	// +required
	// +kubebuilder:validation:MinLength=6
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('wss://') || self.startsWith('ws://')",message="stream url must be wss://host/path (ws:// only in development)"
	// +kubebuilder:validation:XValidation:rule="!self.contains('@')",message="stream url must not contain credentials; use authSecretRef"
	URL string `json:"url"`

	// customParameters are sent in the start message's customParameters;
	// {{name}} placeholders are filled from the call's variables.
	// from_number, to_number and call_id are always added.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	CustomParameters map[string]string `json:"customParameters,omitempty"`

	// authSecretRef names a Secret (same namespace) with the key token,
	// sent on the upgrade as "Authorization: Bearer <token>", and optionally
	// signingSecret (whsec_...), with which the upgrade is signed in the
	// Standard Webhooks scheme over the call id and timestamp.
	// +optional
	AuthSecretRef *SecretReference `json:"authSecretRef,omitempty"`

	// connectTimeoutSeconds bounds the WebSocket connection and upgrade;
	// a bot not connected by then ends the call (stream_connect_failed).
	// +optional
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=30
	ConnectTimeoutSeconds int32 `json:"connectTimeoutSeconds,omitempty"`
}

// ScriptStep is one step of an agent's script: exactly one of say, play,
// gather, pressDigits, transfer or hangup.
// +kubebuilder:validation:XValidation:rule="[has(self.say), has(self.play), has(self.gather), has(self.pressDigits), has(self.transfer), has(self.hangup)].filter(x, x).size() == 1",message="a script step has exactly one of say, play, gather, pressDigits, transfer, hangup"
type ScriptStep struct {
	// id names the step, so that a gather's choice, noMatch or noInput can
	// go to it with next (jumping back is allowed: the call is still
	// bounded by maxDurationSeconds).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`
	ID string `json:"id,omitempty"`

	// bargeIn lets the callee interrupt the step's audio: once they start
	// speaking (or key a digit, in a gather) the agent stops talking
	// within 300 ms. Defaults to true for a gather's prompt and false for
	// say and play steps; set it to false for what must be heard to the
	// end, such as a legal disclaimer.
	// +optional
	BargeIn *bool `json:"bargeIn,omitempty"`

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

	// gather asks a question and takes the callee's answer (keyed digits,
	// a choice, or a typed value, spoken or keyed), and may branch.
	// +optional
	Gather *GatherStep `json:"gather,omitempty"`

	// pressDigits keys digits to the far end (a phone menu).
	// +optional
	PressDigits *PressDigitsStep `json:"pressDigits,omitempty"`

	// transfer hands the callee to a person; on failure the script goes on.
	// +optional
	Transfer *TransferStep `json:"transfer,omitempty"`

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

// GatherInput is a way the callee answers a gather.
// +kubebuilder:validation:Enum=dtmf;speech
type GatherInput string

const (
	// GatherDTMF takes keyed digits (RFC 4733 telephone-events).
	GatherDTMF GatherInput = "dtmf"
	// GatherSpeech listens to what the callee says (voice activity
	// detection, then speech recognition).
	GatherSpeech GatherInput = "speech"
)

// CaptureType is the kind of value a gather without choices takes.
// +kubebuilder:validation:Enum=number;digits;date;time;yes_no;text
type CaptureType string

const (
	// CaptureNumber: a number, keyed or spoken ("four", "twenty one", "4").
	CaptureNumber CaptureType = "number"
	// CaptureDigits: a string of digits, keyed or spoken one by one.
	CaptureDigits CaptureType = "digits"
	// CaptureDate: a date ("next Tuesday", "March 3rd"), kept as YYYY-MM-DD.
	CaptureDate CaptureType = "date"
	// CaptureTime: a time of day ("half past four", "16:30"), kept as HH:MM.
	CaptureTime CaptureType = "time"
	// CaptureYesNo: yes or no (spoken, or 1 for yes and 2 for no).
	CaptureYesNo CaptureType = "yes_no"
	// CaptureText: whatever the callee says, as recognized.
	CaptureText CaptureType = "text"
)

// GatherStep asks the callee a question and takes their answer: keyed
// digits, one of a list of choices (spoken or keyed), or a typed value.
//
// A gather with only field (and the digit settings) collects keyed digits
// as it always did. With choices, or a capture type, it also listens to
// speech by default, re-prompts on silence (noInput) and on an answer it
// cannot use (noMatch), and may branch to another step.
// +kubebuilder:validation:XValidation:rule="has(self.field) || has(self.choices) || has(self.capture)",message="a gather needs choices, a capture type or a field"
// +kubebuilder:validation:XValidation:rule="!has(self.choices) || !has(self.capture)",message="a gather has choices or a capture type, not both"
// +kubebuilder:validation:XValidation:rule="!has(self.input) || !self.input.exists(i, i == 'speech') || has(self.choices) || has(self.capture)",message="speech input needs choices or a capture type"
// +kubebuilder:validation:XValidation:rule="!has(self.choices) || self.choices.all(c, !has(c.digits) || self.choices.exists_one(d, has(d.digits) && d.digits == c.digits))",message="two choices of a gather have the same digits"
type GatherStep struct {
	// field is the extractedData field the answer goes to: a string keeps
	// it as given (the keyed digits, the choice's value, the captured
	// value), a number parses it, a boolean takes 1, yes and true as true
	// and 0, 2, no and false as false. Optional with choices or a capture
	// type (the answer then only decides where the script goes).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Field string `json:"field,omitempty"`

	// prompt is spoken (text-to-speech, {{name}} placeholders filled) before
	// listening; keys pressed and speech started during it count.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Prompt string `json:"prompt,omitempty"`

	// input is how the callee may answer. Defaults to [dtmf, speech] when
	// the gather has choices or a capture type, and to [dtmf] otherwise.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	Input []GatherInput `json:"input,omitempty"`

	// choices are the answers the gather accepts; the callee's answer
	// selects one by its phrases (spoken) or its digits (keyed). Values
	// are unique, and so are digits.
	// +optional
	// +listType=map
	// +listMapKey=value
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Choices []GatherChoice `json:"choices,omitempty"`

	// capture is the kind of value to take when there are no choices:
	// number, digits, date, time, yes_no or free text.
	// +optional
	Capture CaptureType `json:"capture,omitempty"`

	// noInput is what happens when the callee says and keys nothing.
	// +optional
	NoInput *GatherRetry `json:"noInput,omitempty"`

	// noMatch is what happens when the answer is none of the choices, or
	// not a value of the capture type.
	// +optional
	NoMatch *GatherRetry `json:"noMatch,omitempty"`

	// next is the id of the step to go to after an answer (a choice
	// without a next of its own, or a captured value). Without it the
	// script goes on with the following step.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Next string `json:"next,omitempty"`

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

	// minConfidencePercent is how sure the speech recognizer must be of a
	// spoken answer (its confidence, 0 to 1 in the transcript, as a
	// percentage) for the gather to take it: an answer heard with less is
	// no match, and noMatch asks again rather than keep a value the
	// recognizer doubts. 0 takes every answer. Defaults to 60 for a number
	// capture and 0 otherwise (hack/benchmarks.md gives the figures they were
	// chosen on). Keyed answers are always taken.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	MinConfidencePercent *int32 `json:"minConfidencePercent,omitempty"`

	// timeoutSeconds is how long to wait for the first digit or word after
	// the prompt, and between digits. Defaults to 5.
	// +optional
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=60
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`
}

// GatherChoice is one answer a gather accepts.
type GatherChoice struct {
	// value is what the gather's field takes, and the transcript's branch,
	// when this choice is selected.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Value string `json:"value"`

	// phrases are what the callee may say for this choice ("yes", "yeah",
	// "that's right"). The value itself always counts.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=256
	Phrases []string `json:"phrases,omitempty"`

	// digits keyed select this choice (for example 1).
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9*]{1,8}$`
	// +kubebuilder:validation:MaxLength=8
	Digits string `json:"digits,omitempty"`

	// next is the id of the step to go to when this choice is selected.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Next string `json:"next,omitempty"`
}

// GatherRetry says what to do when a gather got no answer, or none it can
// use: say prompt and listen again, up to retries times, then go to next.
type GatherRetry struct {
	// prompt is spoken before listening again ({{name}} placeholders
	// filled). Without it, the gather's own prompt is repeated.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Prompt string `json:"prompt,omitempty"`

	// retries is how many more times the gather listens. Defaults to 2.
	// +optional
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	Retries *int32 `json:"retries,omitempty"`

	// next is the id of the step to go to once the retries are used up.
	// Without it the script goes on with the following step.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Next string `json:"next,omitempty"`
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

// Inputs is how the gather takes its answer: keys, speech or both.
// Without input set, a gather with choices or a capture type takes both,
// one of keyed digits keys alone (as before there was speech).
func (g *GatherStep) Inputs() (keys, speech bool) {
	if len(g.Input) == 0 {
		return true, g.Choices != nil || g.Capture != ""
	}
	for _, in := range g.Input {
		keys = keys || in == GatherDTMF
		speech = speech || in == GatherSpeech
	}
	return keys, speech
}

// DefaultGatherRetries is a noInput's or noMatch's retries when unset
// (the CRD's default, for objects stored before it).
const DefaultGatherRetries = 2

// Tries is r.retries, defaulted.
func (r *GatherRetry) Tries() int {
	if r.Retries == nil {
		return DefaultGatherRetries
	}
	return int(*r.Retries)
}

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
