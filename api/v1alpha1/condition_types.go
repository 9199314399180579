package v1alpha1

// Condition types. Every Switchboard resource reports Ready.
const (
	// ReadyCondition is True when the resource is valid and in use.
	ReadyCondition = "Ready"
)

// Reasons for the Ready condition.
const (
	// ReasonReconciled: the resource was checked and is in use.
	ReasonReconciled = "Reconciled"
	// ReasonDuplicateAgentID: another Agent in the namespace resolves to the
	// same agent id, so calls naming that id cannot tell them apart.
	ReasonDuplicateAgentID = "DuplicateAgentID"
	// ReasonInactive: the Agent is valid but spec.active is false.
	ReasonInactive = "Inactive"
	// ReasonTrunkNotFound: spec.trunkRef names no SIPTrunk of the namespace.
	ReasonTrunkNotFound = "TrunkNotFound"
	// ReasonSecretAccessDenied: Switchboard may not read the Secrets of the
	// namespace (a SIPTrunk's credentials, a WebhookEndpoint's signing
	// secret, an Agent's API keys): it is no organization, with a
	// RoleBinding to the ClusterRole OrganizationClusterRole. An Agent
	// reports it when the namespace is labelled but has no RoleBinding.
	ReasonSecretAccessDenied = "SecretAccessDenied"
	// ReasonNotAnOrganization: the namespace of an Agent or WebhookEndpoint
	// is not labelled OrganizationLabel=true, so its API keys answer 401 and
	// its endpoints get no signing secret. The message gives the two
	// commands that make it an organization; the resource turns Ready once
	// they have run, without a restart.
	ReasonNotAnOrganization = "NotAnOrganization"
)

// An Agent's VoiceServerReachable condition says whether its voice server
// (spec.voice.server) answers, checked when the Agent changes and every
// minute: absent without a server. An unreachable server leaves the Agent
// Ready, its lines said in the embedded voice.
const (
	// VoiceServerReachableCondition says whether the agent's voice server answers.
	VoiceServerReachableCondition = "VoiceServerReachable"
	// ReasonVoiceServerReachable: the server answered the probe.
	ReasonVoiceServerReachable = "VoiceServerReachable"
	// ReasonVoiceServerUnreachable: the server's URL or address is refused,
	// it could not be connected to, it did not answer in time, or a gateway
	// in front of it answered 502, 503 or 504.
	ReasonVoiceServerUnreachable = "VoiceServerUnreachable"
)

// Reasons for a Call's Ready condition, which turns True once the call has
// reached a final state and every post-call step (recording, analysis) is done.
const (
	// ReasonQueued: accepted, not yet handed to the carrier.
	ReasonQueued = "Queued"
	// ReasonWaitingForTrunk: queued behind its SIP trunk's
	// maxConcurrentCalls or callsPerSecond.
	ReasonWaitingForTrunk = "WaitingForTrunk"
	// ReasonPreparingScript: its trunk let it go; the agent's script is
	// being turned into audio (text-to-speech) before it is dialed.
	ReasonPreparingScript = "PreparingScript"
	// ReasonInProgress: the carrier is placing or carrying the call.
	ReasonInProgress = "InProgress"
	// ReasonAwaitingRecording: the call ended; the recording is being stored.
	ReasonAwaitingRecording = "AwaitingRecording"
	// ReasonAwaitingAnalysis: the call ended; the analysis is being computed.
	ReasonAwaitingAnalysis = "AwaitingAnalysis"
	// ReasonCompleted: the call ended and every post-call step is done.
	ReasonCompleted = "Completed"
	// ReasonFailed: the call never went out (see status.failure).
	ReasonFailed = "Failed"
)

// A Call's Archived condition appears only when writing the finished call
// to the history store failed: False while it fails (the Call then stays in
// the cluster past its retention), True once it has succeeded after all.
const (
	// ArchivedCondition says whether a finished call is in the history store.
	ArchivedCondition = "Archived"
	// ReasonStoreUnavailable: the history store could not be written.
	ReasonStoreUnavailable = "StoreUnavailable"
	// ReasonArchived: the call is in the history store.
	ReasonArchived = "Archived"
)
