package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/callid"
	"github.com/switchboard-dev/switchboard/internal/callinput"
	"github.com/switchboard-dev/switchboard/internal/calls"
	"github.com/switchboard-dev/switchboard/internal/callview"
	"github.com/switchboard-dev/switchboard/internal/idempotency"
	"github.com/switchboard-dev/switchboard/internal/validation"
)

// callCreatedResponse is the 201 body of POST /v1/calls (OpenAPI: CallCreatedResponse).
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

// createCall implements POST /v1/calls. With an Idempotency-Key header the
// placement runs once per key (package idempotency) and retries replay its
// response.
func (a *api) createCall(w http.ResponseWriter, r *http.Request) {
	ctx, ns := r.Context(), organization(r.Context())
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	key, sent, ok := idempotencyKey(w, r)
	switch {
	case !ok:
		return
	case !sent:
		writeReply(w, a.place(ctx, ns, body, callid.New()))
		return
	}
	res, replayed, err := a.cfg.Idempotency.Do(ctx, ns, key, body, func(id string) idempotency.Response {
		return a.place(ctx, ns, body, id).response()
	})
	a.writeIdempotent(w, res, replayed, err, ns, "call")
}

// idempotencyKey reads the Idempotency-Key header: sent says whether
// there is one; a malformed one is answered here (422) and ok is false.
func idempotencyKey(w http.ResponseWriter, r *http.Request) (key string, sent, ok bool) {
	keys, sent := r.Header["Idempotency-Key"]
	if !sent {
		return "", false, true
	}
	if len(keys) != 1 || !idempotency.ValidKey(keys[0]) {
		writeValidation(w, []validation.Item{{Type: "string_pattern_mismatch", Loc: []any{"header", "Idempotency-Key"},
			Msg:   fmt.Sprintf("Idempotency-Key should be one header of 1 to %d printable ASCII characters", idempotency.MaxKeyLength),
			Input: nil}})
		return "", true, false
	}
	return keys[0], true, true
}

// writeIdempotent answers a create run through an Idempotency-Key; what
// names what it creates (call, campaign).
func (a *api) writeIdempotent(w http.ResponseWriter, res idempotency.Response, replayed bool, err error, ns, what string) {
	switch {
	case errors.Is(err, idempotency.ErrKeyReused):
		writeErrorDetail(w, http.StatusUnprocessableEntity, ErrorDetail{ErrorCode: "idempotency_key_reused",
			Error: "This Idempotency-Key was used with a different request body; use a new key for a new " + what + "."})
	case errors.Is(err, idempotency.ErrKeyInUse):
		w.Header().Set("Retry-After", "1")
		writeErrorDetail(w, http.StatusConflict, ErrorDetail{ErrorCode: "idempotency_key_in_use",
			Error: "A request with this Idempotency-Key is still being processed; retry shortly to get its response."})
	case err != nil:
		a.cfg.Log.Error(err, "idempotency key", "namespace", ns)
		writeDetail(w, http.StatusServiceUnavailable, "The request could not be checked against its Idempotency-Key; it is safe to retry.")
	default:
		if replayed {
			w.Header().Set("Idempotent-Replayed", "true")
		}
		if res.RetryAfter != "" {
			w.Header().Set("Retry-After", res.RetryAfter)
		}
		writeRaw(w, res.Status, res.Body)
	}
}

// place is the whole placement of a call with id callID. Order of checks:
// body (422 validation array), agent (404), then callpolicy's order
// (400/422), then the carrier's acceptance (502). Only blocked numbers and
// dispatch failures leave a failed call record; the success path is one
// create.
func (a *api) place(ctx context.Context, ns string, body []byte, callID string) reply {
	req, invalid := callinput.DecodeRequest(body, a.cfg.DefaultRegion)
	if invalid != nil {
		return validationReply(invalid)
	}
	return a.placeRequest(ctx, ns, req, callID)
}

// placeRequest is place after decoding, which the SDK's create-phone-call
// (compat.go) shares. A placed call's reply carries the Call.
func (a *api) placeRequest(ctx context.Context, ns string, req *calls.Request, callID string) reply {
	placement := *req
	placement.Source = switchboardv1.SourceAPI
	placed, err := a.cfg.Placer.Place(ctx, ns, placement, callID)
	if err != nil {
		return a.placementFailed(err)
	}
	call := placed.Call
	return reply{status: http.StatusCreated, placed: true, call: call, body: callCreatedResponse{
		CallID: callid.Of(call), Status: string(switchboardv1.CallQueued), AgentID: call.Spec.AgentID,
		ToNumber: call.Spec.ToNumber, CreatedAt: callview.Timestamp(call.CreationTimestamp.Time),
		FromNumber: ptr(placed.FromNumber),
	}}
}

// placementFailed is the reply for a call that was not placed, as
// calls.Failed maps it. Refusals that recorded a failed call name it and
// count as placed.
func (a *api) placementFailed(err error) reply {
	f := calls.Failed(err)
	if f.Err != nil {
		a.cfg.Log.Error(f.Err, "placing call")
	}
	if f.Status == http.StatusServiceUnavailable && f.Code == "" {
		res := unavailableReply(f.Message)
		res.uncertain = f.Uncertain
		return res
	}
	d := ErrorDetail{Error: f.Message, ErrorCode: f.Code, MissingVariables: f.MissingVariables}
	if f.ExpectedFromNumber != "" {
		d.ExpectedFromNumber = ptr(f.ExpectedFromNumber)
	}
	if f.CallID != "" {
		d.CallID = ptr(f.CallID)
	}
	res := errorReply(f.Status, d)
	res.placed = f.CallID != ""
	if f.RetryAfter > 0 {
		res.retryAfter = retryAfterSeconds(f.RetryAfter)
	}
	return res
}

// concurrency is GET /v1/concurrency's body; null limits are unlimited.
type concurrency struct {
	LiveCalls        int      `json:"live_calls"`
	QueuedCalls      int      `json:"queued_calls"`
	ConcurrencyLimit *int     `json:"concurrency_limit"`
	CreateRateLimit  *float64 `json:"create_rate_limit"`
	CreateBurstLimit *int     `json:"create_burst_limit"`
	EndpointLimit    *int     `json:"webhook_endpoint_limit"`
}

// getConcurrency implements GET /v1/concurrency.
func (a *api) getConcurrency(w http.ResponseWriter, r *http.Request) {
	u, err := a.cfg.Quota.Usage(r.Context(), organization(r.Context()))
	if err != nil {
		a.cfg.Log.Error(err, "reading usage")
		writeDetail(w, http.StatusServiceUnavailable, "The organization's calls could not be counted; it is safe to retry.")
		return
	}
	out := concurrency{LiveCalls: u.Live, QueuedCalls: u.Queued}
	if u.Limits.ActiveCalls > 0 {
		out.ConcurrencyLimit = ptr(u.Limits.ActiveCalls)
	}
	if u.Limits.CreateRate > 0 {
		out.CreateRateLimit, out.CreateBurstLimit = ptr(u.Limits.CreateRate), ptr(u.Limits.CreateBurst)
	}
	if u.Limits.WebhookEndpoints > 0 {
		out.EndpointLimit = ptr(u.Limits.WebhookEndpoints)
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *api) getCall(w http.ResponseWriter, r *http.Request) {
	call, ok := a.findCall(w, r)
	if !ok {
		return
	}
	a.renderCall(w, r, http.StatusOK, call)
}

// renderCall answers with the call object.
func (a *api) renderCall(w http.ResponseWriter, r *http.Request, status int, call *switchboardv1.Call) {
	view, err := callview.Render(r.Context(), call, a.cfg.Recordings)
	if err != nil {
		a.cfg.Log.Error(err, "rendering call")
		writeDetail(w, http.StatusServiceUnavailable, "The call could not be read; it is safe to retry.")
		return
	}
	writeJSON(w, status, view)
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
	id, ok := callIDParam(w, r)
	if !ok {
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

// callIDParam is the {callID} of the path; a malformed one is answered
// with the validation array.
func callIDParam(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := chi.URLParam(r, "callID")
	if !callid.Valid(id) {
		writeValidation(w, []validation.Item{{Type: "string_pattern_mismatch", Loc: []any{"path", "call_id"},
			Msg: "String should match pattern '" + callid.Pattern + "'", Input: id,
			Ctx: map[string]any{"pattern": callid.Pattern}}})
		return "", false
	}
	return id, true
}

// stopCall implements POST /v1/calls/{call_id}/stop: 202 with the call as
// it is now; it ends shortly (canceled if it was not dialed yet,
// api_hangup otherwise).
func (a *api) stopCall(w http.ResponseWriter, r *http.Request) {
	if call, ok := a.stop(w, r); ok {
		a.renderCall(w, r, http.StatusAccepted, call)
	}
}

// stop stops the call of the path, or answers why it cannot (404, 409).
func (a *api) stop(w http.ResponseWriter, r *http.Request) (*switchboardv1.Call, bool) {
	id, ok := callIDParam(w, r)
	if !ok {
		return nil, false
	}
	call, err := a.cfg.Stopper.Stop(r.Context(), organization(r.Context()), id)
	switch {
	case errors.Is(err, calls.ErrNotFound):
		writeDetail(w, http.StatusNotFound, "Call not found.")
	case errors.Is(err, calls.ErrNotActive):
		writeErrorDetail(w, http.StatusConflict, ErrorDetail{ErrorCode: "call_not_active", CallID: ptr(id),
			Error: "The call has already ended or failed; there is nothing to stop."})
	case err != nil:
		a.cfg.Log.Error(err, "stopping call")
		writeDetail(w, http.StatusServiceUnavailable, "The call could not be stopped; it is safe to retry.")
	default:
		return call, true
	}
	return nil, false
}
