package telephony

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// TransferOutcome is how a call's transfer to a person went, on either
// carrier: what the Call's status.transfer, its transcript and its
// call.ended event report.
type TransferOutcome struct {
	// To is the person's number.
	To     string
	Mode   switchboardv1.TransferMode
	Method switchboardv1.TransferMethod
	Result switchboardv1.TransferResult
	// SIPStatus decided it (the NOTIFY's sipfrag, the REFER's refusal,
	// the second call's final response); 0 when none did.
	SIPStatus int
	// Detail says in words why it failed.
	Detail string
	// RequestedAt is when the agent asked for it; ConnectedAt when the
	// callee reached the person (zero: never).
	RequestedAt, ConnectedAt time.Time
	// SecondLeg is how long the call to the person lasted once answered
	// (bridged transfers).
	SecondLeg time.Duration
}

// Status is the outcome as the Call's status.transfer holds it.
func (o TransferOutcome) Status() *switchboardv1.CallTransfer {
	s := &switchboardv1.CallTransfer{To: o.To, Mode: o.Mode, Method: o.Method, Result: o.Result,
		SIPStatus: int32(o.SIPStatus), Detail: truncate(o.Detail, 256)} //nolint:gosec // a SIP status fits
	if !o.RequestedAt.IsZero() {
		t := metav1.NewMicroTime(o.RequestedAt)
		s.RequestedAt = &t
	}
	if !o.ConnectedAt.IsZero() {
		t := metav1.NewMicroTime(o.ConnectedAt)
		s.ConnectedAt = &t
	}
	if o.SecondLeg > 0 {
		ms := o.SecondLeg.Milliseconds()
		s.SecondLegMS = &ms
	}
	return s
}

// DisconnectionReason is the call's disconnection_reason when the transfer
// ended its part of the call: call_transfer (REFER) or transfer_bridged;
// "" when the transfer failed and the agent went on.
func (o TransferOutcome) DisconnectionReason() string {
	switch o.Result {
	case switchboardv1.TransferTransferred:
		return switchboardv1.ReasonCallTransfer
	case switchboardv1.TransferBridged:
		return switchboardv1.ReasonTransferBridged
	}
	return ""
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// TransferGuard decides whether a call may be handed to number: the
// agent's transferDestinations and the organization's number lists. A
// refusal is an error whose text says why (the TransferNotAllowed
// outcome's Detail). A nil guard refuses every transfer.
type TransferGuard func(ctx context.Context, number string) error
