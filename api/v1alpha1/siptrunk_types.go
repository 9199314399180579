package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SIPTransport is how SIP messages travel to a trunk.
// +kubebuilder:validation:Enum=udp;tcp;tls
type SIPTransport string

const (
	SIPTransportUDP SIPTransport = "udp"
	SIPTransportTCP SIPTransport = "tcp"
	SIPTransportTLS SIPTransport = "tls"
)

// SIPMedia is how a trunk's calls carry their audio.
// +kubebuilder:validation:Enum=rtp;srtp-preferred;srtp-required
type SIPMedia string

const (
	// SIPMediaRTP sends audio in clear RTP (RTP/AVP).
	SIPMediaRTP SIPMedia = "rtp"
	// SIPMediaSRTPPreferred offers SRTP (SDES keys, RFC 4568, in the SDP
	// of the TLS-protected INVITE) and accepts a callee that answers with
	// plain RTP, or offers plain RTP again to one that refused SRTP (488).
	SIPMediaSRTPPreferred SIPMedia = "srtp-preferred"
	// SIPMediaSRTPRequired offers only SRTP (RTP/SAVP): an answer without
	// keys is hung up at once (disconnection_reason srtp_required).
	SIPMediaSRTPRequired SIPMedia = "srtp-required"
)

// Secret keys of a SIPTrunk's credentials.
const (
	SIPUsernameKey = "username"
	SIPPasswordKey = "password"
	// SIPCAKey is the key of spec.tls.caSecretRef's Secret: PEM CA
	// certificates the carrier's certificate must chain to.
	SIPCAKey = "ca.crt"
)

// Reasons of a SIPTrunk's Ready condition.
const (
	// ReasonReachable: the trunk answered an OPTIONS request.
	ReasonReachable = "Reachable"
	// ReasonUnreachable: no answer to OPTIONS (DNS, refused, timeout).
	ReasonUnreachable = "Unreachable"
	// ReasonAuthenticationFailed: the trunk refused the credentials.
	ReasonAuthenticationFailed = "AuthenticationFailed"
	// ReasonCredentialsMissing: the credentials Secret or one of its keys is
	// missing.
	ReasonCredentialsMissing = "CredentialsMissing"
	// ReasonInvalidAddress: spec.address is not a usable SIP URI.
	ReasonInvalidAddress = "InvalidAddress"
	// ReasonTLSHandshakeFailed: the TLS handshake with the trunk failed
	// for another reason than its certificate (no common version or
	// cipher, our client certificate refused, the connection closed).
	ReasonTLSHandshakeFailed = "TLSHandshakeFailed"
	// ReasonCertificateInvalid: the trunk's certificate failed
	// verification (unknown authority, expired, not valid for the server
	// name); the message has the verification's words.
	ReasonCertificateInvalid = "CertificateInvalid"
	// ReasonTLSSecretMissing: a Secret of spec.tls, or one of its keys, is
	// missing or does not hold a usable PEM certificate (and key).
	ReasonTLSSecretMissing = "TLSSecretMissing"
	// ReasonTrunkError: the trunk answered OPTIONS with an error status.
	ReasonTrunkError = "TrunkError"
	// ReasonAddressRefused: spec.address's host is (or resolves to) an
	// address the operator's policy refuses (loopback, private, link-local
	// ...; private networks only with --sip-private-networks): nothing is
	// sent to it, and its calls fail with dispatch_failed.
	ReasonAddressRefused = "AddressRefused"
)

// RegisteredCondition is a SIPTrunk's registration with its carrier's
// registrar (spec.registration): True while the registrar holds our
// binding. Ready says only whether the trunk answers OPTIONS; calls do not
// wait for registration.
const RegisteredCondition = "Registered"

// Reasons of a SIPTrunk's Registered condition (besides the Ready reasons
// of a configuration Switchboard cannot use, and Unreachable,
// AuthenticationFailed, AddressRefused, CertificateInvalid and
// TLSHandshakeFailed, which mean for REGISTER what they mean for OPTIONS).
const (
	// ReasonRegistered: the registrar answered 200 to our REGISTER.
	ReasonRegistered = "Registered"
	// ReasonRegistering: the first REGISTER has not been answered yet.
	ReasonRegistering = "Registering"
	// ReasonRegistrarError: the registrar answered REGISTER with an error
	// status (the message names it); Switchboard tries again with backoff.
	ReasonRegistrarError = "RegistrarError"
)

// SIPRegistration is how a trunk registers with its carrier's registrar.
type SIPRegistration struct {
	// expiresSeconds is the binding's lifetime Switchboard asks for; the
	// registrar may grant less, and the binding is refreshed at about 85%
	// of what it granted. Defaults to 3600.
	// +optional
	// +kubebuilder:default=3600
	// +kubebuilder:validation:Minimum=60
	// +kubebuilder:validation:Maximum=86400
	ExpiresSeconds int32 `json:"expiresSeconds,omitempty"`

	// registrar is the SIP URI REGISTER is sent to, for example
	// sip:registrar.carrier.example:5060. Defaults to spec.address. It
	// passes the same address policy as spec.address.
	// +optional
	// +kubebuilder:validation:MinLength=5
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^sip:[^\s@]+$`
	Registrar string `json:"registrar,omitempty"`

	// user is the user part of the address of record registered,
	// sip:<user>@<registrar host>. Defaults to the credentials' username.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[^\s@:;<>"]+$`
	User string `json:"user,omitempty"`
}

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	// name of the object.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// SIPTrunkTLS is how a trunk's TLS connections are verified and
// authenticated.
type SIPTrunkTLS struct {
	// caSecretRef names a Secret whose key ca.crt holds the PEM CA
	// certificates the carrier's certificate must chain to. Unset: the
	// system's roots.
	// +optional
	CASecretRef *SecretReference `json:"caSecretRef,omitempty"`

	// clientCertSecretRef names a kubernetes.io/tls Secret (tls.crt,
	// tls.key) whose certificate Switchboard presents when the carrier asks
	// for one (mutual TLS).
	// +optional
	ClientCertSecretRef *SecretReference `json:"clientCertSecretRef,omitempty"`

	// serverName is the name the carrier's certificate must be valid for.
	// Defaults to the host of spec.address.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ServerName string `json:"serverName,omitempty"`
}

// SIPTrunkSpec is how Switchboard reaches a carrier (or an organization's
// own PBX) to place calls.
// +kubebuilder:validation:XValidation:rule="!has(self.registration) || has(self.credentialsSecretRef) || has(self.registration.user)",message="spec.registration needs a user: set spec.credentialsSecretRef (its username is the user) or spec.registration.user"
// +kubebuilder:validation:XValidation:rule="!has(self.tls) || (has(self.transport) && self.transport == 'tls') || (!has(self.transport) && self.address.startsWith('sips:'))",message="spec.tls needs transport tls (or a sips: address)"
// +kubebuilder:validation:XValidation:rule="!self.address.startsWith('sips:') || !has(self.transport) || self.transport == 'tls'",message="a sips: address needs transport tls"
// +kubebuilder:validation:XValidation:rule="!has(self.media) || self.media == 'rtp' || (has(self.transport) && self.transport == 'tls') || (!has(self.transport) && self.address.startsWith('sips:'))",message="srtp media needs transport tls: its keys travel in the SDP, which only TLS keeps secret"
type SIPTrunkSpec struct {
	// address is the SIP URI of the carrier or proxy, for example
	// sip:sip.carrier.example:5060, or sips:sip.carrier.example (TLS,
	// port 5061 by default). Calls go out as INVITE
	// sip:<E.164 number>@<host:port>.
	// +required
	// +kubebuilder:validation:MinLength=5
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^sips?:[^\s@]+$`
	Address string `json:"address"`

	// transport is udp, tcp or tls (TLS 1.2 or newer; port 5061 when the
	// address has none). Unset: tls for a sips: address, else udp.
	// +optional
	Transport SIPTransport `json:"transport,omitempty"`

	// tls verifies the carrier's certificate against a CA of one's own
	// and presents a client certificate; only with transport tls.
	// +optional
	TLS *SIPTrunkTLS `json:"tls,omitempty"`

	// media is rtp (clear audio), srtp-preferred (SRTP offered, clear
	// audio accepted) or srtp-required (a callee without SRTP is hung up:
	// disconnection_reason srtp_required). SRTP only with transport tls.
	// Defaults to rtp.
	// +optional
	// +kubebuilder:default=rtp
	Media SIPMedia `json:"media,omitempty"`

	// dtmf is how the agent keys digits on this trunk (pressDigits steps,
	// the press_digit tool): rfc4733 telephone events in the audio stream,
	// or info (SIP INFO, application/dtmf-relay) for carriers that want
	// them out of band. Defaults to rfc4733.
	// +optional
	// +kubebuilder:default=rfc4733
	// +kubebuilder:validation:Enum=rfc4733;info
	DTMF string `json:"dtmf,omitempty"`

	// credentialsSecretRef names a Secret with the keys username and
	// password, which answer the trunk's digest challenges (401 and 407).
	// +optional
	CredentialsSecretRef *SecretReference `json:"credentialsSecretRef,omitempty"`

	// maxConcurrentCalls bounds the calls ringing or connected at once on
	// this trunk; more stay queued, in order. Unset means no bound.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	MaxConcurrentCalls *int32 `json:"maxConcurrentCalls,omitempty"`

	// callsPerSecond bounds how fast calls go out on this trunk; faster
	// calls stay queued, in order. Unset means no bound.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	CallsPerSecond *int32 `json:"callsPerSecond,omitempty"`

	// ringTimeoutSeconds is how long a call may ring before Switchboard
	// cancels it (disposition no_answer). Defaults to 60.
	// +optional
	// +kubebuilder:default=60
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=600
	RingTimeoutSeconds int32 `json:"ringTimeoutSeconds,omitempty"`

	// registration, when set, makes Switchboard REGISTER with the
	// carrier's registrar (digest credentials from credentialsSecretRef),
	// refresh the binding before it expires, register again after a
	// failure, and remove the binding when the trunk is deleted or
	// registration is turned off. Only the leader registers.
	// +optional
	Registration *SIPRegistration `json:"registration,omitempty"`
}

// SIPTrunkStatus is the observed state of a SIPTrunk.
type SIPTrunkStatus struct {
	// transport is the transport calls use: spec.transport, else tls for a
	// sips: address, else the address's transport parameter, else udp.
	// +optional
	Transport SIPTransport `json:"transport,omitempty"`
	// activeCalls is how many calls ring or talk on the trunk now.
	// +optional
	ActiveCalls int32 `json:"activeCalls"`

	// queuedCalls is how many calls wait for the trunk's capacity.
	// +optional
	QueuedCalls int32 `json:"queuedCalls"`

	// lastProbeAt is when the trunk was last sent an OPTIONS request.
	// +optional
	LastProbeAt *metav1.Time `json:"lastProbeAt,omitempty"`

	// lastRegisteredAt is when the registrar last accepted our REGISTER.
	// +optional
	LastRegisteredAt *metav1.Time `json:"lastRegisteredAt,omitempty"`

	// registeredUntil is when the binding the registrar granted expires,
	// unless refreshed (it is, before then).
	// +optional
	RegisteredUntil *metav1.Time `json:"registeredUntil,omitempty"`

	// observedGeneration is the generation last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready (the trunk answered OPTIONS with our credentials);
	// Registered (with spec.registration: the registrar holds our binding).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// SIPTrunk is a carrier connection an organization's Agents place calls on.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=switchboard,shortName=trunk
// +kubebuilder:printcolumn:name="Address",type=string,JSONPath=`.spec.address`
// +kubebuilder:printcolumn:name="Transport",type=string,JSONPath=`.status.transport`
// +kubebuilder:printcolumn:name="Media",type=string,JSONPath=`.spec.media`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Registered",type=string,JSONPath=`.status.conditions[?(@.type=="Registered")].status`,priority=1
// +kubebuilder:printcolumn:name="Active",type=integer,JSONPath=`.status.activeCalls`
// +kubebuilder:printcolumn:name="Queued",type=integer,JSONPath=`.status.queuedCalls`
// +kubebuilder:printcolumn:name="Max",type=integer,JSONPath=`.spec.maxConcurrentCalls`
// +kubebuilder:printcolumn:name="CPS",type=integer,JSONPath=`.spec.callsPerSecond`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SIPTrunk struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec SIPTrunkSpec `json:"spec"`
	// +optional
	Status SIPTrunkStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// SIPTrunkList is a list of SIPTrunks.
type SIPTrunkList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SIPTrunk `json:"items"`
}
