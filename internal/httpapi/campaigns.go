package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/switchboard-dev/switchboard/internal/callid"
	"github.com/switchboard-dev/switchboard/internal/callinput"
	"github.com/switchboard-dev/switchboard/internal/callpolicy"
	"github.com/switchboard-dev/switchboard/internal/callview"
	"github.com/switchboard-dev/switchboard/internal/campaigninput"
	"github.com/switchboard-dev/switchboard/internal/campaigns"
	"github.com/switchboard-dev/switchboard/internal/campaignview"
	"github.com/switchboard-dev/switchboard/internal/idempotency"
	"github.com/switchboard-dev/switchboard/internal/validation"
)

// campaignRoutes are /v1/campaigns (api/README.md, "Campaigns").
func (a *api) campaignRoutes(r chi.Router) {
	r.Post("/", a.createCampaign)
	r.Get("/", a.listCampaigns)
	r.Get("/{campaignID}", a.getCampaign)
	r.Get("/{campaignID}/calls", a.listCampaignCalls)
	r.Post("/{campaignID}/contacts", a.addCampaignContacts)
	r.Post("/{campaignID}/pause", a.campaignAction(campaigns.Pause))
	r.Post("/{campaignID}/resume", a.campaignAction(campaigns.Resume))
	r.Post("/{campaignID}/cancel", a.campaignAction(campaigns.Cancel))
}

// idempotencyScope keeps a campaign's Idempotency-Keys apart from calls'.
const idempotencyScope = "campaigns/"

// createCampaign implements POST /v1/campaigns: JSON, or multipart with a
// CSV file. With an Idempotency-Key it runs once per key, as create-call.
func (a *api) createCampaign(w http.ResponseWriter, r *http.Request) {
	ctx, ns := r.Context(), organization(r.Context())
	contentType := r.Header.Get("Content-Type")
	body, ok := readCampaignBody(w, r, contentType)
	if !ok {
		return
	}
	a.onceByKey(w, r, body, idempotencyScope, "campaign", func(id string) reply {
		return a.createCampaignWith(ctx, ns, contentType, body, campaignID(id))
	})
}

// onceByKey answers run's reply; with an Idempotency-Key (kept under
// scope) run runs once per key and a retry replays its reply. id is the
// key's id, or a fresh one without a key.
func (a *api) onceByKey(w http.ResponseWriter, r *http.Request, body []byte, scope, what string, run func(id string) reply) {
	ctx, ns := r.Context(), organization(r.Context())
	key, sent, ok := idempotencyKey(w, r)
	switch {
	case !ok:
		return
	case !sent:
		writeReply(w, run(callid.New()))
		return
	}
	res, replayed, err := a.cfg.Idempotency.Do(ctx, ns, scope+key, body, func(id string) idempotency.Response {
		return run(id).response()
	})
	a.writeIdempotent(w, res, replayed, err, ns, what)
}

// campaignID is the campaign id (and resource name) for a fresh id.
func campaignID(id string) string {
	return "campaign-" + strings.TrimPrefix(id, "call_")
}

// readCampaignBody reads the body within its type's limit: 413 above it.
func readCampaignBody(w http.ResponseWriter, r *http.Request, contentType string) ([]byte, bool) {
	limit := int64(campaigninput.MaxJSONBytes)
	if strings.HasPrefix(strings.ToLower(contentType), "multipart/") {
		limit = campaigninput.MaxUploadBytes
	}
	return readBodyWithin(w, r, limit)
}

// createCampaignWith decodes and creates campaign id.
func (a *api) createCampaignWith(ctx context.Context, ns, contentType string, body []byte, id string) reply {
	req, invalid, err := campaigninput.Decode(contentType, body)
	if bad, failed := decodeFailed(invalid, err); failed {
		return bad
	}
	return a.createCampaignFrom(ctx, ns, req, id)
}

// decodeFailed is the reply to a campaign or contacts body that could not
// be decoded (an unsupported type, an unreadable body, invalid fields),
// and whether there is one.
func decodeFailed(invalid []validation.Item, err error) (reply, bool) {
	switch {
	case errors.Is(err, campaigninput.ErrUnsupportedType):
		return reply{status: http.StatusUnsupportedMediaType, body: stringDetail{Detail: err.Error()}}, true
	case err != nil:
		return unavailableReply("The request could not be read; it is safe to retry."), true
	case invalid != nil:
		return validationReply(invalid), true
	}
	return reply{}, false
}

// createCampaignFrom creates campaign id from a decoded request.
func (a *api) createCampaignFrom(ctx context.Context, ns string, req *campaigninput.Request, id string) reply {
	created, err := a.cfg.Campaigns.Create(ctx, ns, id, req.Spec, req.Contacts)
	var unknown *campaigns.AgentUnknown
	var contacts *campaigns.InvalidContacts
	switch {
	case errors.As(err, &unknown):
		return errorReply(http.StatusNotFound, ErrorDetail{Error: unknown.Error(), ErrorCode: callpolicy.CodeAgentNotFound})
	case errors.As(err, &contacts):
		return validationReply(campaigninput.ContactProblems(contacts.Items))
	case err != nil:
		a.cfg.Log.Error(err, "creating campaign", "namespace", ns)
		return unavailableReply("The campaign could not be created; it is safe to retry with the same Idempotency-Key.")
	}
	return reply{status: http.StatusCreated, placed: true, body: campaignview.CreatedOf(created)}
}

func (a *api) listCampaigns(w http.ResponseWriter, r *http.Request) {
	list, err := a.cfg.Campaigns.List(r.Context(), organization(r.Context()))
	if err != nil {
		a.cfg.Log.Error(err, "listing campaigns")
		writeDetail(w, http.StatusServiceUnavailable, "The campaigns could not be read; it is safe to retry.")
		return
	}
	out := campaignList{Data: make([]campaignview.Campaign, len(list))}
	for i := range list {
		out.Data[i] = campaignview.Render(&list[i])
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *api) getCampaign(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "campaignID")
	c, err := a.cfg.Campaigns.Get(r.Context(), organization(r.Context()), id)
	if a.campaignFailed(w, err) {
		return
	}
	writeJSON(w, http.StatusOK, campaignview.Render(c))
}

// addCampaignContacts implements POST /v1/campaigns/{id}/contacts: JSON
// or a CSV upload, as on create; with an Idempotency-Key once per key.
func (a *api) addCampaignContacts(w http.ResponseWriter, r *http.Request) {
	ctx, ns, id := r.Context(), organization(r.Context()), chi.URLParam(r, "campaignID")
	contentType := r.Header.Get("Content-Type")
	body, ok := readCampaignBody(w, r, contentType)
	if !ok {
		return
	}
	a.onceByKey(w, r, body, idempotencyScope+id+"/contacts/", "list of contacts", func(string) reply {
		return a.addContactsWith(ctx, ns, id, contentType, body)
	})
}

// addContactsWith decodes contacts and adds them to campaign id.
func (a *api) addContactsWith(ctx context.Context, ns, id, contentType string, body []byte) reply {
	in, invalid, err := campaigninput.DecodeContacts(contentType, body)
	if bad, failed := decodeFailed(invalid, err); failed {
		return bad
	}
	added, err := a.cfg.Campaigns.AddContacts(ctx, ns, id, in)
	var contacts *campaigns.InvalidContacts
	switch {
	case errors.As(err, &contacts):
		return validationReply(campaigninput.ContactProblems(contacts.Items))
	case errors.Is(err, campaigns.ErrNotFound):
		return reply{status: http.StatusNotFound, body: stringDetail{Detail: "Campaign not found."}}
	case errors.Is(err, campaigns.ErrEnded):
		return errorReply(http.StatusConflict, ErrorDetail{ErrorCode: "campaign_ended",
			Error: "The campaign has completed or was canceled; contacts cannot be added. Create a new campaign."})
	case err != nil:
		a.cfg.Log.Error(err, "adding campaign contacts", "namespace", ns, "campaign", id)
		return unavailableReply("The contacts could not be added; it is safe to retry with the same Idempotency-Key.")
	}
	return reply{status: http.StatusOK, placed: true, body: campaignview.AddedOf(added)}
}

// campaignAction implements POST /v1/campaigns/{id}/pause|resume|cancel:
// 200 with the campaign as changed, 409 when it has ended.
func (a *api) campaignAction(action campaigns.Action) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := a.cfg.Campaigns.Do(r.Context(), organization(r.Context()), chi.URLParam(r, "campaignID"), action)
		if a.campaignFailed(w, err) {
			return
		}
		writeJSON(w, http.StatusOK, campaignview.Render(c))
	}
}

// listCampaignCalls implements GET /v1/campaigns/{id}/calls: the list of
// calls, its filters and pages, of the campaign's calls.
func (a *api) listCampaignCalls(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "campaignID")
	if _, err := a.cfg.Campaigns.Get(r.Context(), organization(r.Context()), id); a.campaignFailed(w, err) {
		return
	}
	q, invalid := callinput.DecodeQuery(r.URL.Query(), a.cfg.DefaultRegion)
	if invalid != nil {
		writeValidation(w, invalid)
		return
	}
	q.Campaign = id
	a.streamCalls(w, r, q, pageFormat{array: "data",
		item: func(c callview.Call) any { return c },
		tail: func(more bool, cursor *string) any { return callListTail{HasMore: more, NextCursor: cursor} }})
}

// campaignFailed answers a failed campaign operation; false when err is nil.
func (a *api) campaignFailed(w http.ResponseWriter, err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, campaigns.ErrNotFound):
		writeDetail(w, http.StatusNotFound, "Campaign not found.")
	case errors.Is(err, campaigns.ErrEnded):
		writeErrorDetail(w, http.StatusConflict, ErrorDetail{ErrorCode: "campaign_ended",
			Error: "The campaign has completed or was canceled; it cannot be paused or resumed."})
	default:
		a.cfg.Log.Error(err, "campaign operation")
		writeDetail(w, http.StatusServiceUnavailable, "The campaign could not be read or changed; it is safe to retry.")
	}
	return true
}
