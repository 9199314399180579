package v1alpha1

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WebhookEventType is a kind of event an endpoint can subscribe to.
// +kubebuilder:validation:Enum=call.started;call.ended;call.analyzed;campaign.started;campaign.paused;campaign.completed
type WebhookEventType string

// Signing secrets are Secrets holding the current secret under
// WebhookSecretKey; during a rotation the previous secret stays under
// WebhookPreviousSecretKey until the time in WebhookPreviousExpiresAnnotation,
// and deliveries carry both signatures.
const (
	// WebhookSecretType is the type of the Secrets Switchboard generates.
	// A secretRef may name a Secret of any type that has the key "secret".
	WebhookSecretType = "switchboard.dev/webhook-secret"
	// WebhookSecretKey holds the current signing secret (whsec_ + base64).
	WebhookSecretKey = "secret"
	// WebhookPreviousSecretKey holds the secret replaced by a rotation.
	WebhookPreviousSecretKey = "previous-secret"
	// WebhookPreviousExpiresAnnotation (RFC 3339) ends the overlap.
	WebhookPreviousExpiresAnnotation = "switchboard.dev/previous-secret-expires-at"
	// WebhookDisabledReasonAnnotation says why Switchboard disabled an
	// endpoint (a 410 Gone, or failures for too long); cleared on re-enabling.
	WebhookDisabledReasonAnnotation = "switchboard.dev/disabled-reason"
)

// Condition types and reasons of a WebhookEndpoint.
const (
	// DegradedCondition is True while deliveries to the endpoint fail.
	DegradedCondition = "Degraded"
	// DisabledCondition is True while the endpoint receives no deliveries.
	DisabledCondition = "Disabled"

	ReasonURLNotAllowed = "URLNotAllowed"
	ReasonSecretMissing = "SecretMissing"
	// ReasonEndpointLimitReached: the organization has as many older
	// endpoints as its limit allows; this one receives no events.
	ReasonEndpointLimitReached = "EndpointLimitReached"
	ReasonDisabledByUser       = "DisabledByUser"
	ReasonDisabledBySystem     = "DisabledBySwitchboard"
	ReasonDeliveriesFailing    = "DeliveriesFailing"
	ReasonDeliveriesHealthy    = "DeliveriesSucceeding"
	ReasonNoDeliveriesYet      = "NoDeliveriesYet"
	ReasonEnabled              = "Enabled"
)

// SecretReference names a Secret in the same namespace.
type SecretReference struct {
	// name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// WebhookEndpointSpec is where an organization receives call events.
type WebhookEndpointSpec struct {
	// url receives the events by POST. It must be https and publicly
	// reachable (Switchboard's development mode also allows http and
	// loopback addresses).
	// +required
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && (self.startsWith('https://') || self.startsWith('http://'))",message="url must be an absolute https URL"
	URL string `json:"url"`

	// events the endpoint subscribes to; empty means the call events
	// (call.started, call.ended, call.analyzed), not the campaign events.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=6
	Events []WebhookEventType `json:"events,omitempty"`

	// description is free text for people.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Description string `json:"description,omitempty"`

	// disabled stops deliveries to the endpoint. Switchboard sets it when
	// the receiver answers 410 Gone or has failed for too long, with the
	// reason in the switchboard.dev/disabled-reason annotation.
	// +optional
	Disabled bool `json:"disabled,omitempty"`

	// secretRef names a Secret whose key "secret" holds the signing secret
	// (whsec_ followed by base64). When absent, Switchboard generates one
	// in a Secret named in status.secretName.
	// +optional
	SecretRef *SecretReference `json:"secretRef,omitempty"`
}

// WebhookEndpointStatus is the observed state of an endpoint.
type WebhookEndpointStatus struct {
	// endpointID is the id the REST API uses: we_ followed by hex.
	// +optional
	EndpointID string `json:"endpointID,omitempty"`
	// secretName is the Secret that signs deliveries.
	// +optional
	SecretName string `json:"secretName,omitempty"`
	// lastDeliveryAt is when the latest attempt was made.
	// +optional
	LastDeliveryAt *metav1.Time `json:"lastDeliveryAt,omitempty"`
	// lastDeliveryResult is the latest attempt's outcome: an HTTP status
	// code, or the connection error.
	// +optional
	LastDeliveryResult string `json:"lastDeliveryResult,omitempty"`
	// failingSince is the first failed attempt since the last success.
	// +optional
	FailingSince *metav1.Time `json:"failingSince,omitempty"`
	// observedGeneration is the generation last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions: Ready (False with reason NotAnOrganization or
	// SecretAccessDenied while the namespace is not an organization,
	// URLNotAllowed, SecretMissing or EndpointLimitReached), Degraded,
	// Disabled.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// WebhookEndpoint receives an organization's signed call events.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=switchboard,shortName=whe
// +kubebuilder:printcolumn:name="ID",type=string,JSONPath=`.status.endpointID`
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Degraded",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].status`
// +kubebuilder:printcolumn:name="Last Result",type=string,JSONPath=`.status.lastDeliveryResult`
// +kubebuilder:printcolumn:name="Last Delivery",type=date,JSONPath=`.status.lastDeliveryAt`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Disabled",type=boolean,JSONPath=`.spec.disabled`,priority=1
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
type WebhookEndpoint struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec WebhookEndpointSpec `json:"spec"`
	// +optional
	Status WebhookEndpointStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// WebhookEndpointList is a list of WebhookEndpoints.
type WebhookEndpointList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WebhookEndpoint `json:"items"`
}

// EndpointIDPrefix starts every endpoint id.
const EndpointIDPrefix = "we_"

// ResolvedID is the endpoint's REST id, derived from its UID so that it is
// known from the moment the endpoint exists.
func (e *WebhookEndpoint) ResolvedID() string {
	if e.UID == "" {
		return ""
	}
	return EndpointIDPrefix + strings.ReplaceAll(string(e.UID), "-", "")
}

// Subscribes reports whether the endpoint wants events of kind. One that
// names none gets the call events, which the API promises to every
// subscribed endpoint and each of which carries a call; campaign events,
// which carry a campaign, go only to endpoints that name them, so that a
// receiver written against the call events never meets another shape.
func (e *WebhookEndpoint) Subscribes(kind string) bool {
	if len(e.Spec.Events) == 0 {
		return strings.HasPrefix(kind, "call.")
	}
	for _, k := range e.Spec.Events {
		if string(k) == kind {
			return true
		}
	}
	return false
}

// SigningSecretName is the Secret that signs deliveries to the endpoint.
func (e *WebhookEndpoint) SigningSecretName() string {
	if e.Spec.SecretRef != nil {
		return e.Spec.SecretRef.Name
	}
	return GeneratedSecretName(e.Name)
}

// GeneratedSecretName is the Secret generated for an endpoint without a
// secretRef.
func GeneratedSecretName(endpointName string) string {
	return endpointName + "-signing-secret"
}
