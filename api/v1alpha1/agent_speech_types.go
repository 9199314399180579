package v1alpha1

// SpeechAPIKeyKey is the key of an agent's speech-server Secret that holds
// the API key, sent as a bearer token.
const SpeechAPIKeyKey = "apiKey"

// Speech recognition protocols a server may speak.
const (
	// SpeechProtocolOpenAI is an OpenAI-compatible transcription endpoint
	// (POST /v1/audio/transcriptions), one request per utterance:
	// whisper.cpp's server, faster-whisper servers, vLLM.
	SpeechProtocolOpenAI = "openai"
	// SpeechProtocolVosk is the Vosk server's WebSocket protocol: the
	// utterance is streamed as it is heard.
	SpeechProtocolVosk = "vosk"
)

// AgentSpeech is a speech recognition server the organization runs itself,
// used for this agent's calls instead of the embedded recognizer. When the
// server fails or is slow for an utterance, the embedded recognizer hears
// that utterance and the transcript says so.
// +kubebuilder:validation:XValidation:rule="self.protocol == 'vosk' ? (self.url.startsWith('wss://') || self.url.startsWith('ws://')) : (self.url.startsWith('https://') || self.url.startsWith('http://'))",message="an openai server's url is https://, a vosk server's wss://"
type AgentSpeech struct {
	// url of the server: for protocol openai the API's base URL, to which
	// /audio/transcriptions is appended (https://asr.example.com/v1); for
	// protocol vosk the WebSocket URL (wss://asr.example.com). It must be
	// publicly reachable and encrypted, as webhook URLs (Switchboard's
	// development mode also allows http, ws and private addresses).
	// +required
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self.replace('wss://', 'https://').replace('ws://', 'http://')) && url(self.replace('wss://', 'https://').replace('ws://', 'http://')).getHostname() != ''",message="url must be an absolute URL with a host"
	URL string `json:"url"`

	// protocol the server speaks: openai or vosk.
	// +required
	// +kubebuilder:validation:Enum=openai;vosk
	Protocol string `json:"protocol"`

	// apiKeySecretRef names a Secret (same namespace) whose key apiKey is
	// sent as a bearer token.
	// +optional
	APIKeySecretRef *SecretReference `json:"apiKeySecretRef,omitempty"`

	// model names the model for protocol openai. Defaults to whisper-1.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Model string `json:"model,omitempty"`

	// timeoutMilliseconds bounds the server's answer for one utterance,
	// from the end of speech; past it the embedded recognizer answers.
	// Defaults to 2000.
	// +optional
	// +kubebuilder:default=2000
	// +kubebuilder:validation:Minimum=100
	// +kubebuilder:validation:Maximum=30000
	TimeoutMilliseconds int32 `json:"timeoutMilliseconds,omitempty"`
}
