package dashboard

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/switchboard-dev/switchboard/internal/callid"
	"github.com/switchboard-dev/switchboard/internal/campaigninput"
	"github.com/switchboard-dev/switchboard/internal/campaigns"
	"github.com/switchboard-dev/switchboard/internal/campaignview"
	"github.com/switchboard-dev/switchboard/internal/validation"
)

// The campaigns page: the organization's campaigns with their progress
// and outcomes, pause, resume and cancel, and a form that creates one from
// a CSV file, with the REST API's operations (campaigns.Service) and its
// decoding (campaigninput), so a form and a request are refused alike.

type campaignsData struct {
	Campaigns []campaignview.Campaign
	Problems  []string
}

func (d *dashboard) listCampaigns(w http.ResponseWriter, r *http.Request) {
	d.renderCampaigns(w, r, http.StatusOK, nil)
}

func (d *dashboard) renderCampaigns(w http.ResponseWriter, r *http.Request, status int, problems []string) {
	list, err := d.cfg.Campaigns.List(r.Context(), organization(r.Context()))
	if err != nil {
		d.unavailable(w, r, err, "The campaigns could not be listed")
		return
	}
	data := campaignsData{Campaigns: make([]campaignview.Campaign, len(list)), Problems: problems}
	for i := range list {
		data.Campaigns[i] = campaignview.Render(&list[i])
	}
	d.render(w, r, status, "campaigns.html", page{Title: "Campaigns", Nav: "campaigns", Data: data})
}

// createCampaign reads the form (agent, name, calls per minute, the CSV
// file) as POST /v1/campaigns reads a multipart body.
func (d *dashboard) createCampaign(w http.ResponseWriter, r *http.Request) {
	file, _, err := r.FormFile("contacts")
	if err != nil {
		d.renderCampaigns(w, r, http.StatusUnprocessableEntity, []string{"Choose a CSV file of contacts."})
		return
	}
	defer func() { _ = file.Close() }()
	csv, err := io.ReadAll(file)
	if err != nil {
		d.unavailable(w, r, err, "The file could not be read")
		return
	}
	req, invalid := campaigninput.FromForm(campaigninput.Form{AgentID: r.PostFormValue("agent_id"),
		Name: r.PostFormValue("name"), CallsPerMinute: r.PostFormValue("calls_per_minute"),
		Start: r.PostFormValue("window_start"), End: r.PostFormValue("window_end")}, csv)
	if invalid == nil {
		_, err = d.cfg.Campaigns.Create(r.Context(), organization(r.Context()),
			"campaign-"+strings.TrimPrefix(callid.New(), "call_"), req.Spec, req.Contacts)
	}
	var unknown *campaigns.AgentUnknown
	var contacts *campaigns.InvalidContacts
	switch {
	case invalid != nil:
		d.renderCampaigns(w, r, http.StatusUnprocessableEntity, messages(invalid))
	case errors.As(err, &unknown):
		d.renderCampaigns(w, r, http.StatusUnprocessableEntity, []string{unknown.Error()})
	case errors.As(err, &contacts):
		d.renderCampaigns(w, r, http.StatusUnprocessableEntity, messages(campaigninput.ContactProblems(contacts.Items)))
	case err != nil:
		d.unavailable(w, r, err, "The campaign could not be created")
	default:
		seeOther(w, r, Prefix+"/campaigns")
	}
}

// campaignAction pauses, resumes or cancels a campaign.
func (d *dashboard) campaignAction(action campaigns.Action) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, err := d.cfg.Campaigns.Do(r.Context(), organization(r.Context()), chi.URLParam(r, "campaignID"), action)
		switch {
		case errors.Is(err, campaigns.ErrNotFound):
			d.problem(w, r, http.StatusNotFound, "Campaign not found.")
		case errors.Is(err, campaigns.ErrEnded):
			d.renderCampaigns(w, r, http.StatusConflict, []string{"The campaign has ended."})
		case err != nil:
			d.unavailable(w, r, err, "The campaign could not be changed")
		default:
			seeOther(w, r, Prefix+"/campaigns/"+url.PathEscape(chi.URLParam(r, "campaignID")))
		}
	}
}

// messages are the validation items' messages, for the page.
func messages(items []validation.Item) []string {
	out := make([]string, len(items))
	for i, item := range items {
		out[i] = validation.Redact(item.Msg)
	}
	return out
}
