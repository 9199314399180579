package dashboard

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/callid"
	"github.com/switchboard-dev/switchboard/internal/callinput"
	"github.com/switchboard-dev/switchboard/internal/callpolicy"
	"github.com/switchboard-dev/switchboard/internal/calls"
	"github.com/switchboard-dev/switchboard/internal/validation"
)

// agentChoice is an agent in the form's select.
type agentChoice struct {
	ID, Name, FromNumber string
	RequiredVariables    []string
}

type placeData struct {
	Agents []agentChoice
	Agent  *agentChoice // the chosen one
	Form   url.Values
	// Problems are keyed by field; "form" is about the whole request.
	Problems map[string]string
	// FailedCallID is the record of a call that was refused or not
	// dispatched, when one was kept.
	FailedCallID string
}

// newCallForm shows the form; choosing an agent (a GET with agent_id)
// shows that agent's required variables.
func (d *dashboard) newCallForm(w http.ResponseWriter, r *http.Request) {
	data, err := d.placeForm(r, r.URL.Query())
	if err != nil {
		d.unavailable(w, r, err, "The agents could not be listed")
		return
	}
	d.render(w, r, http.StatusOK, "place.html", page{Title: "Place a call", Nav: "place", Data: data})
}

// agents are the signed-in organization's agents, by name.
func (d *dashboard) agents(ctx context.Context) ([]agentChoice, error) {
	var list switchboardv1.AgentList
	if err := d.cfg.Cache.List(ctx, &list, client.InNamespace(organization(ctx))); err != nil {
		return nil, err
	}
	agents := make([]agentChoice, 0, len(list.Items))
	for i := range list.Items {
		a := &list.Items[i]
		agents = append(agents, agentChoice{ID: a.ResolvedID(), Name: a.Name, FromNumber: a.Spec.FromNumber,
			RequiredVariables: callpolicy.RequiredVariables(a)})
	}
	slices.SortFunc(agents, func(a, b agentChoice) int { return strings.Compare(a.Name, b.Name) })
	return agents, nil
}

// agentNames maps agent ids to names, so that pages name the agents their
// calls carry the ids of.
func agentNames(agents []agentChoice) map[string]string {
	names := make(map[string]string, len(agents))
	for _, a := range agents {
		names[a.ID] = a.Name
	}
	return names
}

func (d *dashboard) placeForm(r *http.Request, form url.Values) (*placeData, error) {
	agents, err := d.agents(r.Context())
	if err != nil {
		return nil, err
	}
	data := &placeData{Agents: agents, Form: form, Problems: map[string]string{}}
	chosen := strings.ToLower(form.Get("agent_id"))
	for i := range data.Agents {
		if data.Agents[i].ID == chosen || (chosen == "" && len(data.Agents) == 1) {
			data.Agent = &data.Agents[i]
		}
	}
	return data, nil
}

// placeCall places a call from the form with the operation POST /v1/calls
// uses, and source "dashboard"; a refusal is shown beside its field.
func (d *dashboard) placeCall(w http.ResponseWriter, r *http.Request) {
	data, err := d.placeForm(r, r.PostForm)
	if err != nil {
		d.unavailable(w, r, err, "The agents could not be listed")
		return
	}
	body, problems := callBody(r.PostForm)
	if len(problems) == 0 {
		req, invalid := callinput.DecodeRequest(body, d.cfg.DefaultRegion)
		problems = formProblems(invalid)
		if len(problems) == 0 {
			req.Source = switchboardv1.SourceDashboard
			placed, err := d.cfg.Placer.Place(r.Context(), organization(r.Context()), *req, callid.New())
			if err == nil {
				seeOther(w, r, Prefix+"/calls/"+callid.Of(placed.Call))
				return
			}
			if f := calls.Failed(err); f.Code == calls.CodeServerBusy {
				w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(f.RetryAfter.Seconds()))))
				d.problem(w, r, http.StatusServiceUnavailable,
					"This replica is placing as many calls as it can at once; nothing was placed. Go back and send the form again in a moment.")
				return
			}
			problems, data.FailedCallID = d.placementProblems(err)
		}
	}
	data.Problems = problems
	d.render(w, r, http.StatusUnprocessableEntity, "place.html", page{Title: "Place a call", Nav: "place", Data: data,
		Error: "The call was not placed: see the messages beside the fields."})
}

// callBody builds POST /v1/calls's body from the form: the agent's
// variables come one field each (var.NAME), more as JSON.
func callBody(form url.Values) ([]byte, map[string]string) {
	problems := map[string]string{}
	body := map[string]any{"agent_id": form.Get("agent_id"), "to_number": strings.TrimSpace(form.Get("to_number"))}
	if from := strings.TrimSpace(form.Get("from_number")); from != "" {
		body["from_number"] = from
	}
	vars := map[string]any{}
	if extra := strings.TrimSpace(form.Get("variables_json")); extra != "" {
		if err := json.Unmarshal([]byte(extra), &vars); err != nil {
			problems["variables_json"] = "Input should be a valid JSON object, like {\"name\": \"value\"}"
		}
	}
	for field, values := range form {
		if name, ok := strings.CutPrefix(field, "var."); ok && strings.TrimSpace(values[0]) != "" {
			vars[name] = strings.TrimSpace(values[0])
		}
	}
	if len(vars) > 0 {
		body["variables"] = vars
	}
	if meta := strings.TrimSpace(form.Get("metadata")); meta != "" {
		if !json.Valid([]byte(meta)) {
			problems["metadata"] = "Input should be a valid JSON object, like {\"order\": \"A-17\"}"
		} else {
			body["metadata"] = json.RawMessage(meta)
		}
	}
	raw, _ := json.Marshal(body) // maps of strings and valid JSON: cannot fail
	return raw, problems
}

// formProblems places the API's validation messages beside the form's
// fields: a variable's beside its own field.
func formProblems(items []validation.Item) map[string]string {
	out := problemsByField(items)
	for _, item := range items {
		if len(item.Loc) > 2 && item.Loc[1] == "variables" {
			if name, ok := item.Loc[2].(string); ok {
				out["var."+name] = validation.Redact(item.Msg)
			}
		}
	}
	return out
}

// placementProblems says why a call was not placed, beside the field it is
// about (calls.Failed), and names the failed call that was recorded, if any.
func (d *dashboard) placementProblems(err error) (map[string]string, string) {
	f := calls.Failed(err)
	if f.Err != nil {
		d.cfg.Log.Error(f.Err, "placing call from the dashboard")
	}
	out := map[string]string{}
	switch f.Field {
	case "":
		out["form"] = f.Message
	case "variables":
		out["variables_json"] = f.Message
		for _, name := range f.MissingVariables {
			out["var."+name] = "Required by this agent."
		}
	default:
		out[f.Field] = f.Message
	}
	return out, f.CallID
}
