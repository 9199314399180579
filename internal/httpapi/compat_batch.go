package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/switchboard-dev/switchboard/internal/callid"
	"github.com/switchboard-dev/switchboard/internal/campaigninput"
	"github.com/switchboard-dev/switchboard/internal/campaignview"
	"github.com/switchboard-dev/switchboard/internal/validation"
)

// The SDK's batchCall.createBatchCall (POST /create-batch-call) creates a
// campaign: its tasks are the contacts, its call_time_window the calling
// window (applied in each contact's own zone unless it names one), its
// trigger_timestamp the start.

// maxBatchTasks bounds a batch's tasks: the SDK sends them inline.
const maxBatchTasks = 100_000

type sdkBatch struct {
	FromNumber       string         `json:"from_number"`
	Name             string         `json:"name"`
	Tasks            []sdkTask      `json:"tasks"`
	TriggerTimestamp *int64         `json:"trigger_timestamp"`
	CallTimeWindow   *sdkTimeWindow `json:"call_time_window"`
}

type sdkTask struct {
	ToNumber        string          `json:"to_number"`
	OverrideAgentID string          `json:"override_agent_id"`
	Variables       json.RawMessage `json:"retell_llm_dynamic_variables"`
	Metadata        json.RawMessage `json:"metadata"`
}

type sdkTimeWindow struct {
	Windows  []struct{ Start, End int } `json:"windows"`
	Day      []string                   `json:"day"`
	Timezone string                     `json:"timezone"`
}

// sdkDays are the SDK's day names as a campaign's.
var sdkDays = map[string]string{"Monday": "mon", "Tuesday": "tue", "Wednesday": "wed", "Thursday": "thu",
	"Friday": "fri", "Saturday": "sat", "Sunday": "sun"}

// batchCallResponse is the SDK's BatchCallResponse.
type batchCallResponse struct {
	BatchCallID        string         `json:"batch_call_id"`
	FromNumber         string         `json:"from_number"`
	Name               string         `json:"name"`
	ScheduledTimestamp int64          `json:"scheduled_timestamp"`
	TotalTaskCount     int            `json:"total_task_count"`
	CallTimeWindow     *sdkTimeWindow `json:"call_time_window,omitempty"`
}

// createBatchCall creates the campaign of a batch, with the checks and
// errors of POST /v1/campaigns.
func (a *api) createBatchCall(w http.ResponseWriter, r *http.Request) {
	ctx, ns := r.Context(), organization(r.Context())
	body, ok := readBodyWithin(w, r, campaigninput.MaxUploadBytes)
	if !ok {
		return
	}
	batch, campaignBody, invalid := decodeBatch(body)
	if invalid != nil {
		writeValidation(w, invalid)
		return
	}
	req, invalid, err := campaigninput.DecodeJSON(campaignBody, maxBatchTasks)
	if err == nil && invalid != nil {
		writeValidation(w, asTasks(invalid))
		return
	}
	if err != nil {
		writeDetail(w, http.StatusServiceUnavailable, "The request could not be read; it is safe to retry.")
		return
	}
	res := a.createCampaignFrom(ctx, ns, req, campaignID(callid.New()))
	created, ok := res.body.(campaignview.Created)
	if !ok {
		if items, isItems := res.body.(validationDetail); isItems {
			res.body = validationDetail{Detail: asTasks(items.Detail)}
		}
		writeReply(w, res)
		return
	}
	scheduled := a.cfg.Now()
	if batch.TriggerTimestamp != nil {
		scheduled = time.UnixMilli(*batch.TriggerTimestamp)
	}
	writeJSON(w, http.StatusCreated, batchCallResponse{BatchCallID: created.CampaignID, FromNumber: batch.FromNumber,
		Name: created.Name, ScheduledTimestamp: scheduled.UnixMilli(), TotalTaskCount: created.Contacts,
		CallTimeWindow: batch.CallTimeWindow})
}

// decodeBatch reads a batch and writes it as a POST /v1/campaigns body.
// Every task must name the same agent: a campaign has one.
func decodeBatch(body []byte) (*sdkBatch, []byte, []validation.Item) {
	obj, invalid := validation.ParseObject(body)
	if invalid != nil {
		return nil, nil, invalid
	}
	var b sdkBatch
	if err := json.Unmarshal(body, &b); err != nil {
		obj.Fail("model_type", []any{"body"}, "Input has the wrong shape: "+err.Error(), nil, nil)
		return nil, nil, obj.Problems
	}
	out := map[string]any{"name": b.Name}
	contacts := make([]map[string]any, len(b.Tasks))
	tz := ""
	if b.CallTimeWindow != nil {
		tz = b.CallTimeWindow.Timezone
		out["calling_window"] = windowOf(b.CallTimeWindow, &obj.Problems)
	}
	for i, t := range b.Tasks {
		if i == 0 {
			out["agent_id"] = t.OverrideAgentID
		}
		if t.OverrideAgentID == "" || t.OverrideAgentID != out["agent_id"] {
			obj.Fail("value_error", []any{"body", "tasks", i, "override_agent_id"}, "Value error, every task "+
				"names the same override_agent_id: a Switchboard campaign calls with one agent", t.OverrideAgentID, nil)
		}
		contacts[i] = map[string]any{"to_number": t.ToNumber, "timezone": tz, "variables": t.Variables, "metadata": t.Metadata}
	}
	if len(b.Tasks) == 0 {
		obj.Fail("missing", []any{"body", "tasks"}, "Field required: at least one task", nil, nil)
	}
	out["contacts"] = contacts
	if b.TriggerTimestamp != nil {
		w, _ := out["calling_window"].(map[string]any)
		if w == nil {
			w = map[string]any{}
		}
		w["start_at"] = time.UnixMilli(*b.TriggerTimestamp).UTC().Format(time.RFC3339)
		out["calling_window"] = w
	}
	if len(obj.Problems) > 0 {
		return nil, nil, obj.Problems
	}
	raw, _ := json.Marshal(out) // maps of decoded JSON always marshal
	return &b, raw, nil
}

// windowOf is the SDK's window as a campaign's: one window a day.
func windowOf(w *sdkTimeWindow, p *validation.Problems) map[string]any {
	out := map[string]any{}
	switch {
	case len(w.Windows) > 1:
		p.Fail("too_long", []any{"body", "call_time_window", "windows"}, "List should have at most 1 item: "+
			"a Switchboard campaign has one calling window a day", len(w.Windows), nil)
	case len(w.Windows) == 1:
		out["start"], out["end"] = minutesOf(w.Windows[0].Start), minutesOf(w.Windows[0].End)
	}
	var days []string
	for _, d := range w.Day {
		days = append(days, sdkDays[d])
	}
	if len(days) > 0 {
		out["days"] = days
	}
	return out
}

func minutesOf(m int) string { return fmt.Sprintf("%02d:%02d", m/60, m%60) }

// asTasks names the SDK's field in the locations of a campaign's problems.
func asTasks(items []validation.Item) []validation.Item {
	for i := range items {
		if len(items[i].Loc) > 1 && items[i].Loc[1] == "contacts" {
			items[i].Loc[1] = "tasks"
		}
	}
	return items
}
