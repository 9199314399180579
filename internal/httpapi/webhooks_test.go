package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/apikeys"
	"github.com/switchboard-dev/switchboard/internal/egress"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/services"
	"github.com/switchboard-dev/switchboard/internal/validation"
	"github.com/switchboard-dev/switchboard/internal/webhook"
	"github.com/switchboard-dev/switchboard/internal/webhook/endpoints"
)

// problems renders validation items as "type@loc" for compact comparisons.
func problems(items []validation.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		parts := make([]string, len(it.Loc))
		for j, l := range it.Loc {
			b, _ := json.Marshal(l)
			parts[j] = strings.Trim(string(b), `"`)
		}
		out[i] = it.Type + "@" + strings.Join(parts, ".")
	}
	return out
}

func TestDecodeEndpointCreate(t *testing.T) {
	long := strings.Repeat("é", maxDescriptionLength+1)
	tests := []struct {
		name  string
		body  string
		want  []string // problems; nil for a valid body
		check func(*testing.T, *endpointRequest)
	}{
		{name: "minimal", body: `{"url":"https://example.com/hooks"}`,
			check: func(t *testing.T, r *endpointRequest) {
				if r.URL != "https://example.com/hooks" || r.Events != nil || r.Description != "" || r.Disabled ||
					!r.URLSet || !r.EventsSet || !r.DescriptionSet || !r.DisabledSet {
					t.Fatalf("got %+v", r)
				}
			}},
		{name: "everything", body: `{"url":"https://example.com","events":["call.ended","call.started"],` +
			`"description":"CRM","disabled":true,"unknown":1}`,
			check: func(t *testing.T, r *endpointRequest) {
				want := []switchboardv1.WebhookEventType{"call.ended", "call.started"}
				if !slices.Equal(r.Events, want) || r.Description != "CRM" || !r.Disabled {
					t.Fatalf("got %+v", r)
				}
			}},
		{name: "empty events mean all", body: `{"url":"https://example.com","events":[]}`,
			check: func(t *testing.T, r *endpointRequest) {
				if len(r.Events) != 0 {
					t.Fatalf("events = %v", r.Events)
				}
			}},
		{name: "null events and description are defaults", body: `{"url":"https://example.com","events":null,"description":null}`},
		{name: "description of 512 characters", body: `{"url":"https://e.com","description":"` + strings.Repeat("é", 512) + `"}`},
		{name: "empty body", body: ``, want: []string{"missing@body"}},
		{name: "null body", body: `null`, want: []string{"missing@body"}},
		{name: "array body", body: `[]`, want: []string{"model_attributes_type@body"}},
		{name: "malformed", body: `{"url":`, want: []string{"json_invalid@body.7"}},
		{name: "missing url", body: `{}`, want: []string{"missing@body.url"}},
		{name: "null url", body: `{"url":null}`, want: []string{"string_type@body.url"}},
		{name: "numeric url", body: `{"url":5}`, want: []string{"string_type@body.url"}},
		{name: "url too long", body: `{"url":"https://e.com/` + strings.Repeat("a", maxURLLength) + `"}`,
			want: []string{"string_too_long@body.url"}},
		{name: "events not a list", body: `{"url":"https://e.com","events":"call.ended"}`, want: []string{"list_type@body.events"}},
		{name: "unknown kind", body: `{"url":"https://e.com","events":["call.ended","call.missed"]}`,
			want: []string{"enum@body.events.1"}},
		{name: "test is not subscribable", body: `{"url":"https://e.com","events":["test"]}`, want: []string{"enum@body.events.0"}},
		{name: "duplicate kind", body: `{"url":"https://e.com","events":["call.ended","call.ended"]}`,
			want: []string{"value_error@body.events.1"}},
		{name: "non-string kind", body: `{"url":"https://e.com","events":[1,null]}`,
			want: []string{"string_type@body.events.0", "string_type@body.events.1"}},
		{name: "description too long", body: `{"url":"https://e.com","description":"` + long + `"}`,
			want: []string{"string_too_long@body.description"}},
		{name: "description not a string", body: `{"url":"https://e.com","description":{}}`, want: []string{"string_type@body.description"}},
		{name: "disabled not a bool", body: `{"url":"https://e.com","disabled":"yes"}`, want: []string{"bool_type@body.disabled"}},
		{name: "null disabled", body: `{"url":"https://e.com","disabled":null}`, want: []string{"bool_type@body.disabled"}},
		{name: "every problem at once", body: `{"events":{},"description":1,"disabled":0}`,
			want: []string{"missing@body.url", "list_type@body.events", "string_type@body.description", "bool_type@body.disabled"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, errs := decodeEndpoint([]byte(tt.body), true)
			if got := problems(errs); !slices.Equal(got, tt.want) {
				t.Fatalf("problems = %v, want %v", got, tt.want)
			}
			if tt.want == nil && req == nil {
				t.Fatal("no request")
			}
			if tt.check != nil {
				tt.check(t, req)
			}
		})
	}
}

func TestDecodeEndpointPatch(t *testing.T) {
	base := switchboardv1.WebhookEndpointSpec{URL: "https://old.example.com", Events: []switchboardv1.WebhookEventType{"call.ended"},
		Description: "old", Disabled: true}
	tests := []struct {
		name string
		body string
		want []string
		spec switchboardv1.WebhookEndpointSpec
	}{
		{name: "empty patch changes nothing", body: `{}`, spec: base},
		{name: "null events resets to all", body: `{"events":null}`,
			spec: switchboardv1.WebhookEndpointSpec{URL: base.URL, Description: "old", Disabled: true}},
		{name: "null description resets", body: `{"description":null}`,
			spec: switchboardv1.WebhookEndpointSpec{URL: base.URL, Events: base.Events, Disabled: true}},
		{name: "re-enable and move", body: `{"disabled":false,"url":"https://new.example.com"}`,
			spec: switchboardv1.WebhookEndpointSpec{URL: "https://new.example.com", Events: base.Events, Description: "old"}},
		{name: "null url", body: `{"url":null}`, want: []string{"string_type@body.url"}},
		{name: "null disabled", body: `{"disabled":null}`, want: []string{"bool_type@body.disabled"}},
		{name: "empty body", body: ` `, want: []string{"missing@body"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, errs := decodeEndpoint([]byte(tt.body), false)
			if got := problems(errs); !slices.Equal(got, tt.want) {
				t.Fatalf("problems = %v, want %v", got, tt.want)
			}
			if tt.want != nil {
				return
			}
			spec := *base.DeepCopy()
			req.Apply(&spec)
			if !reflect.DeepEqual(spec, tt.spec) {
				t.Fatalf("spec = %+v, want %+v", spec, tt.spec)
			}
		})
	}
}

func TestDecodeTestEvent(t *testing.T) {
	tests := []struct {
		body, kind string
		want       []string
	}{
		{body: ``, kind: "call.ended"},
		{body: `{}`, kind: "call.ended"},
		{body: `{"event":null}`, kind: "call.ended"},
		{body: `{"event":"call.started","other":1}`, kind: "call.started"},
		{body: `{"event":"call.analyzed"}`, kind: "call.analyzed"},
		{body: `{"event":"test"}`, want: []string{"enum@body.event"}},
		{body: `{"event":"call.ENDED"}`, want: []string{"enum@body.event"}},
		{body: `{"event":1}`, want: []string{"string_type@body.event"}},
		{body: `[]`, want: []string{"model_attributes_type@body"}},
		{body: `{`, want: []string{"json_invalid@body.1"}},
	}
	for _, tt := range tests {
		kind, errs := decodeTestEvent([]byte(tt.body))
		if got := problems(errs); !slices.Equal(got, tt.want) || kind != tt.kind {
			t.Errorf("decodeTestEvent(%q) = %q, %v; want %q, %v", tt.body, kind, got, tt.kind, tt.want)
		}
	}
	_, errs := decodeTestEvent([]byte(`{"event":"nope"}`))
	if errs[0].Msg != "Input should be 'call.started', 'call.ended' or 'call.analyzed'" || errs[0].Input != "nope" {
		t.Errorf("enum item = %+v", errs[0])
	}
}

func TestDecodeDeliveryQuery(t *testing.T) {
	const dlv = "dlv_0123456789abcdef0123456789abcdef"
	tests := []struct {
		query string
		want  []string
		check func(deliveryQuery) bool
	}{
		{query: "", check: func(q deliveryQuery) bool { return q.Limit == 20 && q.Cursor == "" && q.Status == "" && q.Event == "" }},
		{query: "limit=1&cursor=" + dlv + "&status=failed&event=test", check: func(q deliveryQuery) bool {
			return q.Limit == 1 && q.Cursor == dlv && q.Status == "failed" && q.Event == "test"
		}},
		{query: "limit=100&event=call.analyzed", check: func(q deliveryQuery) bool { return q.Limit == 100 }},
		{query: "limit=0", want: []string{"greater_than_equal@query.limit"}},
		{query: "limit=101", want: []string{"less_than_equal@query.limit"}},
		{query: "limit=ten", want: []string{"int_parsing@query.limit"}},
		{query: "limit=", want: []string{"int_parsing@query.limit"}},
		{query: "cursor=we_0123", want: []string{"string_pattern_mismatch@query.cursor"}},
		{query: "status=done", want: []string{"enum@query.status"}},
		{query: "event=call.missed", want: []string{"enum@query.event"}},
		{query: "limit=-1&cursor=x&status=x&event=x",
			want: []string{"greater_than_equal@query.limit", "string_pattern_mismatch@query.cursor", "enum@query.status", "enum@query.event"}},
	}
	for _, tt := range tests {
		v, _ := url.ParseQuery(tt.query)
		q, errs := decodeDeliveryQuery(v)
		if got := problems(errs); !slices.Equal(got, tt.want) {
			t.Errorf("%q: problems = %v, want %v", tt.query, got, tt.want)
		}
		if tt.check != nil && !tt.check(q) {
			t.Errorf("%q: got %+v", tt.query, q)
		}
	}
}

func TestDecodeEndpointPage(t *testing.T) {
	const we = "we_0123456789abcdef0123456789abcdef"
	v, _ := url.ParseQuery("limit=7&cursor=" + we)
	page, errs := decodePage(v, validEndpointID, EndpointIDPattern)
	if errs != nil || page.Limit != 7 || page.Cursor != we {
		t.Fatalf("got %+v %v", page, errs)
	}
	v, _ = url.ParseQuery("cursor=" + strings.ToUpper(we))
	if _, errs := decodePage(v, validEndpointID, EndpointIDPattern); len(errs) != 1 {
		t.Fatalf("upper-case cursor accepted: %v", errs)
	}
}

func endpoint(uid string, created time.Time, mutate func(*switchboardv1.WebhookEndpoint)) switchboardv1.WebhookEndpoint {
	ep := switchboardv1.WebhookEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: "org", Name: "endpoint-" + uid[:4], UID: types.UID(uid),
			CreationTimestamp: metav1.NewTime(created)},
		Spec: switchboardv1.WebhookEndpointSpec{URL: "https://example.com/hooks"},
	}
	if mutate != nil {
		mutate(&ep)
	}
	return ep
}

func TestRenderEndpoint(t *testing.T) {
	created := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	const uid = "0a1b2c3d-0000-4000-8000-00000000000f"
	degraded := metav1.Condition{Type: switchboardv1.DegradedCondition, Status: metav1.ConditionTrue, Reason: "DeliveriesFailing"}
	tests := []struct {
		name   string
		mutate func(*switchboardv1.WebhookEndpoint)
		want   string
	}{
		{name: "new", want: `{"id":"we_0a1b2c3d00004000800000000000000f","url":"https://example.com/hooks",` +
			`"events":["call.started","call.ended","call.analyzed"],"description":"","disabled":false,"disabled_reason":null,` +
			`"status":"active","last_delivery_at":null,"last_delivery_result":null,"created_at":"2026-03-01T12:00:00.000Z"}`},
		{name: "subscribed events in lifecycle order", mutate: func(ep *switchboardv1.WebhookEndpoint) {
			ep.Spec.Events = []switchboardv1.WebhookEventType{"call.analyzed", "call.started"}
			ep.Spec.Description = "CRM"
			ep.Status.LastDeliveryAt = &metav1.Time{Time: created.Add(time.Minute)}
			ep.Status.LastDeliveryResult = "timed out after 10s"
			ep.Status.Conditions = []metav1.Condition{degraded}
		}, want: `{"id":"we_0a1b2c3d00004000800000000000000f","url":"https://example.com/hooks",` +
			`"events":["call.started","call.analyzed"],"description":"CRM","disabled":false,"disabled_reason":null,` +
			`"status":"degraded","last_delivery_at":"2026-03-01T12:01:00.000Z","last_delivery_result":"timed out after 10s",` +
			`"created_at":"2026-03-01T12:00:00.000Z"}`},
		{name: "disabled by Switchboard", mutate: func(ep *switchboardv1.WebhookEndpoint) {
			ep.Spec.Disabled = true
			ep.Annotations = map[string]string{switchboardv1.WebhookDisabledReasonAnnotation: "receiver answered 410 Gone"}
			ep.Status.Conditions = []metav1.Condition{degraded}
		}, want: `{"id":"we_0a1b2c3d00004000800000000000000f","url":"https://example.com/hooks",` +
			`"events":["call.started","call.ended","call.analyzed"],"description":"","disabled":true,` +
			`"disabled_reason":"receiver answered 410 Gone","status":"disabled","last_delivery_at":null,` +
			`"last_delivery_result":null,"created_at":"2026-03-01T12:00:00.000Z"}`},
		{name: "a stale reason on an enabled endpoint is not shown", mutate: func(ep *switchboardv1.WebhookEndpoint) {
			ep.Annotations = map[string]string{switchboardv1.WebhookDisabledReasonAnnotation: "old"}
		}, want: `{"id":"we_0a1b2c3d00004000800000000000000f","url":"https://example.com/hooks",` +
			`"events":["call.started","call.ended","call.analyzed"],"description":"","disabled":false,"disabled_reason":null,` +
			`"status":"active","last_delivery_at":null,"last_delivery_result":null,"created_at":"2026-03-01T12:00:00.000Z"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep := endpoint(uid, created, tt.mutate)
			got, _ := json.Marshal(renderEndpoint(&ep))
			if string(got) != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestRenderSecretResponses(t *testing.T) {
	ep := endpoint("0a1b2c3d-0000-4000-8000-00000000000f", time.Unix(0, 0), nil)
	got, _ := json.Marshal(rotatedEndpoint{endpointView: renderEndpoint(&ep), Secret: "whsec_x",
		PreviousSecretExpiresAt: previousExpiry(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), true)})
	var m map[string]any
	_ = json.Unmarshal(got, &m)
	if m["secret"] != "whsec_x" || m["previous_secret_expires_at"] != "2026-01-02T03:04:05.000Z" || m["id"] == nil {
		t.Fatalf("rotate response = %s", got)
	}
	got, _ = json.Marshal(rotatedEndpoint{endpointView: renderEndpoint(&ep), Secret: "whsec_x",
		PreviousSecretExpiresAt: previousExpiry(time.Time{}, false)})
	if !strings.Contains(string(got), `"previous_secret_expires_at":null`) {
		t.Fatalf("rotate response without overlap = %s", got)
	}
}

func TestRenderTestResult(t *testing.T) {
	tests := []struct {
		res  webhook.Result
		want string
	}{
		{webhook.Result{StatusCode: 204}, `{"delivery_id":"dlv_1","status":"succeeded","status_code":204,"error":null}`},
		{webhook.Result{StatusCode: 401}, `{"delivery_id":"dlv_1","status":"failed","status_code":401,"error":null}`},
		{webhook.Result{StatusCode: 503, RetryAfter: time.Second}, `{"delivery_id":"dlv_1","status":"failed","status_code":503,"error":null}`},
		{webhook.Result{Err: "timed out after 10s"}, `{"delivery_id":"dlv_1","status":"failed","status_code":null,"error":"timed out after 10s"}`},
		{webhook.Result{}, `{"delivery_id":"dlv_1","status":"failed","status_code":null,"error":"no response from the receiver"}`},
	}
	for _, tt := range tests {
		got, _ := json.Marshal(renderTestResult("dlv_1", tt.res))
		if string(got) != tt.want {
			t.Errorf("%+v: got %s, want %s", tt.res, got, tt.want)
		}
	}
}

func TestRenderDelivery(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	d := &history.Delivery{
		ObjectMeta: metav1.ObjectMeta{Name: "dlv-ab", CreationTimestamp: metav1.NewTime(at)},
		Spec:       history.DeliverySpec{DeliveryID: "dlv_ab", Event: "call.ended", CallID: "call_1"},
	}
	got, _ := json.Marshal(renderDelivery(d, "we_1"))
	want := `{"id":"dlv_ab","endpoint_id":"we_1","event":"call.ended","call_id":"call_1","status":"pending",` +
		`"attempt_count":0,"next_attempt_at":null,"last_status_code":null,"last_error":null,` +
		`"created_at":"2026-03-01T12:00:00.000Z","completed_at":null,"retry_requested_at":null,"attempts":[]}`
	if string(got) != want {
		t.Fatalf("new delivery:\ngot  %s\nwant %s", got, want)
	}

	d.Spec.EndpointID, d.Spec.CallID = "we_2", ""
	d.Annotations = map[string]string{history.DeliveryRetryAnnotation: at.Add(time.Minute + time.Millisecond).Format(time.RFC3339Nano)}
	d.Status = history.DeliveryStatus{Phase: history.DeliveryFailed, AttemptCount: 2,
		LastError: "receiver answered 500", LastStatusCode: 500, CompletedAt: &metav1.Time{Time: at.Add(time.Hour)},
		NextAttemptAt: &metav1.MicroTime{Time: at.Add(2 * time.Hour)},
		Attempts: []history.DeliveryAttempt{
			{AttemptedAt: metav1.MicroTime{Time: at}, Error: "connection refused", DurationMS: 3, Trigger: "scheduled"},
			{AttemptedAt: metav1.MicroTime{Time: at.Add(time.Second)}, StatusCode: 500, DurationMS: 12, Response: "oops", Trigger: "manual"},
		}}
	got, _ = json.Marshal(renderDelivery(d, "we_1"))
	want = `{"id":"dlv_ab","endpoint_id":"we_2","event":"call.ended","call_id":null,"status":"failed",` +
		`"attempt_count":2,"next_attempt_at":"2026-03-01T14:00:00.000Z","last_status_code":500,"last_error":"receiver answered 500",` +
		`"created_at":"2026-03-01T12:00:00.000Z","completed_at":"2026-03-01T13:00:00.000Z","retry_requested_at":"2026-03-01T12:01:00.001Z",` +
		`"attempts":[{"attempted_at":"2026-03-01T12:00:00.000Z","status_code":null,"error":"connection refused","duration_ms":3,"response":null,"trigger":"scheduled"},` +
		`{"attempted_at":"2026-03-01T12:00:01.000Z","status_code":500,"error":null,"duration_ms":12,"response":"oops","trigger":"manual"}]}`
	if string(got) != want {
		t.Fatalf("failed delivery:\ngot  %s\nwant %s", got, want)
	}
}

// Ids that cannot be endpoint ids are 404 before any lookup (the directory
// is nil here: touching it would panic).
func TestMalformedEndpointIDIs404(t *testing.T) {
	a := &api{}
	r := chi.NewRouter()
	r.Route("/v1/webhook-endpoints", a.webhookRoutes)
	for _, path := range []string{
		"/v1/webhook-endpoints/nope",
		"/v1/webhook-endpoints/we_0123",
		"/v1/webhook-endpoints/WE_0123456789abcdef0123456789abcdef",
		"/v1/webhook-endpoints/we_0123456789ABCDEF0123456789abcdef/deliveries",
	} {
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusNotFound || rec.Body.String() != `{"detail":"Webhook endpoint not found."}`+"\n" {
			t.Errorf("GET %s = %d %s", path, rec.Code, rec.Body)
		}
	}
}

// In production mode the URL policy refuses http and private receivers
// with a reason the caller can act on; nothing reaches the cluster (the
// client is nil here: touching it would panic).
func TestCreateEndpointRefusesURL(t *testing.T) {
	a := &api{cfg: Config{Services: services.Services{Endpoints: &endpoints.Service{Policy: egress.URLPolicy{}, Now: time.Now}}}}
	tests := []struct{ url, reason string }{ // reason is a regular expression
		{"https://localhost/hooks", `^localhost resolves to (127\.0\.0\.1|::1), a loopback address; receivers must be publicly reachable$`},
		{"https://10.1.2.3/hooks", `^10\.1\.2\.3 is a private address; receivers must be publicly reachable$`},
		{"https://169.254.169.254/latest", `^169\.254\.169\.254 is the cloud metadata address; receivers must be publicly reachable$`},
		{"http://example.com/hooks", `^webhook URLs must use https$`},
		{"example.com/hooks", `^webhook URLs must be absolute, like https://example\.com/webhooks$`},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			body := `{"url":"` + tt.url + `","events":["call.ended"]}`
			req := httptest.NewRequest(http.MethodPost, "/v1/webhook-endpoints", strings.NewReader(body))
			req = req.WithContext(context.WithValue(req.Context(), principalKey{}, apikeys.Principal{Namespace: "org"}))
			rec := httptest.NewRecorder()
			a.createEndpoint(rec, req)
			var got struct{ Detail []validation.Item }
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != http.StatusUnprocessableEntity ||
				len(got.Detail) != 1 {
				t.Fatalf("got %d %s", rec.Code, rec.Body)
			}
			item := got.Detail[0]
			if item.Type != "url_not_allowed" || !reflect.DeepEqual(item.Loc, []any{"body", "url"}) || item.Input != tt.url ||
				!regexp.MustCompile(tt.reason).MatchString(item.Msg) {
				t.Fatalf("got %s, want msg matching %s", rec.Body, tt.reason)
			}
		})
	}
}
