package dashboard

import (
	"context"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	apimeta "k8s.io/apimachinery/pkg/api/meta"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/egress"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/webhook"
	"github.com/switchboard-dev/switchboard/internal/webhook/endpoints"
)

// endpointRow is an endpoint with its health in words.
type endpointRow struct {
	ID, URL, Description string
	Events               []string
	// Health is active, degraded or disabled; Why says why when not active.
	Health, Why             string
	LastDeliveryAt          *time.Time
	LastDeliveryResult      string
	Disabled                bool
	ManagedSecret, AllKinds bool
	SubscribedTo            map[string]bool
	CreatedAt               time.Time
}

func endpointRowOf(ep *switchboardv1.WebhookEndpoint) endpointRow {
	row := endpointRow{ID: ep.ResolvedID(), URL: ep.Spec.URL, Description: ep.Spec.Description,
		Disabled: ep.Spec.Disabled, ManagedSecret: ep.Spec.SecretRef != nil, AllKinds: len(ep.Spec.Events) == 0,
		SubscribedTo: map[string]bool{}, CreatedAt: ep.CreationTimestamp.Time, Health: "active",
		LastDeliveryResult: ep.Status.LastDeliveryResult}
	for _, k := range webhook.Kinds {
		if ep.Subscribes(k) {
			row.Events = append(row.Events, k)
			row.SubscribedTo[k] = true
		}
	}
	if ep.Status.LastDeliveryAt != nil {
		row.LastDeliveryAt = &ep.Status.LastDeliveryAt.Time
	}
	degraded := apimeta.FindStatusCondition(ep.Status.Conditions, switchboardv1.DegradedCondition)
	switch {
	case ep.Spec.Disabled:
		row.Health, row.Why = "disabled", ep.Annotations[switchboardv1.WebhookDisabledReasonAnnotation]
		if row.Why == "" {
			row.Why = "disabled by your organization"
		}
	case degraded != nil && degraded.Status == "True":
		row.Health, row.Why = "degraded", degraded.Message
	}
	return row
}

func (d *dashboard) listEndpoints(w http.ResponseWriter, r *http.Request) {
	eps, err := d.cfg.Endpoints.List(r.Context(), organization(r.Context()))
	if err != nil {
		d.unavailable(w, r, err, "The webhook endpoints could not be listed")
		return
	}
	rows := make([]endpointRow, len(eps))
	for i := range eps {
		rows[i] = endpointRowOf(&eps[i])
	}
	d.render(w, r, http.StatusOK, "endpoints.html", page{Title: "Webhook endpoints", Nav: "endpoints", Data: rows})
}

type endpointFormData struct {
	Endpoint *endpointRow // nil: a new one
	Form     url.Values
	Kinds    []string
	Problems map[string]string
}

func (d *dashboard) newEndpointForm(w http.ResponseWriter, r *http.Request) {
	d.render(w, r, http.StatusOK, "endpoint-new.html", page{Title: "New webhook endpoint", Nav: "endpoints",
		Data: endpointFormData{Form: url.Values{}, Kinds: webhook.Kinds, Problems: map[string]string{}}})
}

// endpointChange reads the create/edit form. Its checkboxes say which
// kinds are received; none checked is all of them, as on the API.
func endpointChange(form url.Values) (*endpoints.Change, map[string]string) {
	c := &endpoints.Change{URL: strings.TrimSpace(form.Get("url")), URLSet: true,
		Description: strings.TrimSpace(form.Get("description")), DescriptionSet: true, EventsSet: true}
	problems := map[string]string{}
	if c.URL == "" {
		problems["url"] = "Field required"
	}
	for _, k := range form["events"] {
		if !webhook.ValidKind(k) {
			problems["events"] = "Input should be " + strings.Join(webhook.Kinds, ", ")
			continue
		}
		c.Events = append(c.Events, switchboardv1.WebhookEventType(k))
	}
	return c, problems
}

// endpointProblems places an operation's error beside the form's fields;
// ok is false when it is no refusal but a failure to show on its own.
func endpointProblems(err error) (map[string]string, bool) {
	var (
		urlRefused *egress.URLError
		refused    *endpoints.Refused
	)
	switch {
	case errors.As(err, &urlRefused):
		return map[string]string{"url": urlRefused.Reason}, true
	case errors.As(err, &refused):
		return map[string]string{"form": refused.Message}, true
	}
	return nil, false
}

func (d *dashboard) createEndpoint(w http.ResponseWriter, r *http.Request) {
	change, problems := endpointChange(r.PostForm)
	if len(problems) == 0 {
		ep, secret, err := d.cfg.Endpoints.Create(r.Context(), organization(r.Context()), change)
		if err == nil {
			d.toSecret(w, r, secretData{Endpoint: endpointRowOf(ep), Secret: secret, Created: true})
			return
		}
		var ok bool
		if problems, ok = endpointProblems(err); !ok {
			d.unavailable(w, r, err, "The webhook endpoint could not be created")
			return
		}
	}
	d.render(w, r, http.StatusUnprocessableEntity, "endpoint-new.html", page{Title: "New webhook endpoint",
		Nav: "endpoints", Error: problems["form"],
		Data: endpointFormData{Form: r.PostForm, Kinds: webhook.Kinds, Problems: problems}})
}

type secretData struct {
	Endpoint endpointRow
	// Secret is empty when it was already shown.
	Secret  string
	Created bool
	// PreviousExpiresAt is when the rotated-out secret stops signing.
	PreviousExpiresAt *time.Time
}

// toSecret hands a new secret to the page that shows it, through the
// session: a reload of that page shows it no more, and creates or rotates
// nothing again.
func (d *dashboard) toSecret(w http.ResponseWriter, r *http.Request, data secretData) {
	sessionFrom(r.Context()).flash.put(flash{endpointID: data.Endpoint.ID, secret: &data})
	seeOther(w, r, Prefix+"/endpoints/"+data.Endpoint.ID+"/secret")
}

// showSecret shows the secret just created or rotated, once.
func (d *dashboard) showSecret(w http.ResponseWriter, r *http.Request) {
	ep := endpointFrom(r.Context())
	data := secretData{Endpoint: endpointRowOf(ep)}
	if f := sessionFrom(r.Context()).flash.take(func(f *flash) bool {
		return f.endpointID == data.Endpoint.ID && f.secret != nil
	}); f != nil {
		data = *f.secret
	}
	title := "New signing secret"
	if data.Created {
		title = "Endpoint created"
	}
	d.render(w, r, http.StatusOK, "secret.html", page{Title: title, Nav: "endpoints", Data: data})
}

type endpointKey struct{}

// endpointCtx finds {endpointID} in the signed-in organization: another
// organization's endpoint is 404, as on the API.
func (d *dashboard) endpointCtx(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ep, err := d.cfg.Endpoints.Find(r.Context(), organization(r.Context()), chi.URLParam(r, "endpointID"))
		switch {
		case errors.Is(err, endpoints.ErrNotFound):
			d.problem(w, r, http.StatusNotFound, "Webhook endpoint not found.")
			return
		case err != nil:
			d.unavailable(w, r, err, "The webhook endpoint could not be read")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), endpointKey{}, ep)))
	})
}

func endpointFrom(ctx context.Context) *switchboardv1.WebhookEndpoint {
	return ctx.Value(endpointKey{}).(*switchboardv1.WebhookEndpoint)
}

type endpointData struct {
	Endpoint endpointRow
	Form     url.Values
	Kinds    []string
	Problems map[string]string
	// Test is the result of a test event just sent.
	Test *testOutcome
	// LastTest is the latest test event's attempt: test events do not
	// count toward the endpoint's health, so its status never has them.
	LastTest   *attemptRow
	Filter     url.Values
	Deliveries []deliveryRow
	Next       template.URL
	Events     []string
	Statuses   []string
}

type testOutcome struct {
	DeliveryID, Status, Meaning string
	StatusCode                  int
}

func (d *dashboard) showEndpoint(w http.ResponseWriter, r *http.Request) {
	ep := endpointFrom(r.Context())
	var data endpointData
	if f := sessionFrom(r.Context()).flash.take(func(f *flash) bool {
		return f.endpointID == ep.ResolvedID() && f.test != nil
	}); f != nil {
		data.Test = f.test
	}
	d.renderEndpoint(w, r, http.StatusOK, ep, data, "")
}

// renderEndpoint shows an endpoint: its form, actions and delivery log.
func (d *dashboard) renderEndpoint(w http.ResponseWriter, r *http.Request, status int,
	ep *switchboardv1.WebhookEndpoint, data endpointData, flash string) {
	data.Endpoint, data.Kinds = endpointRowOf(ep), webhook.Kinds
	data.Events = append([]string{webhook.EventTest}, webhook.Kinds...)
	data.Statuses = []string{string(history.DeliveryPending), string(history.DeliverySucceeded),
		string(history.DeliveryFailed)}
	if data.Form == nil {
		data.Form = url.Values{"url": {ep.Spec.URL}, "description": {ep.Spec.Description}}
		for _, k := range ep.Spec.Events {
			data.Form.Add("events", string(k))
		}
	}
	if data.Problems == nil {
		data.Problems = map[string]string{}
	}
	data.Filter = r.URL.Query()
	filter := endpoints.DeliveryFilter{Event: data.Filter.Get("event"), Status: data.Filter.Get("status"),
		Cursor: data.Filter.Get("cursor"), Limit: 25}
	items, more, err := d.cfg.Endpoints.Deliveries(r.Context(), ep, filter)
	switch {
	case errors.Is(err, endpoints.ErrUnknownCursor):
		data.Problems["cursor"] = "This page of the log no longer exists; start from the first page."
	case err != nil:
		d.unavailable(w, r, err, "The deliveries could not be listed")
		return
	}
	data.Deliveries = deliveryRows(items)
	if data.LastTest, err = d.lastTest(r.Context(), ep); err != nil {
		d.unavailable(w, r, err, "The deliveries could not be listed")
		return
	}
	if more {
		next := cloneValues(data.Filter)
		next.Set("cursor", items[len(items)-1].Spec.DeliveryID)
		data.Next = template.URL(Prefix + "/endpoints/" + ep.ResolvedID() + "?" + next.Encode()) //nolint:gosec // our own path and an encoded query
	}
	d.render(w, r, status, "endpoint.html", page{Title: "Webhook endpoint", Nav: "endpoints", Flash: flash,
		Error: data.Problems["form"], Data: data})
}

// lastTest is the latest attempt of ep's test events, nil without one.
func (d *dashboard) lastTest(ctx context.Context, ep *switchboardv1.WebhookEndpoint) (*attemptRow, error) {
	items, _, err := d.cfg.Endpoints.Deliveries(ctx, ep, endpoints.DeliveryFilter{Event: webhook.EventTest, Limit: 1})
	if err != nil || len(items) == 0 {
		return nil, err
	}
	rows := deliveryRows(items)
	if n := len(rows[0].Attempts); n > 0 {
		return &rows[0].Attempts[n-1], nil
	}
	return nil, nil
}

func (d *dashboard) updateEndpoint(w http.ResponseWriter, r *http.Request) {
	ep := endpointFrom(r.Context())
	change, problems := endpointChange(r.PostForm)
	if len(problems) == 0 {
		updated, err := d.cfg.Endpoints.Update(r.Context(), ep, change)
		if err == nil {
			d.renderEndpoint(w, r, http.StatusOK, updated, endpointData{}, "Saved.")
			return
		}
		if !d.endpointGone(w, r, err) {
			return
		}
		var ok bool
		if problems, ok = endpointProblems(err); !ok {
			d.unavailable(w, r, err, "The webhook endpoint could not be saved")
			return
		}
	}
	d.renderEndpoint(w, r, http.StatusUnprocessableEntity, ep, endpointData{Form: r.PostForm, Problems: problems}, "")
}

// endpointGone answers 404 when the endpoint was deleted meanwhile, and
// reports whether the caller should go on.
func (d *dashboard) endpointGone(w http.ResponseWriter, r *http.Request, err error) bool {
	if errors.Is(err, endpoints.ErrNotFound) {
		d.problem(w, r, http.StatusNotFound, "Webhook endpoint not found.")
		return false
	}
	return true
}

func (d *dashboard) setEndpointEnabled(w http.ResponseWriter, r *http.Request) {
	disable := r.PostFormValue("enabled") != "true"
	updated, err := d.cfg.Endpoints.Update(r.Context(), endpointFrom(r.Context()),
		&endpoints.Change{Disabled: disable, DisabledSet: true})
	if err != nil {
		if d.endpointGone(w, r, err) {
			d.unavailable(w, r, err, "The webhook endpoint could not be saved")
		}
		return
	}
	flash := "Enabled: the endpoint receives events again."
	if disable {
		flash = "Disabled: the endpoint receives no events until it is enabled."
	}
	d.renderEndpoint(w, r, http.StatusOK, updated, endpointData{}, flash)
}

// confirmation is a page that asks before a destructive form goes
// through; it works without JavaScript.
type confirmation struct {
	Question, Detail, Button string
	// Action is where the form posts; Cancel goes back.
	Action, Cancel string
}

// confirmed reports whether a destructive form was sent from its
// confirmation page, and otherwise shows that page.
func (d *dashboard) confirmed(w http.ResponseWriter, r *http.Request, c confirmation) bool {
	if r.Method == http.MethodPost && r.PostFormValue("confirm") == "yes" {
		return true
	}
	d.render(w, r, http.StatusOK, "confirm.html", page{Title: c.Question, Nav: "endpoints", Data: c})
	return false
}

func endpointPath(ep *switchboardv1.WebhookEndpoint, action string) string {
	return Prefix + "/endpoints/" + ep.ResolvedID() + action
}

func deleteConfirmation(ep *switchboardv1.WebhookEndpoint) confirmation {
	return confirmation{Question: "Delete this endpoint?", Button: "Delete the endpoint",
		Detail: ep.Spec.URL + " receives no more events, and its delivery log is no longer shown here. This cannot be undone.",
		Action: endpointPath(ep, "/delete"), Cancel: endpointPath(ep, "")}
}

func rotateConfirmation(ep *switchboardv1.WebhookEndpoint) confirmation {
	return confirmation{Question: "Rotate the signing secret?", Button: "Rotate the secret",
		Detail: "A new secret is shown once. The current one keeps signing for a while, so that " + ep.Spec.URL +
			" can switch; after that, events are signed with the new secret only.",
		Action: endpointPath(ep, "/rotate-secret"), Cancel: endpointPath(ep, "")}
}

func (d *dashboard) confirmDelete(w http.ResponseWriter, r *http.Request) {
	d.confirmed(w, r, deleteConfirmation(endpointFrom(r.Context())))
}

func (d *dashboard) confirmRotate(w http.ResponseWriter, r *http.Request) {
	d.confirmed(w, r, rotateConfirmation(endpointFrom(r.Context())))
}

func (d *dashboard) deleteEndpoint(w http.ResponseWriter, r *http.Request) {
	if !d.confirmed(w, r, deleteConfirmation(endpointFrom(r.Context()))) {
		return
	}
	err := d.cfg.Endpoints.Delete(r.Context(), endpointFrom(r.Context()))
	if err != nil {
		if d.endpointGone(w, r, err) {
			d.unavailable(w, r, err, "The webhook endpoint could not be deleted")
		}
		return
	}
	seeOther(w, r, Prefix+"/endpoints")
}

// rotateSecret shows the new secret once; the old one keeps signing for a
// while, so that receivers can switch.
func (d *dashboard) rotateSecret(w http.ResponseWriter, r *http.Request) {
	ep := endpointFrom(r.Context())
	if !d.confirmed(w, r, rotateConfirmation(ep)) {
		return
	}
	rotated, err := d.cfg.Endpoints.Rotate(r.Context(), ep)
	if err != nil {
		if !d.endpointGone(w, r, err) {
			return
		}
		if problems, ok := endpointProblems(err); ok {
			d.renderEndpoint(w, r, http.StatusConflict, ep, endpointData{Problems: problems}, "")
			return
		}
		d.unavailable(w, r, err, "The signing secret could not be rotated")
		return
	}
	data := secretData{Endpoint: endpointRowOf(rotated.Endpoint), Secret: rotated.Secret}
	if rotated.HasPrevious {
		data.PreviousExpiresAt = &rotated.PreviousExpiresAt
	}
	d.toSecret(w, r, data)
}

// testEndpoint sends a test event and says what the receiver's answer
// means.
func (d *dashboard) testEndpoint(w http.ResponseWriter, r *http.Request) {
	ep := endpointFrom(r.Context())
	kind := r.PostFormValue("event")
	if !webhook.ValidCallKind(kind) {
		kind = webhook.EventCallEnded
	}
	tested, err := d.cfg.Endpoints.Test(r.Context(), ep, kind)
	if err != nil {
		if !d.endpointGone(w, r, err) {
			return
		}
		if problems, ok := endpointProblems(err); ok {
			d.renderEndpoint(w, r, http.StatusUnprocessableEntity, ep, endpointData{Problems: problems}, "")
			return
		}
		d.unavailable(w, r, err, "The test event could not be sent")
		return
	}
	outcome := &testOutcome{DeliveryID: tested.DeliveryID, Status: "failed", StatusCode: tested.Result.StatusCode,
		Meaning: testInterpretation(tested.Result)}
	if tested.Result.Succeeded() {
		outcome.Status = "succeeded"
	}
	// The result is shown by the endpoint's page, so that reloading it
	// sends no second test.
	sessionFrom(r.Context()).flash.put(flash{endpointID: ep.ResolvedID(), test: outcome})
	seeOther(w, r, endpointPath(ep, "#test-result"))
}

// retryDelivery asks for one more attempt, then goes back to the page the
// button was on (the endpoint's log or the call).
func (d *dashboard) retryDelivery(w http.ResponseWriter, r *http.Request) {
	ep := endpointFrom(r.Context())
	_, err := d.cfg.Endpoints.Retry(r.Context(), ep, chi.URLParam(r, "deliveryID"))
	var refused *endpoints.Refused
	switch {
	case errors.Is(err, endpoints.ErrDeliveryNotFound):
		d.problem(w, r, http.StatusNotFound, "Delivery not found.")
		return
	case errors.As(err, &refused):
		d.problem(w, r, http.StatusConflict, refused.Message)
		return
	case err != nil:
		d.unavailable(w, r, err, "The retry could not be requested")
		return
	}
	back, ok := dashboardPath(r.PostFormValue("back"))
	if !ok {
		back = Prefix + "/endpoints/" + ep.ResolvedID()
	}
	seeOther(w, r, back)
}

// deliveryRow is one delivery of the log, with its attempts.
type deliveryRow struct {
	ID, EndpointID, Event, CallID, Status, LastError string
	// Endpoint is where the delivery went; nil when the endpoint is gone
	// (or the page does not say, as an endpoint's own page).
	Endpoint       *endpointRow
	LastStatusCode int32
	AttemptCount   int32
	CreatedAt      time.Time
	NextAttemptAt  *time.Time
	Attempts       []attemptRow
	// Test: a test event's, whose call id names no call.
	Test bool
	// Retryable: a retry can be asked for. A delivery that succeeded is
	// not offered one: the button would read as "this went wrong".
	Retryable bool
}

type attemptRow struct {
	At                       time.Time
	StatusCode               int32
	Error, Trigger, Response string
	DurationMS               int64
}

func deliveryRows(ds []history.Delivery) []deliveryRow {
	rows := make([]deliveryRow, 0, len(ds))
	for i := range ds {
		dl := &ds[i]
		row := deliveryRow{ID: dl.Spec.DeliveryID, EndpointID: dl.Spec.EndpointID, Event: dl.Spec.Event,
			CallID: dl.Spec.CallID, Status: string(dl.CurrentPhase()), LastError: dl.Status.LastError,
			LastStatusCode: dl.Status.LastStatusCode, AttemptCount: dl.Status.AttemptCount,
			CreatedAt: dl.CreationTimestamp.Time}
		row.Test = dl.Spec.Event == webhook.EventTest
		row.Retryable = !row.Test && endpoints.ValidID(row.EndpointID) && dl.CurrentPhase() != history.DeliverySucceeded
		if dl.Status.NextAttemptAt != nil {
			row.NextAttemptAt = &dl.Status.NextAttemptAt.Time
		}
		for _, a := range dl.Status.Attempts {
			row.Attempts = append(row.Attempts, attemptRow{At: a.AttemptedAt.Time, StatusCode: a.StatusCode,
				Error: a.Error, Trigger: a.Trigger, Response: a.Response, DurationMS: a.DurationMS})
		}
		rows = append(rows, row)
	}
	return rows
}

// withEndpoints names, on each row, the endpoint it went to (a call's
// deliveries go to every subscribed endpoint of the organization).
func withEndpoints(rows []deliveryRow, eps []switchboardv1.WebhookEndpoint) []deliveryRow {
	byID := make(map[string]*endpointRow, len(eps))
	for i := range eps {
		row := endpointRowOf(&eps[i])
		byID[row.ID] = &row
	}
	for i := range rows {
		rows[i].Endpoint = byID[rows[i].EndpointID]
	}
	return rows
}
