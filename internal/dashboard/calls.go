package dashboard

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/callid"
	"github.com/switchboard-dev/switchboard/internal/callinput"
	"github.com/switchboard-dev/switchboard/internal/calls"
	"github.com/switchboard-dev/switchboard/internal/callview"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/validation"
)

// callsPageSize is how many calls a page of the list shows.
const callsPageSize = 50

// callRow is one line of the calls list.
type callRow struct {
	ID, Status, Disposition, AgentID, ToNumber, Source string
	// AgentName is empty for an agent no longer declared.
	AgentName string
	// ErrorCode says why a failed call failed.
	ErrorCode string
	CreatedAt time.Time
	// DurationMS is nil until the call ends.
	DurationMS *int64
}

type callsData struct {
	Filter   url.Values
	Problems map[string]string
	Rows     []callRow
	// Next is the link to the next page, empty on the last.
	Next template.URL
	// Live: the first page refreshes itself, so new calls and status
	// changes appear.
	Live         bool
	Self         string
	Agents       []agentChoice
	Statuses     []string
	Dispositions []string
	Sources      []string
}

// listCalls is the calls page: GET /v1/calls's query and list, newest
// first, live and archived calls together.
func (d *dashboard) listCalls(w http.ResponseWriter, r *http.Request) {
	filter := r.URL.Query()
	q, problems := d.callQuery(filter)
	data := callsData{Filter: filter, Problems: problems, Live: filter.Get("cursor") == "", Self: r.URL.RequestURI(),
		Statuses: calls.Statuses, Dispositions: calls.Dispositions, Sources: calls.Sources}
	agents, err := d.agents(r.Context())
	if err != nil {
		d.unavailable(w, r, err, "The agents could not be listed")
		return
	}
	data.Agents = agents
	if len(problems) == 0 {
		page, err := d.cfg.Calls.List(r.Context(), organization(r.Context()), q)
		if err != nil {
			d.unavailable(w, r, err, "The calls could not be listed")
			return
		}
		data.Rows = callRows(page.Calls, agentNames(agents))
		if page.More {
			next := cloneValues(filter)
			next.Set("cursor", calls.EncodeCursor(history.KeyOf(&page.Calls[len(page.Calls)-1])))
			data.Next = template.URL(Prefix + "/calls?" + next.Encode()) //nolint:gosec // our own path and an encoded query
		}
	}
	d.render(w, r, http.StatusOK, "calls.html", page{Title: "Calls", Nav: "calls", Data: data})
}

// callQuery decodes the filter form as GET /v1/calls decodes its query;
// problems are keyed by field. The form's time fields (datetime-local)
// are read as UTC.
func (d *dashboard) callQuery(filter url.Values) (history.CallQuery, map[string]string) {
	v := url.Values{"limit": {"50"}}
	for _, field := range []string{"status", "disposition", "agent_id", "to_number", "source", "cursor"} {
		if s := strings.TrimSpace(filter.Get(field)); s != "" {
			v.Set(field, s)
		}
	}
	for _, field := range []string{"created_after", "created_before"} {
		if s := strings.TrimSpace(filter.Get(field)); s != "" {
			v.Set(field, localToRFC3339(s))
		}
	}
	q, invalid := callinput.DecodeQuery(v, d.cfg.DefaultRegion)
	q.Limit = callsPageSize
	q.Campaign = strings.TrimSpace(filter.Get("campaign")) // the campaign page's link to its calls
	return q, problemsByField(invalid)
}

// localToRFC3339 reads a datetime-local value ("2026-01-31T09:00") as UTC.
func localToRFC3339(s string) string {
	if t, err := time.Parse("2006-01-02T15:04", s); err == nil {
		return t.UTC().Format(time.RFC3339)
	}
	return s
}

// problemsByField keys validation messages by the field they are about
// (the second element of loc, as in ["body", "to_number"]).
func problemsByField(items []validation.Item) map[string]string {
	out := map[string]string{}
	for _, item := range items {
		field := "form"
		if len(item.Loc) > 1 {
			if s, ok := item.Loc[1].(string); ok {
				field = s
			}
		}
		if out[field] == "" {
			out[field] = validation.Redact(item.Msg)
		}
	}
	return out
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

func callRows(cs []switchboardv1.Call, agents map[string]string) []callRow {
	rows := make([]callRow, 0, len(cs))
	for i := range cs {
		c := &cs[i]
		row := callRow{ID: callid.Of(c), Status: string(c.CurrentPhase()), Disposition: string(c.Status.Disposition),
			AgentID: c.Spec.AgentID, AgentName: agents[c.Spec.AgentID], ToNumber: c.Spec.ToNumber,
			Source: string(c.Spec.Source), CreatedAt: history.KeyOf(c).CreatedAt, DurationMS: c.Status.DurationMS}
		if f := failureOf(c); f != nil {
			row.ErrorCode = f.ErrorCode
		}
		rows = append(rows, row)
	}
	return rows
}

// failureOf is why a failed call failed: its status says so once the
// operator has seen it; a call the REST API refused says so from the start.
func failureOf(c *switchboardv1.Call) *switchboardv1.CallFailure {
	if c.Status.Failure != nil {
		return c.Status.Failure
	}
	return c.Refusal()
}

// callData is the call page.
type callData struct {
	View      callview.Call
	Call      *switchboardv1.Call
	Timeline  []step
	Variables string
	Metadata  string
	Extracted []extracted
	// Transcript is the conversation, from the history store; empty
	// until a connected call has ended.
	Transcript []line
	Failure    *switchboardv1.CallFailure
	// AgentName is empty for an agent no longer declared.
	AgentName string
	// Live: the call is not settled yet, so the page refreshes itself.
	Live       bool
	Stoppable  bool
	Deliveries []deliveryRow
	Self       string
}

type step struct {
	Name string
	At   *time.Time
}

type extracted struct{ Name, Value string }

// line is an utterance of the transcript as the call page shows it. Seek
// is its start in the recording, in seconds, for the player ("" when the
// carrier could not place it).
type line struct {
	callview.Utterance
	Speaker, Seek, At string
	// Tool: a conversation's tool call or its answer, shown apart from
	// what was said.
	Tool bool
}

func (d *dashboard) showCall(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "callID")
	if !callid.Valid(id) {
		d.problem(w, r, http.StatusNotFound, "Call not found.")
		return
	}
	call, err := d.cfg.Calls.Get(r.Context(), organization(r.Context()), id)
	switch {
	case errors.Is(err, calls.ErrNotFound):
		d.problem(w, r, http.StatusNotFound, "Call not found.")
		return
	case err != nil:
		d.unavailable(w, r, err, "The call could not be read")
		return
	}
	d.renderCall(w, r, call, "")
}

func (d *dashboard) renderCall(w http.ResponseWriter, r *http.Request, call *switchboardv1.Call, flash string) {
	ctx := r.Context()
	// The same call object GET /v1/calls/{id} answers, with a fresh link.
	view, err := callview.Render(ctx, call, d.cfg.Recordings)
	if err != nil {
		d.unavailable(w, r, err, "The call could not be read")
		return
	}
	ds, err := d.cfg.Endpoints.CallDeliveries(ctx, call.Namespace, call.Name, 100)
	if err != nil {
		d.unavailable(w, r, err, "The call's deliveries could not be listed")
		return
	}
	agents, err := d.agents(ctx)
	if err != nil {
		d.unavailable(w, r, err, "The agents could not be listed")
		return
	}
	eps, err := d.cfg.Endpoints.List(ctx, call.Namespace)
	if err != nil {
		d.unavailable(w, r, err, "The webhook endpoints could not be listed")
		return
	}
	data := callData{View: view, Call: call, Timeline: timeline(call), Variables: pretty(view.Variables),
		Metadata: pretty(view.Metadata), Live: !settled(call, d.cfg.Now()), Stoppable: !call.CurrentPhase().Final(),
		Deliveries: withEndpoints(deliveryRows(ds), eps), Self: Prefix + "/calls/" + view.CallID, Failure: failureOf(call),
		AgentName: agentNames(agents)[call.Spec.AgentID]}
	if data.Transcript, err = d.transcript(ctx, call.Namespace, view.CallID); err != nil {
		d.unavailable(w, r, err, "The call's transcript could not be read")
		return
	}
	if a := view.Analysis; a != nil {
		for name, raw := range a.ExtractedData {
			data.Extracted = append(data.Extracted, extracted{Name: name, Value: pretty(raw)})
		}
		sortExtracted(data.Extracted)
	}
	d.render(w, r, http.StatusOK, "call.html", page{Title: "Call " + view.CallID, Nav: "calls", Flash: flash, Data: data})
}

// transcript reads the call's transcript, if it has one.
func (d *dashboard) transcript(ctx context.Context, namespace, id string) ([]line, error) {
	t, err := d.cfg.Calls.Transcript(ctx, namespace, id)
	switch {
	case errors.Is(err, calls.ErrNoTranscript):
		return nil, nil
	case err != nil:
		return nil, err
	}
	speakers := map[string]string{callview.RoleAgent: "Agent", callview.RoleUser: "Callee", callview.RoleDTMF: "Callee (keys)"}
	var lines []line
	for _, u := range callview.RenderTranscript(id, t.Turns).Utterances {
		l := line{Utterance: u, Speaker: speakers[u.Role]}
		switch u.Role { // a conversation's tool call: what was asked, what came back
		case callview.RoleToolCallInvocation:
			l.Speaker, l.Tool = "Tool call", true
			l.Content = strings.TrimSpace("Called " + u.Name + " " + u.Arguments)
		case callview.RoleToolCallResult:
			l.Speaker, l.Tool = "Tool result", true
			l.Content = cmp.Or(u.Name, "The tool") + " answered: " + u.Content
			if u.Successful != nil && !*u.Successful {
				l.Content = cmp.Or(u.Name, "The tool") + " failed: " + u.Content
			}
		}
		if u.Start != nil {
			l.Seek = strconv.FormatFloat(*u.Start, 'f', 3, 64)
			minutes := int(*u.Start) / 60
			l.At = fmt.Sprintf("%d:%04.1f", minutes, *u.Start-float64(60*minutes))
		}
		lines = append(lines, l)
	}
	return lines, nil
}

// settled: nothing more will happen to the call. An answered call is
// analyzed shortly after it ends; give that two minutes.
func settled(c *switchboardv1.Call, now time.Time) bool {
	if !c.CurrentPhase().Final() {
		return false
	}
	if c.Status.Analysis != nil || c.Status.Disposition != switchboardv1.DispositionAnswered || c.Status.EndedAt == nil {
		return true
	}
	return now.Sub(c.Status.EndedAt.Time) > 2*time.Minute
}

func timeline(c *switchboardv1.Call) []step {
	created := history.KeyOf(c).CreatedAt
	steps := []step{{Name: "Created", At: &created}}
	add := func(name string, t *time.Time) { steps = append(steps, step{Name: name, At: t}) }
	add("Dialed", microTime(c.Status.StartedAt))
	add("Answered", answeredAt(c))
	add("Ended", microTime(c.Status.EndedAt))
	var analyzed *time.Time
	if a := c.Status.Analysis; a != nil && a.AnalyzedAt != nil {
		analyzed = &a.AnalyzedAt.Time
	}
	add("Analyzed", analyzed)
	return steps
}

// answeredAt is when the call was answered: recorded for SIP calls, and
// otherwise the end less the talk time (the duration runs from the answer).
func answeredAt(c *switchboardv1.Call) *time.Time {
	if t := microTime(c.Status.AnsweredAt); t != nil {
		return t
	}
	answered := c.Status.Disposition == switchboardv1.DispositionAnswered ||
		c.Status.Disposition == switchboardv1.DispositionAnsweringMachine
	if !answered || c.Status.EndedAt == nil || c.Status.DurationMS == nil {
		return nil
	}
	t := c.Status.EndedAt.Add(-time.Duration(*c.Status.DurationMS) * time.Millisecond)
	return &t
}

func pretty(raw json.RawMessage) string {
	var buf bytes.Buffer
	if len(raw) == 0 || json.Indent(&buf, raw, "", "  ") != nil {
		return string(raw)
	}
	return buf.String()
}

// stopCall stops a live call (POST /v1/calls/{id}/stop's operation).
func (d *dashboard) stopCall(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "callID")
	if !callid.Valid(id) {
		d.problem(w, r, http.StatusNotFound, "Call not found.")
		return
	}
	call, err := d.cfg.Stopper.Stop(r.Context(), organization(r.Context()), id)
	switch {
	case errors.Is(err, calls.ErrNotFound):
		d.problem(w, r, http.StatusNotFound, "Call not found.")
	case errors.Is(err, calls.ErrNotActive):
		seeOther(w, r, Prefix+"/calls/"+id)
	case err != nil:
		d.unavailable(w, r, err, "The call could not be stopped")
	default:
		d.renderCall(w, r, call, "The call is stopping; it ends within moments.")
	}
}
