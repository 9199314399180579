package httpapi

// Webhook endpoints and their delivery log (spec 4.4 and 4.5). An
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
//   200 endpoint; null resets events (all kinds) and description ("");
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
//       429 {"detail": {"error", "error_code":
//       "delivery_concurrency_limit_reached"}} with Retry-After when the
//       endpoint or its organization has as many attempts in flight as it
//       may (test sends and scheduled deliveries alike; nothing is sent or
//       recorded); 503
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

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/deliveries"
	"github.com/switchboard-dev/switchboard/internal/directory"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/quota"
	"github.com/switchboard-dev/switchboard/internal/webhook"
)

// The API writes endpoints, their generated Secrets and test deliveries,
// and asks for retries.
// +kubebuilder:rbac:groups=switchboard.dev,resources=webhookendpoints,verbs=get;list;watch;create;update;delete
// Signing Secrets: organization namespaces only (config/rbac/organization_role.yaml).

// Error codes of the webhook-endpoint API.
const (
	CodeURLNotAllowed = "url_not_allowed"
	CodeSecretMissing = "secret_missing"
	// CodeSecretManaged refuses to rotate a Secret declared in the cluster.
	CodeSecretManaged  = "secret_managed_in_cluster"
	CodeTestNotRetried = "test_not_retried"
	// CodeDeliveryConcurrencyLimit: a test send over the bound on webhook
	// attempts in flight of its endpoint or organization (429).
	CodeDeliveryConcurrencyLimit = "delivery_concurrency_limit_reached"
)

const (
	endpointNotFound = "Webhook endpoint not found."
	deliveryNotFound = "Delivery not found."
)

// EndpointIDPattern is what an endpoint id looks like.
const EndpointIDPattern = `^we_[0-9a-f]{32}$`

var endpointIDPattern = regexp.MustCompile(EndpointIDPattern)

func validEndpointID(id string) bool { return endpointIDPattern.MatchString(id) }

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
		id := chi.URLParam(r, "endpointID")
		if !validEndpointID(id) {
			writeDetail(w, http.StatusNotFound, endpointNotFound)
			return
		}
		ep, err := a.cfg.Directory.Endpoint(r.Context(), organization(r.Context()), id)
		switch {
		case errors.Is(err, directory.ErrNotFound) || (err == nil && ep.DeletionTimestamp != nil):
			writeDetail(w, http.StatusNotFound, endpointNotFound)
			return
		case err != nil:
			a.unavailable(w, err, "looking up webhook endpoint", "The webhook endpoint could not be read")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), endpointKey{}, ep)))
	})
}

func endpointFrom(ctx context.Context) *switchboardv1.WebhookEndpoint {
	return ctx.Value(endpointKey{}).(*switchboardv1.WebhookEndpoint)
}

// liveEndpoint re-reads the request's endpoint from the API server, for
// actions that must not use a cached copy a moment old: a test event right
// after a PATCH of the URL goes to the new URL. It answers 404/503 itself.
func (a *api) liveEndpoint(w http.ResponseWriter, r *http.Request) (*switchboardv1.WebhookEndpoint, bool) {
	cached := endpointFrom(r.Context())
	ep := &switchboardv1.WebhookEndpoint{}
	err := a.cfg.Live.Get(r.Context(), client.ObjectKeyFromObject(cached), ep)
	switch {
	case apierrors.IsNotFound(err) || (err == nil && (ep.UID != cached.UID || ep.DeletionTimestamp != nil)):
		writeDetail(w, http.StatusNotFound, endpointNotFound)
		return nil, false
	case err != nil:
		a.unavailable(w, err, "reading webhook endpoint", "The webhook endpoint could not be read")
		return nil, false
	}
	return ep, true
}

// unavailable answers 503 for a failed read or write of the cluster.
func (a *api) unavailable(w http.ResponseWriter, err error, logMsg, what string) {
	a.cfg.Log.Error(err, logMsg)
	writeDetail(w, http.StatusServiceUnavailable, what+"; it is safe to retry.")
}

// writeFailed answers a refused write: 422 when the API server found the
// endpoint invalid (its CRD rules), 503 otherwise.
func (a *api) writeFailed(w http.ResponseWriter, err error, logMsg, what string) {
	if !apierrors.IsInvalid(err) {
		a.unavailable(w, err, logMsg, what)
		return
	}
	var items []ValidationItem
	if st := apierrors.APIStatus(nil); errors.As(err, &st) && st.Status().Details != nil {
		for _, c := range st.Status().Details.Causes {
			items = append(items, ValidationItem{Type: "value_error",
				Loc: []any{"body", strings.TrimPrefix(c.Field, "spec.")}, Msg: "Value error, " + c.Message})
		}
	}
	if len(items) == 0 {
		items = []ValidationItem{{Type: "value_error", Loc: []any{"body"}, Msg: "Value error, " + err.Error()}}
	}
	writeValidation(w, items)
}

// readEndpointBody reads and decodes a create or update body and checks
// its URL against the policy, answering 413 or 422 itself.
func (a *api) readEndpointBody(w http.ResponseWriter, r *http.Request, create bool) (*endpointRequest, bool) {
	body, ok := readBody(w, r)
	if !ok {
		return nil, false
	}
	req, invalid := decodeEndpoint(body, create)
	if invalid != nil {
		writeValidation(w, invalid)
		return nil, false
	}
	if !req.URLSet {
		return req, true
	}
	err := a.cfg.Webhooks.Policy.Check(r.Context(), req.URL)
	var refused *webhook.URLError
	switch {
	case errors.As(err, &refused):
		writeValidation(w, []ValidationItem{{Type: CodeURLNotAllowed, Loc: []any{"body", "url"},
			Msg: refused.Reason, Input: req.URL}})
		return nil, false
	case err != nil:
		a.unavailable(w, err, "checking webhook URL", "The URL could not be checked")
		return nil, false
	}
	return req, true
}

func (a *api) createEndpoint(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	req, ok := a.readEndpointBody(w, r, true)
	if !ok {
		return
	}
	ep := &switchboardv1.WebhookEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: organization(ctx), GenerateName: "endpoint-"},
	}
	req.apply(&ep.Spec)
	ticket, err := a.cfg.Quota.AdmitEndpoint(ctx, ep.Namespace)
	var exceeded *quota.Exceeded
	switch {
	case errors.As(err, &exceeded):
		writeCodeDetail(w, http.StatusUnprocessableEntity, exceeded.Code, exceeded.Message)
		return
	case err != nil:
		a.unavailable(w, err, "checking the endpoint limit", "The organization's limits could not be checked")
		return
	}
	if err := a.cfg.Client.Create(ctx, ep); err != nil {
		ticket.Release()
		a.writeFailed(w, err, "creating webhook endpoint", "The webhook endpoint could not be created")
		return
	}
	ticket.Placed(ep.Name)
	a.cfg.Directory.EndpointCreated(ep)
	secret, err := a.generateSecret(ctx, ep)
	if err != nil {
		// Without its secret the caller could not verify deliveries: undo,
		// so that a retry does not leave a second endpoint behind.
		if delErr := a.cfg.Client.Delete(context.WithoutCancel(ctx), ep); delErr != nil && !apierrors.IsNotFound(delErr) {
			a.cfg.Log.Error(delErr, "removing webhook endpoint without a secret", "namespace", ep.Namespace, "name", ep.Name)
		}
		a.unavailable(w, err, "creating webhook signing secret", "The webhook endpoint could not be created")
		return
	}
	w.Header().Set("Location", "/v1/webhook-endpoints/"+ep.ResolvedID())
	writeJSON(w, http.StatusCreated, createdEndpoint{endpointView: renderEndpoint(ep), Secret: secret})
}

// generateSecret creates ep's signing Secret, owned by ep so that it goes
// with it, and returns the secret. The endpoint reconciler generates the
// same Secret when it finds none; if it came first, its secret is the one.
func (a *api) generateSecret(ctx context.Context, ep *switchboardv1.WebhookEndpoint) (string, error) {
	s, value, err := deliveries.NewSecret(ep)
	if err != nil {
		return "", err
	}
	s.OwnerReferences = []metav1.OwnerReference{ownerRef(ep)}
	err = a.cfg.Client.Create(ctx, s)
	if !apierrors.IsAlreadyExists(err) {
		return value, err
	}
	var existing corev1.Secret
	if err := a.cfg.Live.Get(ctx, client.ObjectKeyFromObject(s), &existing); err != nil {
		return "", err
	}
	if !metav1.IsControlledBy(&existing, ep) {
		return "", errors.New("Secret " + s.Name + " exists and does not belong to the endpoint")
	}
	return string(existing.Data[switchboardv1.WebhookSecretKey]), nil
}

func ownerRef(ep *switchboardv1.WebhookEndpoint) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: switchboardv1.GroupVersion.String(), Kind: "WebhookEndpoint",
		Name: ep.Name, UID: ep.UID, Controller: ptr(true)}
}

func (a *api) listEndpoints(w http.ResponseWriter, r *http.Request) {
	page, invalid := decodePage(r.URL.Query(), validEndpointID, EndpointIDPattern)
	if invalid != nil {
		writeValidation(w, invalid)
		return
	}
	var list switchboardv1.WebhookEndpointList
	if err := a.cfg.Client.List(r.Context(), &list, client.InNamespace(organization(r.Context()))); err != nil {
		a.unavailable(w, err, "listing webhook endpoints", "The webhook endpoints could not be listed")
		return
	}
	items := list.Items[:0]
	for _, ep := range list.Items {
		if ep.DeletionTimestamp == nil {
			items = append(items, ep)
		}
	}
	sortEndpoints(items)
	if page.Cursor != "" {
		i := indexOf(items, func(ep *switchboardv1.WebhookEndpoint) bool { return ep.ResolvedID() == page.Cursor })
		if i < 0 {
			writeValidation(w, []ValidationItem{unknownCursor(page.Cursor)})
			return
		}
		items = items[i+1:]
	}
	items, hasMore := firstPage(items, page.Limit)
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

// errEndpointGone: the endpoint was deleted (or replaced) meanwhile.
var errEndpointGone = errors.New("webhook endpoint gone")

func (a *api) updateEndpoint(w http.ResponseWriter, r *http.Request) {
	ctx, ep := r.Context(), endpointFrom(r.Context())
	req, ok := a.readEndpointBody(w, r, false)
	if !ok {
		return
	}
	var updated *switchboardv1.WebhookEndpoint
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		updated = &switchboardv1.WebhookEndpoint{}
		if err := a.cfg.Live.Get(ctx, client.ObjectKeyFromObject(ep), updated); err != nil {
			return err
		}
		if updated.UID != ep.UID || updated.DeletionTimestamp != nil {
			return errEndpointGone
		}
		req.apply(&updated.Spec)
		if req.DisabledSet && !req.Disabled {
			delete(updated.Annotations, switchboardv1.WebhookDisabledReasonAnnotation)
		}
		return a.cfg.Client.Update(ctx, updated)
	})
	switch {
	case apierrors.IsNotFound(err) || errors.Is(err, errEndpointGone):
		writeDetail(w, http.StatusNotFound, endpointNotFound)
	case err != nil:
		a.writeFailed(w, err, "updating webhook endpoint", "The webhook endpoint could not be updated")
	default:
		writeJSON(w, http.StatusOK, renderEndpoint(updated))
	}
}

func (a *api) deleteEndpoint(w http.ResponseWriter, r *http.Request) {
	ep := endpointFrom(r.Context())
	// The UID precondition spares an endpoint re-created under the same
	// name (an applied manifest): that one has another id.
	err := a.cfg.Client.Delete(r.Context(), ep, client.Preconditions{UID: &ep.UID})
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		writeDetail(w, http.StatusNotFound, endpointNotFound)
	case err != nil:
		a.unavailable(w, err, "deleting webhook endpoint", "The webhook endpoint could not be deleted")
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

func (a *api) rotateSecret(w http.ResponseWriter, r *http.Request) {
	ep, ok := a.liveEndpoint(w, r)
	if !ok {
		return
	}
	if ep.Spec.SecretRef != nil {
		// The platform team declared this Secret in the cluster (and may
		// manage it with GitOps or an external secret store): an API key
		// must not rewrite it.
		writeCodeDetail(w, http.StatusConflict, CodeSecretManaged, "The endpoint's signing Secret "+ep.Spec.SecretRef.Name+
			" is declared in the cluster (spec.secretRef); rotate it there, with kubectl or the tool that manages it.")
		return
	}
	ctx, now := r.Context(), a.cfg.Now()
	overlap := cmp.Or(a.cfg.Webhooks.RotationOverlap, deliveries.DefaultRotationOverlap)
	var (
		secret *corev1.Secret
		fresh  string
	)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		secret = &corev1.Secret{}
		key := client.ObjectKey{Namespace: ep.Namespace, Name: ep.SigningSecretName()}
		if err := a.cfg.Live.Get(ctx, key, secret); err != nil {
			return err
		}
		var err error
		if fresh, err = deliveries.Rotate(secret, now, overlap); err != nil {
			return err
		}
		return a.cfg.Client.Update(ctx, secret)
	})
	switch {
	case apierrors.IsNotFound(err):
		writeCodeDetail(w, http.StatusConflict, CodeSecretMissing, secretMissing(ep))
		return
	case err != nil:
		a.unavailable(w, err, "rotating webhook signing secret", "The signing secret could not be rotated")
		return
	}
	writeJSON(w, http.StatusOK, rotatedEndpoint{endpointView: renderEndpoint(ep), Secret: fresh,
		PreviousSecretExpiresAt: previousExpiry(deliveries.PreviousExpiresAt(secret))})
}

// secretMissing says why an endpoint has no signing Secret.
func secretMissing(ep *switchboardv1.WebhookEndpoint) string {
	if ep.Spec.SecretRef != nil {
		return "The Secret " + ep.Spec.SecretRef.Name + " named in the endpoint's spec.secretRef does not exist; " +
			"create it with the key \"" + switchboardv1.WebhookSecretKey + "\"."
	}
	return "The endpoint's signing Secret " + ep.SigningSecretName() +
		" does not exist yet; Switchboard generates it within moments, so try again shortly."
}

// testEndpoint sends one sample event of the requested kind, signed with
// the endpoint's real secrets, and records it in the delivery log as a
// test delivery (spec 4.4). It waits for the receiver: at most the
// sender's timeout (10 seconds).
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
	ep, ok := a.liveEndpoint(w, r)
	if !ok {
		return
	}
	ctx, now := r.Context(), a.cfg.Now()
	err := a.cfg.Webhooks.Policy.Check(ctx, ep.Spec.URL)
	var refused *webhook.URLError
	switch {
	case errors.As(err, &refused):
		writeCodeDetail(w, http.StatusUnprocessableEntity, CodeURLNotAllowed, refused.Reason)
		return
	case err != nil:
		a.unavailable(w, err, "checking webhook URL", "The URL could not be checked")
		return
	}
	secrets, ok := a.signingSecrets(w, ctx, ep, now)
	if !ok {
		return
	}
	payload, err := deliveries.SampleBody(kind, now)
	if err != nil {
		a.unavailable(w, err, "building test event", "The test event could not be built")
		return
	}
	d := deliveries.ForTest(ep)
	if !a.reserveTestSend(w, ctx, d, now) {
		return
	}
	res := a.cfg.Webhooks.Sender.Send(ctx, webhook.Message{URL: ep.Spec.URL, DeliveryID: d.Spec.DeliveryID,
		Event: kind, Timestamp: now, Body: payload, Secrets: secrets})
	// The event has been sent: the caller gets its result even if the
	// record of it cannot be written, or the caller has gone.
	a.recordTest(context.WithoutCancel(ctx), d, res, now)
	writeJSON(w, http.StatusOK, renderTestResult(d.Spec.DeliveryID, res))
}

// testSendRetryAfter is the Retry-After of a test send refused for
// attempts in flight: a slot frees when one of them ends, within the
// receiver's timeout.
const testSendRetryAfter = "5"

// reserveTestSend takes a slot for test delivery d under the bounds on
// attempts in flight per organization and endpoint, which test sends share
// with the delivery worker, so that sending tests is no way around them;
// or answers 429/503 itself.
func (a *api) reserveTestSend(w http.ResponseWriter, ctx context.Context, d *switchboardv1.WebhookDelivery, now time.Time) bool {
	d.CreationTimestamp = metav1.NewTime(now)
	reserved, err := a.cfg.Deliveries.ReserveDelivery(ctx, d, now, a.cfg.Webhooks.Lease, a.cfg.Webhooks.InFlight)
	switch {
	case err != nil:
		a.unavailable(w, err, "reserving a test send", "The test event could not be queued")
		return false
	case !reserved:
		w.Header().Set("Retry-After", testSendRetryAfter)
		writeCodeDetail(w, http.StatusTooManyRequests, CodeDeliveryConcurrencyLimit, fmt.Sprintf(
			"This endpoint or its organization has as many webhook attempts in flight as it may "+
				"(%s); retry after Retry-After seconds.", inFlightBounds(a.cfg.Webhooks.InFlight)))
		return false
	}
	return true
}

// inFlightBounds says the bounds in words.
func inFlightBounds(b history.InFlightLimits) string {
	bound := func(n int, of string) string {
		if n <= 0 {
			return "no bound per " + of
		}
		return strconv.Itoa(n) + " per " + of
	}
	return bound(b.PerEndpoint, "endpoint") + ", " + bound(b.PerOrganization, "organization")
}

// signingSecrets reads the secrets that sign ep's deliveries now, or
// answers 409/503 itself.
func (a *api) signingSecrets(w http.ResponseWriter, ctx context.Context, ep *switchboardv1.WebhookEndpoint,
	now time.Time) ([]string, bool) {
	var s corev1.Secret
	err := a.cfg.Live.Get(ctx, client.ObjectKey{Namespace: ep.Namespace, Name: ep.SigningSecretName()}, &s)
	switch {
	case apierrors.IsNotFound(err):
		writeCodeDetail(w, http.StatusConflict, CodeSecretMissing, secretMissing(ep))
		return nil, false
	case err != nil:
		a.unavailable(w, err, "reading webhook signing secret", "The signing secret could not be read")
		return nil, false
	}
	secrets, err := deliveries.SigningSecrets(&s, now)
	if err != nil {
		writeCodeDetail(w, http.StatusConflict, CodeSecretMissing, "The endpoint has no usable signing secret: "+err.Error()+".")
		return nil, false
	}
	return secrets, true
}

// recordTest writes a sent test event to the delivery log.
func (a *api) recordTest(ctx context.Context, d *switchboardv1.WebhookDelivery, res webhook.Result, sentAt time.Time) {
	d.CreationTimestamp = metav1.NewTime(sentAt)
	deliveries.Record(&d.Status, res, sentAt, switchboardv1.TriggerTest, nil)
	if err := a.cfg.Deliveries.SaveDelivery(ctx, d, time.Time{}); err != nil {
		a.cfg.Log.Error(err, "recording test delivery", "namespace", d.Namespace, "deliveryID", d.Spec.DeliveryID)
		return
	}
	if a.cfg.WakeDeliveries != nil {
		a.cfg.WakeDeliveries() // the test send's slot is free for a delivery waiting on it
	}
}

func (a *api) listDeliveries(w http.ResponseWriter, r *http.Request) {
	ctx, ep := r.Context(), endpointFrom(r.Context())
	q, invalid := decodeDeliveryQuery(r.URL.Query())
	if invalid != nil {
		writeValidation(w, invalid)
		return
	}
	query := history.DeliveryQuery{Endpoint: ep.Name, EndpointID: ep.ResolvedID(), Event: q.Event, Phase: q.Status,
		Limit: q.Limit + 1}
	if q.Cursor != "" {
		c, err := a.findDelivery(ctx, ep, q.Cursor)
		switch {
		case errors.Is(err, history.ErrNotFound):
			writeValidation(w, []ValidationItem{unknownCursor(q.Cursor)})
			return
		case err != nil:
			a.unavailable(w, err, "reading webhook delivery", "The deliveries could not be listed")
			return
		}
		after := history.DeliveryKeyOf(c)
		query.After = &after
	}
	items, err := a.cfg.Deliveries.ListDeliveries(ctx, ep.Namespace, query)
	if err != nil {
		a.unavailable(w, err, "listing webhook deliveries", "The deliveries could not be listed")
		return
	}
	items, hasMore := firstPage(items, q.Limit)
	out := deliveryPage{Data: make([]deliveryView, len(items)), HasMore: hasMore}
	for i := range items {
		out.Data[i] = renderDelivery(&items[i], ep.ResolvedID())
	}
	if hasMore {
		out.NextCursor = ptr(items[len(items)-1].Spec.DeliveryID)
	}
	writeJSON(w, http.StatusOK, out)
}

// ofEndpoint reports whether d is a delivery to ep, and not to an earlier
// endpoint of the same name.
func ofEndpoint(d *switchboardv1.WebhookDelivery, ep *switchboardv1.WebhookEndpoint) bool {
	return d.Spec.EndpointRef.Name == ep.Name && (d.Spec.EndpointID == "" || d.Spec.EndpointID == ep.ResolvedID())
}

// findDelivery returns ep's delivery whose id is id from the delivery log,
// or history.ErrNotFound.
func (a *api) findDelivery(ctx context.Context, ep *switchboardv1.WebhookEndpoint, id string) (*switchboardv1.WebhookDelivery, error) {
	if !deliveries.ValidID(id) {
		return nil, history.ErrNotFound
	}
	d, err := a.cfg.Deliveries.GetDelivery(ctx, ep.Namespace, id)
	if err == nil && !ofEndpoint(d, ep) {
		return nil, history.ErrNotFound
	}
	return d, err
}

// deliveryFrom resolves {deliveryID}, or answers 404/503 itself.
func (a *api) deliveryFrom(w http.ResponseWriter, r *http.Request) (*switchboardv1.WebhookDelivery, bool) {
	d, err := a.findDelivery(r.Context(), endpointFrom(r.Context()), chi.URLParam(r, "deliveryID"))
	switch {
	case errors.Is(err, history.ErrNotFound):
		writeDetail(w, http.StatusNotFound, deliveryNotFound)
		return nil, false
	case err != nil:
		a.unavailable(w, err, "reading webhook delivery", "The delivery could not be read")
		return nil, false
	}
	return d, true
}

func (a *api) getDelivery(w http.ResponseWriter, r *http.Request) {
	if d, ok := a.deliveryFrom(w, r); ok {
		writeJSON(w, http.StatusOK, renderDelivery(d, endpointFrom(r.Context()).ResolvedID()))
	}
}

// retryDelivery asks the delivery worker for one more attempt now; it
// does not use up the retry schedule.
func (a *api) retryDelivery(w http.ResponseWriter, r *http.Request) {
	d, ok := a.deliveryFrom(w, r)
	if !ok {
		return
	}
	if d.Spec.Event == webhook.EventTest {
		writeCodeDetail(w, http.StatusConflict, CodeTestNotRetried,
			"Test deliveries are sent once and not retried; send a new test event.")
		return
	}
	d, err := a.cfg.Deliveries.RequestDeliveryRetry(r.Context(), d.Namespace, d.Spec.DeliveryID, a.cfg.Now())
	switch {
	case errors.Is(err, history.ErrNotFound):
		writeDetail(w, http.StatusNotFound, deliveryNotFound)
	case err != nil:
		a.unavailable(w, err, "requesting delivery retry", "The retry could not be requested")
	default:
		if a.cfg.WakeDeliveries != nil {
			a.cfg.WakeDeliveries()
		}
		writeJSON(w, http.StatusAccepted, renderDelivery(d, endpointFrom(r.Context()).ResolvedID()))
	}
}

// firstPage cuts items to limit and reports whether more follow.
func firstPage[T any](items []T, limit int) ([]T, bool) {
	if len(items) > limit {
		return items[:limit], true
	}
	return items, false
}

func indexOf[T any](items []T, match func(*T) bool) int {
	for i := range items {
		if match(&items[i]) {
			return i
		}
	}
	return -1
}
