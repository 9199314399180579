package httpapi

// Webhook endpoints and their delivery log (api/README.md, "Webhook-endpoint API"). An
// endpoint is a WebhookEndpoint resource in the caller's organization; the
// REST id is ResolvedID() (we_ + the UID's hex), so endpoints applied as
// YAML show up here too. Every response is JSON; every route needs the API
// key (401 {"detail": "..."} otherwise). Request bodies are limited to 64
// KiB (413 {"detail": "..."}) and unknown body fields are ignored. An endpoint of
// another organization, or an id that is not we_ + 32 hex, is 404.
//
// Endpoint object: id, url, events (the kinds received, in lifecycle order;
// all three when spec.events is empty), description, disabled,
// disabled_reason (why Switchboard disabled it, else null), status
// (disabled | degraded: deliveries are failing | active),
// last_delivery_at, last_delivery_result ("200", "timed out after 10s"),
// created_at. Delivery object: id, endpoint_id, event (a kind or "test"),
// call_id, status (pending | succeeded | failed), attempt_count,
// next_attempt_at, last_status_code, last_error, created_at, completed_at,
// retry_requested_at, attempts [{attempted_at, status_code, error,
// duration_ms, response, trigger: scheduled | manual | test}].
//
// POST /v1/webhook-endpoints {url, events?, description?, disabled?}
//   201 endpoint + "secret" (whsec_...; shown again only by rotate-secret)
//   422 validation array: loc ["body", field]; types missing, string_type,
//       list_type, enum, value_error (an event listed twice), bool_type,
//       string_too_long (url 2048, description 512), json_invalid,
//       model_attributes_type, duplicate_key, url_not_allowed (msg says why:
//       not https, not public, ...; checked once the rest of the body is
//       valid, as it may resolve the host)
//   503 {"detail": "...; it is safe to retry."} the cluster did not answer
// GET /v1/webhook-endpoints?limit=&cursor=
//   200 {"data": [endpoint...], "has_more", "next_cursor"} oldest first
//   422 validation array: loc ["query","limit"] (int_parsing,
//       greater_than_equal, less_than_equal; 1..100, default 20),
//       ["query","cursor"] (string_pattern_mismatch; value_error when the
//       cursor is not in the list)
// GET /v1/webhook-endpoints/{id}
//   200 endpoint; 404 {"detail": "Webhook endpoint not found."}
// PATCH /v1/webhook-endpoints/{id} {url?, events?, description?, disabled?}
//   200 endpoint; null resets events (the call events) and description ("");
//   disabled:false also clears the switchboard.dev/disabled-reason
//   annotation. 404; 422 as on create (a null url is string_type, a null
//   disabled bool_type); 503.
// DELETE /v1/webhook-endpoints/{id}
//   204 no body (the generated signing Secret goes with it); 404; 503
// POST /v1/webhook-endpoints/{id}/rotate-secret
//   200 endpoint + "secret" + "previous_secret_expires_at" (the old secret
//       keeps signing until then; null when there was none)
//   404; 409 {"detail": {"error", "error_code": "secret_missing"}}; 503
// POST /v1/webhook-endpoints/{id}/test {event?} (default call.ended)
//   200 {"delivery_id", "status": "succeeded"|"failed", "status_code":
//       int|null, "error": string|null} after one attempt, never retried;
//       recorded in the delivery log as event "test". Disabled endpoints
//       can be tested too (before re-enabling them, say).
//   404; 409 secret_missing; 422 validation array (loc ["body","event"],
//       enum); 422 {"detail": {"error", "error_code": "url_not_allowed"}}
//       when the endpoint's URL is refused (nothing is sent or recorded);
//       503
// GET /v1/webhook-endpoints/{id}/deliveries?status=&event=&limit=&cursor=
//   200 {"data": [delivery...], "has_more", "next_cursor"} newest first
//   404; 422 validation array: ["query","status"] and ["query","event"]
//       enum, limit and cursor as above
// GET /v1/webhook-endpoints/{id}/deliveries/{delivery_id}
//   200 delivery; 404 {"detail": "Webhook endpoint not found."} or
//   {"detail": "Delivery not found."}
// POST /v1/webhook-endpoints/{id}/deliveries/{delivery_id}/retry
//   202 delivery with retry_requested_at set: one more attempt is made
//       now, on top of the retry schedule
//   404; 409 {"detail": {"error", "error_code": "test_not_retried"}}; 503
// (POST .../test answers 429 delivery_concurrency_limit_reached with
// Retry-After when the endpoint or its organization has as many attempts
// in flight as it may; nothing is sent or recorded.)

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/egress"
	"github.com/switchboard-dev/switchboard/internal/quota"
	"github.com/switchboard-dev/switchboard/internal/validation"
	"github.com/switchboard-dev/switchboard/internal/webhook/endpoints"
)

// The API writes endpoints, their generated Secrets and test deliveries,
// and asks for retries.
// +kubebuilder:rbac:groups=switchboard.dev,resources=webhookendpoints,verbs=get;list;watch;create;update;delete
// Signing Secrets: organization namespaces only (config/rbac/organization_role.yaml).

// Error codes of the webhook-endpoint API.
const (
	CodeURLNotAllowed = "url_not_allowed"
	CodeSecretMissing = endpoints.CodeSecretMissing
	// CodeSecretManaged refuses to rotate a Secret declared in the cluster.
	CodeSecretManaged  = endpoints.CodeSecretManaged
	CodeTestNotRetried = endpoints.CodeTestNotRetried
	// CodeDeliveryConcurrencyLimit: a test send over the bound on webhook
	// attempts in flight of its endpoint or organization (429).
	CodeDeliveryConcurrencyLimit = endpoints.CodeDeliveryConcurrencyLimit
)

const (
	endpointNotFound = "Webhook endpoint not found."
	deliveryNotFound = "Delivery not found."
)

// EndpointIDPattern is what an endpoint id looks like.
const EndpointIDPattern = endpoints.IDPattern

func validEndpointID(id string) bool { return endpoints.ValidID(id) }

// codeDetail is the `detail` object of the webhook-endpoint API's errors.
type codeDetail struct {
	Error     string `json:"error"`
	ErrorCode string `json:"error_code"`
}

func writeCodeDetail(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, struct {
		Detail codeDetail `json:"detail"`
	}{codeDetail{Error: msg, ErrorCode: code}})
}

// webhookRoutes mounts the endpoint routes; every {endpointID} route finds
// its endpoint first (endpointCtx).
func (a *api) webhookRoutes(r chi.Router) {
	r.Get("/", a.listEndpoints)
	r.Post("/", a.createEndpoint)
	r.Route("/{endpointID}", func(r chi.Router) {
		r.Use(a.endpointCtx)
		r.Get("/", a.getEndpoint)
		r.Patch("/", a.updateEndpoint)
		r.Delete("/", a.deleteEndpoint)
		r.Post("/rotate-secret", a.rotateSecret)
		r.Post("/test", a.testEndpoint)
		r.Get("/deliveries", a.listDeliveries)
		r.Get("/deliveries/{deliveryID}", a.getDelivery)
		r.Post("/deliveries/{deliveryID}/retry", a.retryDelivery)
	})
}

type endpointKey struct{}

// endpointCtx resolves {endpointID} in the caller's organization and puts
// the endpoint in the request context, or answers 404/503 itself.
func (a *api) endpointCtx(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ep, err := a.cfg.Endpoints.Find(r.Context(), organization(r.Context()), chi.URLParam(r, "endpointID"))
		if err != nil {
			a.endpointFailed(w, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), endpointKey{}, ep)))
	})
}

func endpointFrom(ctx context.Context) *switchboardv1.WebhookEndpoint {
	return ctx.Value(endpointKey{}).(*switchboardv1.WebhookEndpoint)
}

// endpointFailed answers an endpoint operation's error: 404, 409 or 422
// for a refusal, 422 for a URL the policy refuses, 503 otherwise.
func (a *api) endpointFailed(w http.ResponseWriter, err error) {
	var (
		refused     *endpoints.Refused
		urlRefused  *egress.URLError
		unavailable *endpoints.Unavailable
	)
	switch {
	case errors.Is(err, endpoints.ErrNotFound):
		writeDetail(w, http.StatusNotFound, endpointNotFound)
	case errors.Is(err, endpoints.ErrDeliveryNotFound):
		writeDetail(w, http.StatusNotFound, deliveryNotFound)
	case errors.As(err, &refused):
		status := http.StatusConflict
		switch {
		case refused.Code == quota.CodeEndpointLimit:
			status = http.StatusUnprocessableEntity
		case refused.RetryAfter > 0:
			status = http.StatusTooManyRequests
			w.Header().Set("Retry-After", retryAfterSeconds(refused.RetryAfter))
		}
		writeCodeDetail(w, status, refused.Code, refused.Message)
	case errors.As(err, &urlRefused):
		writeCodeDetail(w, http.StatusUnprocessableEntity, CodeURLNotAllowed, urlRefused.Reason)
	case errors.As(err, &unavailable) && apierrors.IsInvalid(unavailable.Err):
		writeValidation(w, invalidItems(unavailable.Err))
	case errors.As(err, &unavailable):
		a.cfg.Log.Error(unavailable.Err, unavailable.What)
		writeDetail(w, http.StatusServiceUnavailable, unavailable.What+"; it is safe to retry.")
	default:
		a.cfg.Log.Error(err, "webhook endpoint")
		writeDetail(w, http.StatusServiceUnavailable, "The webhook endpoint could not be read; it is safe to retry.")
	}
}

// unavailable answers 503 for a failed read or write of the cluster.
func (a *api) unavailable(w http.ResponseWriter, err error, logMsg, what string) {
	a.cfg.Log.Error(err, logMsg)
	writeDetail(w, http.StatusServiceUnavailable, what+"; it is safe to retry.")
}

// invalidItems is the validation array of an endpoint the API server found
// invalid (its CRD rules).
func invalidItems(err error) []validation.Item {
	var items []validation.Item
	if st := apierrors.APIStatus(nil); errors.As(err, &st) && st.Status().Details != nil {
		for _, c := range st.Status().Details.Causes {
			items = append(items, validation.Item{Type: "value_error",
				Loc: []any{"body", strings.TrimPrefix(c.Field, "spec.")}, Msg: "Value error, " + c.Message})
		}
	}
	if len(items) == 0 {
		items = []validation.Item{{Type: "value_error", Loc: []any{"body"}, Msg: "Value error, " + err.Error()}}
	}
	return items
}

// savedEndpoint answers a create or update: a URL the policy refuses is a
// validation item on body.url, as the body's other problems are.
func (a *api) savedEndpointFailed(w http.ResponseWriter, req *endpointRequest, err error) {
	var refused *egress.URLError
	if errors.As(err, &refused) {
		writeValidation(w, []validation.Item{{Type: CodeURLNotAllowed, Loc: []any{"body", "url"},
			Msg: refused.Reason, Input: req.URL}})
		return
	}
	a.endpointFailed(w, err)
}

// readEndpointBody reads and decodes a create or update body, answering
// 413 or 422 itself.
func readEndpointBody(w http.ResponseWriter, r *http.Request, create bool) (*endpointRequest, bool) {
	body, ok := readBody(w, r)
	if !ok {
		return nil, false
	}
	req, invalid := decodeEndpoint(body, create)
	if invalid != nil {
		writeValidation(w, invalid)
		return nil, false
	}
	return req, true
}

func (a *api) createEndpoint(w http.ResponseWriter, r *http.Request) {
	req, ok := readEndpointBody(w, r, true)
	if !ok {
		return
	}
	ep, secret, err := a.cfg.Endpoints.Create(r.Context(), organization(r.Context()), req)
	if err != nil {
		a.savedEndpointFailed(w, req, err)
		return
	}
	w.Header().Set("Location", "/v1/webhook-endpoints/"+ep.ResolvedID())
	writeJSON(w, http.StatusCreated, createdEndpoint{endpointView: renderEndpoint(ep), Secret: secret})
}

func (a *api) listEndpoints(w http.ResponseWriter, r *http.Request) {
	page, invalid := decodePage(r.URL.Query(), validEndpointID, EndpointIDPattern)
	if invalid != nil {
		writeValidation(w, invalid)
		return
	}
	items, hasMore, err := a.cfg.Endpoints.Page(r.Context(), organization(r.Context()), page.Cursor, page.Limit)
	switch {
	case errors.Is(err, endpoints.ErrUnknownCursor):
		writeValidation(w, []validation.Item{unknownCursor(page.Cursor)})
		return
	case err != nil:
		a.endpointFailed(w, err)
		return
	}
	out := endpointPage{Data: make([]endpointView, len(items)), HasMore: hasMore}
	for i := range items {
		out.Data[i] = renderEndpoint(&items[i])
	}
	if hasMore {
		out.NextCursor = ptr(items[len(items)-1].ResolvedID())
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *api) getEndpoint(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, renderEndpoint(endpointFrom(r.Context())))
}

func (a *api) updateEndpoint(w http.ResponseWriter, r *http.Request) {
	req, ok := readEndpointBody(w, r, false)
	if !ok {
		return
	}
	updated, err := a.cfg.Endpoints.Update(r.Context(), endpointFrom(r.Context()), req)
	if err != nil {
		a.savedEndpointFailed(w, req, err)
		return
	}
	writeJSON(w, http.StatusOK, renderEndpoint(updated))
}

func (a *api) deleteEndpoint(w http.ResponseWriter, r *http.Request) {
	if err := a.cfg.Endpoints.Delete(r.Context(), endpointFrom(r.Context())); err != nil {
		a.endpointFailed(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *api) rotateSecret(w http.ResponseWriter, r *http.Request) {
	rotated, err := a.cfg.Endpoints.Rotate(r.Context(), endpointFrom(r.Context()))
	if err != nil {
		a.endpointFailed(w, err)
		return
	}
	writeJSON(w, http.StatusOK, rotatedEndpoint{endpointView: renderEndpoint(rotated.Endpoint), Secret: rotated.Secret,
		PreviousSecretExpiresAt: previousExpiry(rotated.PreviousExpiresAt, rotated.HasPrevious)})
}

// testEndpoint sends one sample event of the requested kind and
// answers the receiver's response.
func (a *api) testEndpoint(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	kind, invalid := decodeTestEvent(body)
	if invalid != nil {
		writeValidation(w, invalid)
		return
	}
	tested, err := a.cfg.Endpoints.Test(r.Context(), endpointFrom(r.Context()), kind)
	if err != nil {
		a.endpointFailed(w, err)
		return
	}
	writeJSON(w, http.StatusOK, renderTestResult(tested.DeliveryID, tested.Result))
}

func (a *api) listDeliveries(w http.ResponseWriter, r *http.Request) {
	ep := endpointFrom(r.Context())
	q, invalid := decodeDeliveryQuery(r.URL.Query())
	if invalid != nil {
		writeValidation(w, invalid)
		return
	}
	items, hasMore, err := a.cfg.Endpoints.Deliveries(r.Context(), ep,
		endpoints.DeliveryFilter{Event: q.Event, Status: q.Status, Cursor: q.Cursor, Limit: q.Limit})
	switch {
	case errors.Is(err, endpoints.ErrUnknownCursor):
		writeValidation(w, []validation.Item{unknownCursor(q.Cursor)})
		return
	case err != nil:
		a.endpointFailed(w, err)
		return
	}
	out := deliveryPage{Data: make([]deliveryView, len(items)), HasMore: hasMore}
	for i := range items {
		out.Data[i] = renderDelivery(&items[i], ep.ResolvedID())
	}
	if hasMore {
		out.NextCursor = ptr(items[len(items)-1].Spec.DeliveryID)
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *api) getDelivery(w http.ResponseWriter, r *http.Request) {
	ep := endpointFrom(r.Context())
	d, err := a.cfg.Endpoints.Delivery(r.Context(), ep, chi.URLParam(r, "deliveryID"))
	if err != nil {
		a.endpointFailed(w, err)
		return
	}
	writeJSON(w, http.StatusOK, renderDelivery(d, ep.ResolvedID()))
}

// retryDelivery asks the delivery worker for one more attempt now; it
// does not use up the retry schedule.
func (a *api) retryDelivery(w http.ResponseWriter, r *http.Request) {
	ep := endpointFrom(r.Context())
	d, err := a.cfg.Endpoints.Retry(r.Context(), ep, chi.URLParam(r, "deliveryID"))
	if err != nil {
		a.endpointFailed(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, renderDelivery(d, ep.ResolvedID()))
}
