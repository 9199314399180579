package v1alpha1

// VoiceAPIKeyKey is the key of a voice server's API key Secret (the same
// key as the models', so one Secret may serve all).
const VoiceAPIKeyKey = AnalysisAPIKeySecretKey

// AgentVoice is how the agent sounds, in every line it says (say steps,
// prompts, the greeting, the voicemail message, a conversation's answers):
// the embedded voice, on Switchboard's own CPU, or a text-to-speech server
// the organization runs.
type AgentVoice struct {
	// server is an OpenAI-compatible speech endpoint (POST
	// <url>/audio/speech): Kokoro-FastAPI, Speaches, openedai-speech, a
	// hosted API. A line the server fails (slow to its first byte, an
	// error, a malformed stream) is said in the embedded voice, and the
	// transcript says so.
	// +optional
	Server *VoiceServer `json:"server,omitempty"`
}

// VoiceServer is an OpenAI-compatible text-to-speech endpoint.
type VoiceServer struct {
	// url is the API's base URL; requests go to url + /audio/speech
	// (https://tts.example.com/v1). https and a public address, like
	// webhook URLs, unless the operator runs with --dev (or the host is
	// one of --allow-private-model-hosts).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://[^\s]+$`
	URL string `json:"url"`

	// model the server speaks with (tts-1, kokoro, ...).
	// +optional
	// +kubebuilder:default="tts-1"
	// +kubebuilder:validation:MaxLength=256
	Model string `json:"model,omitempty"`

	// voice is the server's voice name (alloy, af_heart, ...).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Voice string `json:"voice"`

	// speed, from "0.25" to "4.0" (a string: Kubernetes APIs carry no
	// floats). Unset: the server's default (1).
	// +optional
	// +kubebuilder:validation:Pattern=`^(0\.(2[5-9]|[3-9][0-9]?)|[1-3](\.[0-9]{1,2})?|4(\.0{1,2})?)$`
	Speed string `json:"speed,omitempty"`

	// apiKeySecretRef names a Secret (same namespace) whose key api-key is
	// sent as the bearer token; none is sent without it.
	// +optional
	APIKeySecretRef *SecretReference `json:"apiKeySecretRef,omitempty"`

	// firstByteTimeoutMs bounds the wait for a line's first audio; a
	// slower server's line is said in the embedded voice.
	// +optional
	// +kubebuilder:default=2000
	// +kubebuilder:validation:Minimum=100
	// +kubebuilder:validation:Maximum=30000
	FirstByteTimeoutMs int32 `json:"firstByteTimeoutMs,omitempty"`
}
