package v1alpha1

import apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

// ConversationAPIKeyKey is the key of a conversation model's API key
// Secret (the same key as the analysis model's, so one Secret serves both).
const ConversationAPIKeyKey = AnalysisAPIKeySecretKey

// FunctionSigningSecretKey is the key of a custom function's Secret that
// holds its Standard Webhooks signing secret (whsec_...).
const FunctionSigningSecretKey = "signingSecret"

// Built-in tools a conversation may give its model, named as the peers
// name them (Retell's general tools).
const (
	// ToolEndCall: the model says a last line, then the agent hangs up
	// (disconnection_reason agent_hangup).
	ToolEndCall = "end_call"
	// ToolPressDigit: the agent keys digits (RFC 4733), to get through a
	// phone menu.
	ToolPressDigit = "press_digit"
	// ToolTransferCall: hand the callee to one of tools.transfer's
	// destinations (cold or warm), and get the call back when the transfer
	// fails.
	ToolTransferCall = "transfer_call"
)

// Conversation makes the agent converse: every turn of the callee goes to
// a response engine, the organization's language model, and what it
// answers is spoken as it streams. Exactly one response engine: llm (an
// OpenAI-compatible chat-completions endpoint) or llmWebSocket (a server
// written for Retell's custom-LLM WebSocket protocol).
// +kubebuilder:validation:XValidation:rule="has(self.llm) != has(self.llmWebSocket)",message="a conversation has exactly one response engine: llm or llmWebSocket"
// +kubebuilder:validation:XValidation:rule="!has(self.llmWebSocket) || (!has(self.systemPrompt) && !has(self.tools))",message="a Retell custom-LLM server writes its own prompt and runs its own tools: systemPrompt and tools are for llm"
// +kubebuilder:validation:XValidation:rule="!has(self.tools) || !has(self.tools.builtIn) || !self.tools.builtIn.exists(t, t == 'transfer_call') || (has(self.transfer) && has(self.transfer.destinations))",message="the transfer_call tool needs transfer.destinations to choose from"
type Conversation struct {
	// llm is an OpenAI-compatible chat-completions endpoint (vLLM, Ollama,
	// llama.cpp's server, a hosted API), asked with streamed answers.
	// +optional
	LLM *ConversationLLM `json:"llm,omitempty"`

	// llmWebSocket is a server speaking Retell's custom-LLM WebSocket
	// protocol: Switchboard dials <url>/<call_id> when the call is answered.
	// +optional
	LLMWebSocket *ConversationWebSocket `json:"llmWebSocket,omitempty"`

	// systemPrompt is the model's instructions (llm only). {{name}}
	// placeholders are filled from the call's variables; a call missing
	// one is refused at create, as requiredVariables are.
	// +optional
	// +kubebuilder:validation:MaxLength=32768
	SystemPrompt string `json:"systemPrompt,omitempty"`

	// beginMessage is what the agent says first, with {{name}}
	// placeholders filled (llm only; a Retell server sends its own). Empty:
	// the agent waits for the callee to speak first.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	BeginMessage string `json:"beginMessage,omitempty"`

	// tools the model may call (llm only).
	// +optional
	Tools *ConversationTools `json:"tools,omitempty"`

	// transfer is where and how the agent hands the callee to a person:
	// the transfer_call tool's destinations (llm), and the options of a
	// Retell server's transfer_number (which must be one of the agent's
	// transferDestinations).
	// +optional
	Transfer *ConversationTransfer `json:"transfer,omitempty"`

	// turnTaking tunes when the callee's turn ends, what interrupts the
	// agent and when the agent reminds a silent callee.
	// +optional
	TurnTaking *TurnTaking `json:"turnTaking,omitempty"`

	// fallbackLine is said before the agent hangs up when the response
	// engine fails (unreachable, an error, no first token in time).
	// +optional
	// +kubebuilder:default="I'm sorry, I'm having trouble on my end. We will call you back. Goodbye."
	// +kubebuilder:validation:MaxLength=1024
	FallbackLine string `json:"fallbackLine,omitempty"`

	// maxTurns bounds the agent's answers in one call; the agent hangs up
	// after the last (disconnection_reason max_duration).
	// +optional
	// +kubebuilder:default=200
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	MaxTurns int32 `json:"maxTurns,omitempty"`
}

// ConversationLLM is an OpenAI-compatible chat-completions endpoint.
type ConversationLLM struct {
	// url is the API's base URL; requests go to url + /chat/completions
	// (https://llm.example.com/v1). https and a public address, like
	// webhook URLs, unless the operator runs with --dev.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://[^\s]+$`
	URL string `json:"url"`

	// model is the model name the endpoint serves.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Model string `json:"model"`

	// apiKeySecretRef names a Secret (same namespace) whose key api-key is
	// sent as the bearer token; none is sent without it.
	// +optional
	APIKeySecretRef *SecretReference `json:"apiKeySecretRef,omitempty"`

	// temperature, from "0" to "2" (a string: Kubernetes APIs carry no
	// floats). Unset: the endpoint's default.
	// +optional
	// +kubebuilder:validation:Pattern=`^(0|1)(\.[0-9]{1,3})?$|^2(\.0{1,3})?$`
	Temperature string `json:"temperature,omitempty"`

	// maxTokens bounds one answer.
	// +optional
	// +kubebuilder:default=250
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16384
	MaxTokens int32 `json:"maxTokens,omitempty"`

	// firstTokenTimeoutMs bounds the wait for an answer's first token; a
	// model that is slower, or fails, makes the agent say the fallback
	// line and hang up (disconnection_reason error_llm).
	// +optional
	// +kubebuilder:default=5000
	// +kubebuilder:validation:Minimum=200
	// +kubebuilder:validation:Maximum=60000
	FirstTokenTimeoutMs int32 `json:"firstTokenTimeoutMs,omitempty"`
}

// ConversationWebSocket is a server written for Retell's custom-LLM
// WebSocket protocol (its Node and Python demos included).
type ConversationWebSocket struct {
	// url is the server's WebSocket endpoint; the call's id is appended as
	// the last path segment (wss://bot.example.com/llm-websocket/<call_id>).
	// wss and a public address unless the operator runs with --dev.
	// +required
	// +kubebuilder:validation:MinLength=6
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('wss://') || self.startsWith('ws://')",message="llmWebSocket url must be wss://host/path (ws:// only in development)"
	// +kubebuilder:validation:XValidation:rule="!self.contains('@')",message="llmWebSocket url must not contain credentials"
	URL string `json:"url"`

	// connectTimeoutSeconds bounds the connection and upgrade; a server not
	// connected by then ends the call (error_llm_websocket_open).
	// +optional
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=30
	ConnectTimeoutSeconds int32 `json:"connectTimeoutSeconds,omitempty"`
}

// ConversationTools are the tools an llm conversation's model may call.
// +kubebuilder:validation:XValidation:rule="!has(self.builtIn) || !has(self.functions) || self.functions.all(f, !(f.name in self.builtIn))",message="a function may not take a built-in tool's name"
type ConversationTools struct {
	// builtIn are the built-in tools: end_call, press_digit and
	// transfer_call (with the conversation's transfer).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:Enum=end_call;press_digit;transfer_call
	BuiltIn []string `json:"builtIn,omitempty"`

	// functions are the organization's own tools, called over HTTPS; their
	// names are unique.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Functions []ConversationFunction `json:"functions,omitempty"`
}

// ConversationFunction is a custom function: Switchboard posts
// {"name", "call", "args"} to url, signed like its webhooks (Standard
// Webhooks), and gives the answer's body back to the model. Arguments that
// fail the declared parameters' schema are never sent.
type ConversationFunction struct {
	// name the model calls it by.
	// +required
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9_-]{1,64}$`
	Name string `json:"name"`

	// description tells the model when to call it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Description string `json:"description"`

	// parameters is the JSON Schema (type object) of the arguments.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	Parameters *apiextensionsv1.JSON `json:"parameters,omitempty"`

	// url the call is posted to: https and a public address unless the
	// operator runs with --dev.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://[^\s]+$`
	URL string `json:"url"`

	// signingSecretRef names a Secret (same namespace) whose key
	// signingSecret (whsec_...) signs the request; unsigned without it.
	// +optional
	SigningSecretRef *SecretReference `json:"signingSecretRef,omitempty"`

	// timeoutMs bounds one attempt; a failed attempt is retried at most
	// twice (as Retell does), then the model is told the function failed.
	// +optional
	// +kubebuilder:default=5000
	// +kubebuilder:validation:Minimum=100
	// +kubebuilder:validation:Maximum=60000
	TimeoutMs int32 `json:"timeoutMs,omitempty"`
}

// TurnTaking tunes the conversation's turns. Unset fields take the
// defaults shown (LiveKit's endpointing, Retell's reminders).
type TurnTaking struct {
	// minEndpointingDelayMs is the silence after the callee's speech before
	// their turn ends.
	// +optional
	// +kubebuilder:default=500
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=5000
	MinEndpointingDelayMs *int32 `json:"minEndpointingDelayMs,omitempty"`

	// maxEndpointingDelayMs is the silence waited for instead when what
	// the callee said sounds unfinished ("and", "um", "so").
	// +optional
	// +kubebuilder:default=3000
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	MaxEndpointingDelayMs *int32 `json:"maxEndpointingDelayMs,omitempty"`

	// minInterruptionMs is how long the callee must speak over the agent
	// to interrupt it (barge-in); shorter sounds do not.
	// +optional
	// +kubebuilder:default=500
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=5000
	MinInterruptionMs *int32 `json:"minInterruptionMs,omitempty"`

	// backchannels are words that never interrupt the agent ("uh-huh",
	// "yeah", "okay"): said alone while it speaks, they are noted and the
	// agent goes on.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=64
	Backchannels []string `json:"backchannels,omitempty"`

	// reminderAfterMs of the callee's silence after the agent's turn asks
	// the engine for a reminder.
	// +optional
	// +kubebuilder:default=10000
	// +kubebuilder:validation:Minimum=1000
	// +kubebuilder:validation:Maximum=600000
	ReminderAfterMs int32 `json:"reminderAfterMs,omitempty"`

	// reminderMaxCount bounds the reminders in a row; after the last, the
	// agent hangs up (disconnection_reason inactivity). 0 disables them.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	ReminderMaxCount *int32 `json:"reminderMaxCount,omitempty"`
}
