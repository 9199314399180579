package v1alpha1

// API keys are Secrets of this type in an organization's namespace, holding
// the key under APIKeySecretKey. Deleting the Secret revokes the key.
const (
	// APIKeySecretType is the type of Secrets that hold an API key.
	APIKeySecretType = "switchboard.dev/api-key"
	// APIKeySecretKey is the data key holding the API key itself.
	APIKeySecretKey = "key"
	// APIKeyExpiresAtAnnotation optionally holds the key's expiry (RFC 3339).
	APIKeyExpiresAtAnnotation = "switchboard.dev/expires-at"
)
