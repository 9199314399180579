package httpapi

// The phone-call paths of the hosted voice-AI service's SDK (retell-sdk,
// pinned in hack/sdk-compat), so a backend written with it places and
// reads Switchboard's calls by changing its baseURL. Each handler decodes
// the SDK's shape, does what its /v1 counterpart does, and renders the
// SDK's shape (compat_view.go); errors keep /v1's shapes, which the SDK
// raises as APIError with the status and body.

import (
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/callid"
	"github.com/switchboard-dev/switchboard/internal/calls"
	"github.com/switchboard-dev/switchboard/internal/callview"
)

// sdkRoutes mounts the SDK's paths; the caller authenticates them.
func (a *api) sdkRoutes(r chi.Router) {
	r.Post("/v2/create-phone-call", a.createPhoneCall)
	r.Get("/v2/get-call/{callID}", a.getSDKCall)
	r.Post("/v3/list-calls", a.listSDKCalls)
	r.Post("/v2/stop-call/{callID}", a.stopSDKCall)
	r.Post("/create-batch-call", a.createBatchCall)
}

// stopSDKCall is call.stop: POST /v1/calls/{call_id}/stop, answering 204
// as the SDK expects.
func (a *api) stopSDKCall(w http.ResponseWriter, r *http.Request) {
	if _, ok := a.stop(w, r); ok {
		w.WriteHeader(http.StatusNoContent)
	}
}

// createPhoneCall is call.createPhoneCall: POST /v1/calls, answering the
// new call as the SDK's call object (call_status registered).
func (a *api) createPhoneCall(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	req, invalid := decodeCreatePhoneCall(body, a.cfg.DefaultRegion)
	if invalid != nil {
		writeValidation(w, invalid)
		return
	}
	res := a.placeRequest(r.Context(), organization(r.Context()), req, callid.New())
	if res.status != http.StatusCreated {
		writeReply(w, res)
		return
	}
	a.writeSDKCall(w, r, res.status, res.call)
}

// getSDKCall is call.retrieve: GET /v1/calls/{call_id}, with the
// transcript (GET /v1/calls/{call_id}/transcript) as the SDK's transcript,
// transcript_object and transcript_with_tool_calls once the call has one.
func (a *api) getSDKCall(w http.ResponseWriter, r *http.Request) {
	call, ok := a.findCall(w, r)
	if !ok {
		return
	}
	id := callid.Of(call)
	t, err := a.cfg.Calls.Transcript(r.Context(), organization(r.Context()), id)
	if err != nil && !errors.Is(err, calls.ErrNoTranscript) {
		a.unavailable(w, err, "reading transcript", "The call could not be read")
		return
	}
	a.writeSDKCall(w, r, http.StatusOK, call, func(out *sdkCall) {
		if err == nil {
			out.sdkTranscript(callview.RenderTranscript(id, t.Turns))
		}
	})
}

func (a *api) writeSDKCall(w http.ResponseWriter, r *http.Request, status int, call *switchboardv1.Call, extra ...func(*sdkCall)) {
	view, err := callview.Render(r.Context(), call, a.cfg.Recordings)
	if err != nil {
		a.unavailable(w, err, "rendering call", "The call could not be read")
		return
	}
	out := sdkCallOf(view)
	for _, f := range extra {
		f(&out)
	}
	writeJSON(w, status, out)
}

// listSDKCalls is call.list: GET /v1/calls with the body's filters.
func (a *api) listSDKCalls(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	q, none, invalid := decodeSDKListCalls(body, a.cfg.DefaultRegion)
	if invalid != nil {
		writeValidation(w, invalid)
		return
	}
	if none {
		writeJSON(w, http.StatusOK, sdkCallList{Items: []sdkCall{}})
		return
	}
	a.streamCalls(w, r, q, pageFormat{array: "items",
		item: func(c callview.Call) any { return sdkCallOf(c) },
		tail: func(more bool, cursor *string) any { return sdkCallListTail{HasMore: more, PaginationKey: cursor} }})
}
