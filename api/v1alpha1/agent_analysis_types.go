package v1alpha1

// AgentAnalysis asks a language model, through an OpenAI-compatible
// chat-completions endpoint the organization chooses (its own vLLM, Ollama
// or llama.cpp server, or a hosted one), for the call's summary and
// extracted data, with a JSON schema built from extractedData. The rules'
// values stay wherever the model fails, times out or answers a value of
// the wrong type, and the summary says why.
type AgentAnalysis struct {
	// url is the API's base URL; the request goes to url + /chat/completions
	// (for example https://llm.example.com/v1). https only unless the
	// operator runs with --dev; it must resolve to a public address, like
	// webhook URLs.
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

	// apiKeySecretRef names a Secret in the agent's namespace whose key
	// api-key is sent as the bearer token; none is sent without it.
	// +optional
	APIKeySecretRef *SecretReference `json:"apiKeySecretRef,omitempty"`

	// timeoutSeconds bounds the model's answer; the rules' result is used
	// when it runs out.
	// +optional
	// +kubebuilder:default=20
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=60
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`
}

// AnalysisAPIKeySecretKey is the key of an analysis API key Secret.
const AnalysisAPIKeySecretKey = "api-key"
