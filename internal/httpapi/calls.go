package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/callid"
	"github.com/switchboard-dev/switchboard/internal/callpolicy"
	"github.com/switchboard-dev/switchboard/internal/calls"
	"github.com/switchboard-dev/switchboard/internal/callview"
	"github.com/switchboard-dev/switchboard/internal/directory"
	"github.com/switchboard-dev/switchboard/internal/telephony"
)

// callCreatedResponse is the 201 body (spec 2.2).
type callCreatedResponse struct {
	CallID     string  `json:"call_id"`
	Status     string  `json:"status"`
	AgentID    string  `json:"agent_id"`
	ToNumber   string  `json:"to_number"`
	CreatedAt  string  `json:"created_at"`
	FromNumber *string `json:"from_number"`
}

type recordingLink struct {
	URL       string `json:"url"`
	ExpiresAt string `json:"expires_at"`
}

// createCall implements POST /v1/calls. Order of checks: key (401), body
// (422 validation array), agent (404), then callpolicy's order (400/422),
// then the carrier's acceptance (502). Only blocked numbers and dispatch
// failures leave a failed call record; the success path is one create.
func (a *api) createCall(w http.ResponseWriter, r *http.Request) {
	body, tooLarge := readBody(r)
	if tooLarge != nil {
		writeValidation(w, []ValidationItem{*tooLarge})
		return
	}
	req, invalid := decodeCreateCall(body, a.cfg.DefaultRegion)
	if invalid != nil {
		writeValidation(w, invalid)
		return
	}
	call, agent, ok := a.placeCall(w, r, req)
	if !ok {
		return
	}
	writeJSON(w, http.StatusCreated, callCreatedResponse{
		CallID: callid.Of(call), Status: string(switchboardv1.CallQueued), AgentID: call.Spec.AgentID,
		ToNumber: call.Spec.ToNumber, CreatedAt: callview.Timestamp(call.CreationTimestamp.Time),
		FromNumber: ptr(agent.Spec.FromNumber),
	})
}

// placeCall places a decoded create-call request: agent, policy, the
// carrier's acceptance, then the create. POST /v1/calls and the SDK's
// create-phone-call (compat.go) share it. When the call is not placed it
// has answered the request itself, with /v1's errors, and reports false.
func (a *api) placeCall(w http.ResponseWriter, r *http.Request, req *createCallRequest) (*switchboardv1.Call, *switchboardv1.Agent, bool) {
	ctx, ns := r.Context(), organization(r.Context())
	agent, err := a.cfg.Directory.Agent(ctx, ns, req.AgentID)
	if err != nil {
		a.agentLookupFailed(w, req.AgentID, err)
		return nil, nil, false
	}
	call := newCall(ns, req)
	if rej := callpolicy.Check(agent, policyRequest(ns, req), a.cfg.Numbers); rej != nil {
		a.refuse(w, r, call, rej)
		return nil, nil, false
	}
	if err := a.cfg.Dialer.Admit(ctx, dialRequest(call, agent, req.Variables)); err != nil {
		a.dispatchFailed(w, r, call, err)
		return nil, nil, false
	}
	if err := a.cfg.Client.Create(ctx, call); err != nil {
		a.cfg.Log.Error(err, "creating call", "namespace", ns)
		writeDetail(w, http.StatusServiceUnavailable, "The call could not be queued; it is safe to retry.")
		return nil, nil, false
	}
	return call, agent, true
}

func (a *api) agentLookupFailed(w http.ResponseWriter, agentID string, err error) {
	msg := "No agent " + agentID + " in this organization."
	switch {
	case errors.Is(err, directory.ErrAmbiguous):
		msg = "Several agents in this organization resolve to " + agentID + "; give each a distinct spec.id."
	case !errors.Is(err, directory.ErrNotFound):
		a.cfg.Log.Error(err, "looking up agent")
		writeDetail(w, http.StatusServiceUnavailable, "The agent could not be looked up; it is safe to retry.")
		return
	}
	writeErrorDetail(w, http.StatusNotFound, ErrorDetail{Error: msg, ErrorCode: callpolicy.CodeAgentNotFound})
}

func (a *api) refuse(w http.ResponseWriter, r *http.Request, call *switchboardv1.Call, rej *callpolicy.Rejection) {
	d := ErrorDetail{Error: rej.Message, ErrorCode: rej.Code, MissingVariables: rej.MissingVariables}
	if rej.ExpectedFromNumber != "" {
		d.ExpectedFromNumber = ptr(rej.ExpectedFromNumber)
	}
	status := http.StatusUnprocessableEntity
	if rej.Code == callpolicy.CodeAgentNotOutbound || rej.Code == callpolicy.CodeAgentInactive {
		status = http.StatusBadRequest
	}
	if rej.RecordsFailedCall() {
		if !a.recordFailedCall(r.Context(), w, call, rej.Code, rej.Message) {
			return
		}
		d.CallID = ptr(callid.Of(call))
	}
	writeErrorDetail(w, status, d)
}

func (a *api) dispatchFailed(w http.ResponseWriter, r *http.Request, call *switchboardv1.Call, err error) {
	code, msg := telephony.CodeDispatchError, "The carrier could not accept the call; it is safe to retry."
	if de, ok := telephony.AsDispatchError(err); ok {
		code, msg = de.Code, "The carrier could not accept the call ("+de.Reason+"); it is safe to retry."
	}
	if !a.recordFailedCall(r.Context(), w, call, code, msg) {
		return
	}
	writeErrorDetail(w, http.StatusBadGateway, ErrorDetail{Error: msg, ErrorCode: code, CallID: ptr(callid.Of(call))})
}

// recordFailedCall creates the record of a call that never went out, failed
// from the start: one write, so no reader ever sees it queued. It reports
// false, having answered the request, when it could not.
func (a *api) recordFailedCall(ctx context.Context, w http.ResponseWriter, call *switchboardv1.Call, code, msg string) bool {
	if call.Annotations == nil {
		call.Annotations = map[string]string{}
	}
	call.Annotations[switchboardv1.RefusalCodeAnnotation] = code
	call.Annotations[switchboardv1.RefusalMessageAnnotation] = msg
	if err := a.cfg.Client.Create(ctx, call); err != nil {
		a.cfg.Log.Error(err, "recording failed call", "namespace", call.Namespace, "code", code)
		writeDetail(w, http.StatusServiceUnavailable, "The call could not be recorded; it is safe to retry.")
		return false
	}
	return true
}

func (a *api) getCall(w http.ResponseWriter, r *http.Request) {
	call, ok := a.findCall(w, r)
	if !ok {
		return
	}
	view, err := callview.Render(r.Context(), call, a.cfg.Recordings)
	if err != nil {
		a.cfg.Log.Error(err, "rendering call")
		writeDetail(w, http.StatusServiceUnavailable, "The call could not be read; it is safe to retry.")
		return
	}
	writeJSON(w, http.StatusOK, view)
}

func (a *api) getRecording(w http.ResponseWriter, r *http.Request) {
	call, ok := a.findCall(w, r)
	if !ok {
		return
	}
	const notYet = "No recording is available for this call; it is ready shortly after an answered call ends."
	if call.Status.Recording == nil {
		writeDetail(w, http.StatusNotFound, notYet)
		return
	}
	link, err := a.cfg.Recordings.Link(r.Context(), call.Status.Recording.Key, callview.LinkTTL)
	if err != nil {
		a.cfg.Log.Error(err, "signing recording link", "callID", callid.Of(call))
		writeDetail(w, http.StatusNotFound, notYet)
		return
	}
	writeJSON(w, http.StatusOK, recordingLink{URL: link.URL, ExpiresAt: callview.Timestamp(link.ExpiresAt)})
}

// findCall resolves {callID} in the caller's organization, answering the
// request itself (422, 404) when it cannot.
func (a *api) findCall(w http.ResponseWriter, r *http.Request) (*switchboardv1.Call, bool) {
	id := chi.URLParam(r, "callID")
	if !callid.Valid(id) {
		writeValidation(w, []ValidationItem{{Type: "string_pattern_mismatch", Loc: []any{"path", "call_id"},
			Msg: "String should match pattern '" + callid.Pattern + "'", Input: id,
			Ctx: map[string]any{"pattern": callid.Pattern}}})
		return nil, false
	}
	call, err := a.cfg.Calls.Get(r.Context(), organization(r.Context()), id)
	switch {
	case errors.Is(err, calls.ErrNotFound):
		writeDetail(w, http.StatusNotFound, "Call not found.")
		return nil, false
	case err != nil:
		a.cfg.Log.Error(err, "looking up call")
		writeDetail(w, http.StatusServiceUnavailable, "The call could not be read; it is safe to retry.")
		return nil, false
	}
	return call, true
}

func newCall(ns string, req *createCallRequest) *switchboardv1.Call {
	id := callid.New()
	call := &switchboardv1.Call{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: callid.ResourceName(id),
			Annotations: map[string]string{switchboardv1.AcceptedAtAnnotation: time.Now().UTC().Format(time.RFC3339Nano)}},
		Spec: switchboardv1.CallSpec{
			AgentID:    req.AgentID,
			ToNumber:   req.ToNumber,
			FromNumber: req.FromNumber,
			Source:     switchboardv1.SourceAPI,
		},
	}
	if req.RawVars != nil {
		call.Spec.Variables = &apiextensionsv1.JSON{Raw: req.RawVars}
	}
	if req.Metadata != nil {
		call.Spec.Metadata = &apiextensionsv1.JSON{Raw: req.Metadata}
	}
	return call
}

func policyRequest(ns string, req *createCallRequest) callpolicy.Request {
	return callpolicy.Request{Namespace: ns, ToNumber: req.ToNumber, FromNumber: req.FromNumber, Variables: req.Variables}
}

func dialRequest(call *switchboardv1.Call, agent *switchboardv1.Agent, vars map[string]any) telephony.Request {
	return telephony.BuildRequest(call, agent.Spec.FromNumber, vars, agent)
}
