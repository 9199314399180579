package calls

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/callid"
	"github.com/switchboard-dev/switchboard/internal/callpolicy"
	"github.com/switchboard-dev/switchboard/internal/directory"
	"github.com/switchboard-dev/switchboard/internal/numberlists"
	"github.com/switchboard-dev/switchboard/internal/quota"
	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/workers"
)

// Placer places calls: the REST API (POST /v1/calls and the SDK's
// create-phone-call) and the dashboard's form share it, so a call is
// checked, admitted and refused the same way whoever places it.
type Placer struct {
	Directory *directory.Directory
	Book      *Book
	// Client creates Calls.
	Client  client.Client
	Numbers *numberlists.Index
	Dialer  telephony.Dialer
	// Quota admits each new call against its organization's limits.
	Quota *quota.Admission
	// Workers, if set, assigns each call to a worker as it is created; a
	// call no worker has room for is created unassigned, queued, and the
	// leader assigns it once one has.
	Workers *workers.Pool
	// Gate, if set, holds each call the organization's limits admitted
	// until the replica has room to place it (package placementgate): the
	// REST API's and the dashboard's placer have one; a campaign's has
	// none, as a campaign paces its own calls and a refusal would only
	// move them later.
	Gate Gate
}

// Gate is the replica's room for placements: done frees the slot; not ok,
// the replica cannot place the call in time.
type Gate interface {
	Enter(ctx context.Context, org string) (done func(), ok bool)
}

// Request is a decoded, validated request for a call.
type Request struct {
	AgentID    string          // canonical lowercase UUID
	ToNumber   string          // E.164
	FromNumber string          // E.164 or empty
	Variables  map[string]any  // never nil
	RawVars    json.RawMessage // as sent, compacted; nil when absent
	Metadata   json.RawMessage // as sent, compacted; nil when absent
	Source     switchboardv1.CallSource
	// Labels go on the Call (a campaign's name, so its calls can be found).
	Labels map[string]string
	// SIPHeaders are custom X- headers for the call's INVITE (already
	// validated: callinput); nil when none.
	SIPHeaders map[string]string
}

// Placed is a call that was queued.
type Placed struct {
	Call *switchboardv1.Call
	// FromNumber is the agent's caller id.
	FromNumber string
}

// Errors of Place besides *quota.Exceeded (the organization's limits).
type (
	// AgentUnknown: no agent of that id in the organization (or several).
	AgentUnknown struct{ Message string }
	// Refused: the call policy refused the call (missing variables, DNC,
	// a blocked number...). CallID is set when a failed call was recorded.
	Refused struct {
		Rejection *callpolicy.Rejection
		CallID    string
	}
	// DispatchFailed: the carrier did not accept the call; a failed call
	// was recorded.
	DispatchFailed struct{ Code, Message, CallID string }
	// Busy: the replica is placing as many calls as it can within the
	// latency goal; nothing was created.
	Busy struct{ RetryAfter time.Duration }
	// Unavailable: something the placement depends on did not answer;
	// Message says so to the caller, who may retry.
	Unavailable struct {
		Message string
		Err     error
		// Uncertain: the Call's create was sent and may have been applied
		// though its answer never came (a deadline, a lost connection).
		Uncertain bool
	}
)

func (e *AgentUnknown) Error() string   { return e.Message }
func (e *Refused) Error() string        { return e.Rejection.Message }
func (e *DispatchFailed) Error() string { return e.Message }
func (e *Busy) Error() string           { return "the replica is placing as many calls as it can at once" }
func (e *Unavailable) Error() string    { return e.Message + ": " + e.Err.Error() }
func (e *Unavailable) Unwrap() error    { return e.Err }

// busyRetryAfter is the Retry-After of a Busy: a burst the replica could
// not take drains within about a second.
const busyRetryAfter = time.Second

// Place places a call of namespace with id callID. Order of checks: the
// organization's limits, the replica's room (Gate), the agent, then
// callpolicy's order, then the carrier's acceptance. The organization's
// own limits come first, so an organization over them hears so (429)
// whatever the replica's load, and its burst never holds the replica's
// slots. Only blocked numbers and dispatch failures leave a failed call
// record; the success path is one create.
func (p *Placer) Place(ctx context.Context, ns string, req Request, callID string) (*Placed, error) {
	ticket, err := p.Quota.Admit(ctx, ns)
	if err != nil {
		var exceeded *quota.Exceeded
		if errors.As(err, &exceeded) {
			return nil, exceeded
		}
		return nil, &Unavailable{Message: "The organization's limits could not be checked; it is safe to retry.", Err: err}
	}
	if p.Gate != nil {
		done, ok := p.Gate.Enter(ctx, ns)
		if !ok {
			// Its active-call reservation is given back; its place in the
			// create rate is not: given back, it would let the rest of the
			// same burst past the organization's limit, to be answered busy
			// instead of rate limited.
			ticket.Release()
			return nil, &Busy{RetryAfter: busyRetryAfter}
		}
		defer done()
	}
	placed, err := p.admitted(ctx, ns, req, callID)
	if err == nil {
		ticket.PlacedCall(placed.Call)
	} else {
		ticket.Release()
	}
	return placed, err
}

// admitted is Place once the organization's limits let the call in.
func (p *Placer) admitted(ctx context.Context, ns string, req Request, callID string) (*Placed, error) {
	agent, err := p.Directory.Agent(ctx, ns, req.AgentID)
	if err != nil {
		return nil, agentLookupFailed(req.AgentID, err)
	}
	call := newCall(ns, callID, req)
	policyReq := callpolicy.Request{Namespace: ns, ToNumber: req.ToNumber, FromNumber: req.FromNumber, Variables: req.Variables}
	if rej := callpolicy.Check(agent, policyReq, p.Numbers); rej != nil {
		return nil, p.refuse(ctx, call, rej)
	}
	if err := p.Dialer.Admit(ctx, telephony.BuildRequest(call, agent.Spec.FromNumber, req.Variables, agent)); err != nil {
		return nil, p.dispatchFailed(ctx, call, err)
	}
	if err := p.create(ctx, call); err != nil {
		return nil, createFailed("The call could not be queued; it is safe to retry.", err)
	}
	return &Placed{Call: call, FromNumber: agent.Spec.FromNumber}, nil
}

func agentLookupFailed(agentID string, err error) error {
	switch {
	case errors.Is(err, directory.ErrAmbiguous):
		return &AgentUnknown{Message: "Several agents in this organization resolve to " + agentID + "; give each a distinct spec.id."}
	case errors.Is(err, directory.ErrNotFound):
		return &AgentUnknown{Message: "No agent " + agentID + " in this organization."}
	}
	return &Unavailable{Message: "The agent could not be looked up; it is safe to retry.", Err: err}
}

// create creates the Call. A Call of that name that exists already was
// created by an earlier request with the same Idempotency-Key, which
// stopped before it could answer: it is that request's call, read back.
func (p *Placer) create(ctx context.Context, call *switchboardv1.Call) error {
	p.assign(ctx, call)
	err := p.Client.Create(ctx, call)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	existing, err := p.Book.Get(ctx, call.Namespace, callid.Of(call))
	if err != nil {
		return err
	}
	*call = *existing
	return nil
}

// assign labels the call with the worker that will carry it, in the
// create itself: assignment costs the apiserver no write of its own.
// Without a worker with room it stays unassigned, never refused: it waits
// queued like a call waiting for its trunk.
func (p *Placer) assign(ctx context.Context, call *switchboardv1.Call) {
	if p.Workers == nil {
		return
	}
	started := time.Now()
	worker, err := p.Workers.Pick(ctx)
	if err != nil {
		return // ErrNoCapacity, or the Leases unreadable: the leader assigns it
	}
	workers.ObserveAssignment(time.Since(started))
	if call.Labels == nil {
		call.Labels = map[string]string{}
	}
	call.Labels[workers.Label] = worker
}

func (p *Placer) refuse(ctx context.Context, call *switchboardv1.Call, rej *callpolicy.Rejection) error {
	if !rej.RecordsFailedCall() {
		return &Refused{Rejection: rej}
	}
	if err := p.recordFailedCall(ctx, call, rej.Code, rej.Message); err != nil {
		return err
	}
	return &Refused{Rejection: rej, CallID: callid.Of(call)}
}

func (p *Placer) dispatchFailed(ctx context.Context, call *switchboardv1.Call, err error) error {
	code, msg := telephony.CodeDispatchError, "The carrier could not accept the call; it is safe to retry."
	if de, ok := telephony.AsDispatchError(err); ok {
		code, msg = de.Code, "The carrier could not accept the call ("+de.Reason+"); it is safe to retry."
	}
	if err := p.recordFailedCall(ctx, call, code, msg); err != nil {
		return err
	}
	return &DispatchFailed{Code: code, Message: msg, CallID: callid.Of(call)}
}

// recordFailedCall creates the record of a call that never went out, failed
// from the start: one write, so no reader ever sees it queued.
func (p *Placer) recordFailedCall(ctx context.Context, call *switchboardv1.Call, code, msg string) error {
	if call.Annotations == nil {
		call.Annotations = map[string]string{}
	}
	call.Annotations[switchboardv1.RefusalCodeAnnotation] = code
	call.Annotations[switchboardv1.RefusalMessageAnnotation] = msg
	if err := p.create(ctx, call); err != nil {
		return createFailed("The call could not be recorded; it is safe to retry.", err)
	}
	return nil
}

// createFailed is the error of a create that did not succeed. Unless the
// apiserver refused it outright (a 4xx other than a timeout), the Call may
// exist: a retry without the request's Idempotency-Key could then place it
// twice, so the message says to send one.
func createFailed(msg string, err error) *Unavailable {
	code := int32(0)
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code = status.Status().Code
	}
	if code >= 400 && code < 500 && code != 408 {
		return &Unavailable{Message: msg, Err: err}
	}
	return &Unavailable{Err: err, Uncertain: true, Message: "The call could not be confirmed in time and may have been " +
		"queued; retry with the same Idempotency-Key to get its outcome without placing it twice."}
}

func newCall(ns, id string, req Request) *switchboardv1.Call {
	call := &switchboardv1.Call{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: callid.ResourceName(id), Labels: req.Labels,
			Annotations: map[string]string{switchboardv1.AcceptedAtAnnotation: time.Now().UTC().Format(time.RFC3339Nano)}},
		Spec: switchboardv1.CallSpec{
			AgentID:    req.AgentID,
			ToNumber:   req.ToNumber,
			FromNumber: req.FromNumber,
			Source:     req.Source,
		},
	}
	call.SetVariables(req.RawVars)
	call.SetMetadata(req.Metadata)
	for name, value := range req.SIPHeaders {
		if call.Spec.SIPHeaders == nil {
			call.Spec.SIPHeaders = make(map[string]switchboardv1.SIPHeaderValue, len(req.SIPHeaders))
		}
		call.Spec.SIPHeaders[name] = switchboardv1.SIPHeaderValue(value)
	}
	return call
}
