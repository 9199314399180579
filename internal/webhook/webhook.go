// Package webhook is the sending side of Switchboard's webhooks: event
// kinds and the envelope, the HTTP sender and the retry schedule. It signs
// with internal/signing (Standard Webhooks signatures) and sends through
// the URL guard of internal/egress, both shared with telephony. It knows
// nothing about Kubernetes. Its sub-packages are the rest of the webhook
// family: deliveries decides what to send when, endpoints holds the
// operations the REST API and the dashboard call.
package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// Event kinds, in lifecycle order.
const (
	EventCallStarted  = "call.started"
	EventCallEnded    = "call.ended"
	EventCallAnalyzed = "call.analyzed"
	// EventTest is how test deliveries appear in the delivery log; it cannot
	// be subscribed to.
	EventTest = "test"
	// A campaign's events carry the campaign object: started when it first
	// dials, paused at each pause, completed when it ends (completed or
	// canceled, as its status says).
	EventCampaignStarted   = "campaign.started"
	EventCampaignPaused    = "campaign.paused"
	EventCampaignCompleted = "campaign.completed"
)

// CallKinds lists a call's kinds in lifecycle order; CampaignKinds a
// campaign's.
var (
	CallKinds     = []string{EventCallStarted, EventCallEnded, EventCallAnalyzed}
	CampaignKinds = []string{EventCampaignStarted, EventCampaignPaused, EventCampaignCompleted}
)

// Kinds lists the subscribable kinds.
var Kinds = append(slices.Clone(CallKinds), CampaignKinds...)

// ValidKind reports whether s is one of Kinds.
func ValidKind(s string) bool {
	return slices.Contains(Kinds, s)
}

// ValidCallKind reports whether s is one of CallKinds (the kinds a test
// event may take: its sample is a call).
func ValidCallKind(s string) bool {
	return slices.Contains(CallKinds, s)
}

// CampaignEnvelope is the exact body of a campaign event:
// {"event":...,"campaign":...}.
func CampaignEnvelope(event string, campaign any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(struct {
		Event    string `json:"event"`
		Campaign any    `json:"campaign"`
	}{event, campaign}); err != nil {
		return nil, fmt.Errorf("webhook: encode %s envelope: %w", event, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

type envelope struct {
	Event string `json:"event"`
	Call  any    `json:"call"`
}

// Envelope is the exact body sent for an event: {"event":...,"call":...}.
// The signature covers these bytes, so they are sent as they are.
func Envelope(event string, call any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// Calls carry links; receivers are programs, not browsers, so "&" stays
	// "&" rather than "\u0026".
	enc.SetEscapeHTML(false)
	if err := enc.Encode(envelope{Event: event, Call: call}); err != nil {
		return nil, fmt.Errorf("webhook: encode %s envelope: %w", event, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
