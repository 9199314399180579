package app_test

// The webhook-endpoint API (README, "Webhook-endpoint API") over real HTTP against a real
// kube-apiserver: endpoints created, listed, changed and deleted, secrets
// rotated, test events sent to real receivers, and the delivery log read.
// The suite runs webhooks in development mode, so plain-http loopback
// receivers are allowed.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/history"
)

// Receivers that are never called are IP literals: the URL policy resolves
// host names, and the test machine may have no DNS.
const (
	wapiEndpointID = `^we_[0-9a-f]{32}$`
	wapiDeliveryID = `^dlv_[0-9a-f]{32}$`
	wapiTimestamp  = `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`
)

// wapiKinds are the kinds an endpoint subscribed to none receives: the
// call events, not the campaigns' (which carry no call), which an endpoint
// gets only by naming them.
var wapiKinds = []any{"call.started", "call.ended", "call.analyzed"}

// hookSink is a plain-http receiver that answers every request with one
// status and keeps what it got.
type hookSink struct {
	srv    *httptest.Server
	status int
	mu     sync.Mutex
	got    []sinkRequest
}

type sinkRequest struct {
	header http.Header
	body   []byte
}

func newHookSink(t *testing.T, status int) *hookSink {
	t.Helper()
	s := &hookSink{status: status}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.got = append(s.got, sinkRequest{header: r.Header.Clone(), body: body})
		s.mu.Unlock()
		w.WriteHeader(s.status)
		_, _ = io.WriteString(w, http.StatusText(s.status))
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *hookSink) url() string { return s.srv.URL + "/hooks" }

func (s *hookSink) requests() []sinkRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got)
}

// closedPortURL is a receiver URL nothing listens on.
func closedPortURL(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	_ = lis.Close()
	return "http://" + addr + "/hooks"
}

// createEndpoint registers an endpoint over REST, expects 201 and returns
// the response body (with the secret).
func createEndpoint(t *testing.T, key string, body map[string]any) map[string]any {
	t.Helper()
	r := do(t, "POST", "/v1/webhook-endpoints", key, body)
	if r.status != http.StatusCreated {
		t.Fatalf("POST /v1/webhook-endpoints = %d %s, want 201", r.status, r.raw)
	}
	return r.body
}

func endpointPath(id string, rest ...string) string {
	return "/v1/webhook-endpoints/" + id + strings.Join(rest, "")
}

// endpointResource finds the WebhookEndpoint behind a REST id.
func endpointResource(t *testing.T, ns, id string) *switchboardv1.WebhookEndpoint {
	t.Helper()
	var list switchboardv1.WebhookEndpointList
	NewWithT(t).Expect(k8s.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	for i := range list.Items {
		if list.Items[i].ResolvedID() == id {
			return &list.Items[i]
		}
	}
	t.Fatalf("no WebhookEndpoint in %s has id %s", ns, id)
	return nil
}

func countEndpoints(t *testing.T, ns string) int {
	t.Helper()
	var list switchboardv1.WebhookEndpointList
	NewWithT(t).Expect(k8s.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	return len(list.Items)
}

// listIDs reads one page of a list endpoint and returns its ids.
func listIDs(t *testing.T, key, path string) ([]string, response) {
	t.Helper()
	r := do(t, "GET", path, key, nil)
	expectStatusJSON(t, r, http.StatusOK)
	data, ok := r.body["data"].([]any)
	if !ok {
		t.Fatalf("GET %s: data is not an array: %s", path, r.raw)
	}
	ids := make([]string, len(data))
	for i, item := range data {
		ids[i] = item.(map[string]any)["id"].(string)
	}
	return ids, r
}

// expectSecret checks a signing secret's shape: whsec_ + base64 of 32 bytes.
func expectSecret(g Gomega, v any) string {
	s, ok := v.(string)
	g.Expect(ok).To(BeTrue(), "secret is not a string: %v", v)
	g.Expect(s).To(HavePrefix("whsec_"))
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
	g.Expect(err).NotTo(HaveOccurred(), "secret is not whsec_ + standard base64")
	g.Expect(raw).To(HaveLen(32))
	return s
}

// expectCodeDetail asserts {"detail": {"error": "...", "error_code": code}}
// and returns the error text.
func expectCodeDetail(t *testing.T, r response, status int, code string) string {
	t.Helper()
	expectStatusJSON(t, r, status)
	g := NewWithT(t)
	g.Expect(r.body).To(HaveLen(1), "body %s", r.raw)
	d := detail(t, r)
	g.Expect(d).To(HaveLen(2), "body %s", r.raw)
	g.Expect(d).To(HaveKeyWithValue("error_code", code), "body %s", r.raw)
	msg, _ := d["error"].(string)
	g.Expect(msg).NotTo(BeEmpty(), "body %s", r.raw)
	return msg
}

func TestWebhookAPI_CreateEndpoint(t *testing.T) {
	o := newOrg(t)
	g := NewWithT(t)
	before := time.Now().Add(-time.Second)
	r := do(t, "POST", "/v1/webhook-endpoints", o.key, map[string]any{"url": "https://203.0.113.7/switchboard",
		"events": []string{"call.ended", "call.started"}, "description": "CRM sync", "unknown_field": 1})
	expectStatusJSON(t, r, http.StatusCreated)
	ep := r.body
	id, _ := ep["id"].(string)
	g.Expect(id).To(MatchRegexp(wapiEndpointID))
	g.Expect(r.header.Get("Location")).To(Equal("/v1/webhook-endpoints/" + id))
	secret := expectSecret(g, ep["secret"])
	g.Expect(ep).To(HaveKeyWithValue("url", "https://203.0.113.7/switchboard"))
	g.Expect(ep).To(HaveKeyWithValue("events", []any{"call.started", "call.ended"}), "events are listed in lifecycle order")
	g.Expect(ep).To(HaveKeyWithValue("description", "CRM sync"))
	g.Expect(ep).To(HaveKeyWithValue("disabled", false))
	g.Expect(ep).To(HaveKeyWithValue("disabled_reason", BeNil()))
	g.Expect(ep).To(HaveKeyWithValue("status", "active"))
	g.Expect(ep).To(HaveKeyWithValue("last_delivery_at", BeNil()))
	g.Expect(ep).To(HaveKeyWithValue("last_delivery_result", BeNil()))
	g.Expect(ep["created_at"]).To(MatchRegexp(wapiTimestamp))
	created, err := time.Parse(time.RFC3339, ep["created_at"].(string))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(created).To(BeTemporally(">=", before.Truncate(time.Second)))
	g.Expect(ep).To(HaveLen(11), "unexpected fields in %s", r.raw)

	// It is a WebhookEndpoint resource, like one applied as YAML.
	res := endpointResource(t, o.ns, id)
	g.Expect(res.Name).To(HavePrefix("endpoint-"))
	g.Expect(res.Spec.URL).To(Equal("https://203.0.113.7/switchboard"))
	g.Expect(res.Spec.Events).To(ConsistOf(switchboardv1.WebhookEventType("call.ended"), switchboardv1.WebhookEventType("call.started")))
	g.Expect(res.Spec.Description).To(Equal("CRM sync"))
	g.Expect(res.Spec.SecretRef).To(BeNil())

	// Its generated Secret holds the secret returned, and goes with it.
	var s corev1.Secret
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: o.ns, Name: res.SigningSecretName()}, &s)).To(Succeed())
	g.Expect(string(s.Data[switchboardv1.WebhookSecretKey])).To(Equal(secret))
	g.Expect(string(s.Type)).To(Equal(switchboardv1.WebhookSecretType))
	g.Expect(metav1.IsControlledBy(&s, res)).To(BeTrue(), "Secret owners: %+v", s.OwnerReferences)

	// A GET right after the create finds it, without the secret.
	got := do(t, "GET", endpointPath(id), o.key, nil)
	expectStatusJSON(t, got, http.StatusOK)
	delete(ep, "secret")
	g.Expect(got.body).To(Equal(ep))

	t.Run("defaults", func(t *testing.T) {
		g := NewWithT(t)
		ep := createEndpoint(t, o.key, map[string]any{"url": "https://203.0.113.7/all"})
		g.Expect(ep).To(HaveKeyWithValue("events", wapiKinds), "no events means the call events")
		g.Expect(ep).To(HaveKeyWithValue("description", ""))
		g.Expect(ep).To(HaveKeyWithValue("disabled", false))
		g.Expect(endpointResource(t, o.ns, ep["id"].(string)).Spec.Events).To(BeEmpty())
	})
	t.Run("created disabled", func(t *testing.T) {
		g := NewWithT(t)
		ep := createEndpoint(t, o.key, map[string]any{"url": "https://203.0.113.7/off", "events": []string{}, "disabled": true})
		g.Expect(ep).To(HaveKeyWithValue("events", wapiKinds))
		g.Expect(ep).To(HaveKeyWithValue("disabled", true))
		g.Expect(ep).To(HaveKeyWithValue("status", "disabled"))
		g.Expect(ep).To(HaveKeyWithValue("disabled_reason", BeNil()))
	})
	t.Run("every endpoint has its own secret", func(t *testing.T) {
		a := createEndpoint(t, o.key, map[string]any{"url": "https://203.0.113.7/a"})
		b := createEndpoint(t, o.key, map[string]any{"url": "https://203.0.113.7/a"})
		NewWithT(t).Expect(a["secret"]).NotTo(Equal(b["secret"]))
		NewWithT(t).Expect(a["id"]).NotTo(Equal(b["id"]))
	})
}

func TestWebhookAPI_CreateValidation(t *testing.T) {
	o := newOrg(t)
	tests := []struct {
		name string
		body any
		want []validationItem
		msg  string // expected msg of the first item, if set
	}{
		{"empty body", "", []validationItem{{loc: []any{"body"}, typ: "missing"}}, ""},
		{"malformed JSON", `{"url":`, []validationItem{{loc: []any{"body"}, typ: "json_invalid", locPrefix: true}}, ""},
		{"not an object", `["https://example.com"]`, []validationItem{{loc: []any{"body"}, typ: "model_attributes_type"}}, ""},
		{"missing url", map[string]any{"events": []string{"call.ended"}},
			[]validationItem{{loc: []any{"body", "url"}, typ: "missing"}}, ""},
		{"url not a string", map[string]any{"url": 42}, []validationItem{{loc: []any{"body", "url"}, typ: "string_type", input: 42.0}}, ""},
		{"url too long", map[string]any{"url": "https://example.com/" + strings.Repeat("a", 2048)},
			[]validationItem{{loc: []any{"body", "url"}, typ: "string_too_long"}}, ""},
		{"ftp url", map[string]any{"url": "ftp://example.com/hooks"},
			[]validationItem{{loc: []any{"body", "url"}, typ: "url_not_allowed", input: "ftp://example.com/hooks"}},
			"webhook URLs must use http or https"},
		{"url with credentials", map[string]any{"url": "https://user:pw@example.com/hooks"},
			[]validationItem{{loc: []any{"body", "url"}, typ: "url_not_allowed"}},
			"webhook URLs must not contain credentials; every request is signed instead"},
		{"relative url", map[string]any{"url": "/hooks"},
			[]validationItem{{loc: []any{"body", "url"}, typ: "url_not_allowed"}}, ""},
		{"events not a list", map[string]any{"url": "https://example.com", "events": "call.ended"},
			[]validationItem{{loc: []any{"body", "events"}, typ: "list_type", input: "call.ended"}}, ""},
		{"unknown event", map[string]any{"url": "https://example.com", "events": []string{"call.ended", "call.missed"}},
			[]validationItem{{loc: []any{"body", "events", 1.0}, typ: "enum", input: "call.missed"}},
			"Input should be 'call.started', 'call.ended', 'call.analyzed', 'campaign.started', 'campaign.paused' or " +
				"'campaign.completed'"},
		{"test is not an event to subscribe to", map[string]any{"url": "https://example.com", "events": []string{"test"}},
			[]validationItem{{loc: []any{"body", "events", 0.0}, typ: "enum"}}, ""},
		{"duplicate event", map[string]any{"url": "https://example.com", "events": []string{"call.ended", "call.ended"}},
			[]validationItem{{loc: []any{"body", "events", 1.0}, typ: "value_error"}}, ""},
		{"description too long", map[string]any{"url": "https://example.com", "description": strings.Repeat("d", 513)},
			[]validationItem{{loc: []any{"body", "description"}, typ: "string_too_long"}}, ""},
		{"disabled not a bool", map[string]any{"url": "https://example.com", "disabled": "true"},
			[]validationItem{{loc: []any{"body", "disabled"}, typ: "bool_type", input: "true"}}, ""},
		{"every problem", map[string]any{"events": 1, "description": 2, "disabled": 3}, []validationItem{
			{loc: []any{"body", "url"}, typ: "missing"}, {loc: []any{"body", "events"}, typ: "list_type"},
			{loc: []any{"body", "description"}, typ: "string_type"}, {loc: []any{"body", "disabled"}, typ: "bool_type"}}, ""},
		{"key twice", `{"url":"https://example.com","url":"https://203.0.113.7"}`,
			[]validationItem{{loc: []any{"body", "url"}, typ: "duplicate_key", input: "url"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items := expectValidation(t, do(t, "POST", "/v1/webhook-endpoints", o.key, tt.body), tt.want...)
			if tt.msg != "" {
				NewWithT(t).Expect(items[0]["msg"]).To(Equal(tt.msg))
			}
		})
	}
	t.Run("body too large", func(t *testing.T) {
		r := do(t, "POST", "/v1/webhook-endpoints", o.key, `{"url":"https://example.com","description":"`+strings.Repeat("x", 64<<10)+`"}`)
		NewWithT(t).Expect(expectStringDetail(t, r, http.StatusRequestEntityTooLarge)).To(ContainSubstring("65536 bytes"))
	})
	NewWithT(t).Expect(countEndpoints(t, o.ns)).To(BeZero(), "a refused request left an endpoint behind")
}

func TestWebhookAPI_ListEndpoints(t *testing.T) {
	o := newOrg(t)
	g := NewWithT(t)
	empty, r := listIDs(t, o.key, "/v1/webhook-endpoints")
	g.Expect(empty).To(BeEmpty())
	g.Expect(r.body).To(HaveKeyWithValue("has_more", false))
	g.Expect(r.body).To(HaveKeyWithValue("next_cursor", BeNil()))

	var created []string
	for i := range 3 {
		created = append(created, createEndpoint(t, o.key, map[string]any{"url": fmt.Sprintf("https://203.0.113.7/%d", i)})["id"].(string))
	}
	var all []string
	g.Eventually(func() []string {
		all, _ = listIDs(t, o.key, "/v1/webhook-endpoints")
		return all
	}, 10*time.Second, 20*time.Millisecond).Should(ConsistOf(created))

	// Oldest first: creation time, then id (creation times are seconds).
	_, r = listIDs(t, o.key, "/v1/webhook-endpoints")
	var prev [2]string
	for _, item := range r.body["data"].([]any) {
		ep := item.(map[string]any)
		key := [2]string{ep["created_at"].(string), ep["id"].(string)}
		g.Expect(key[0] > prev[0] || (key[0] == prev[0] && key[1] > prev[1])).To(BeTrue(), "order of %s", r.raw)
		prev = key
		g.Expect(ep).NotTo(HaveKey("secret"), "a list never shows secrets")
	}

	page1, r := listIDs(t, o.key, "/v1/webhook-endpoints?limit=2")
	g.Expect(page1).To(Equal(all[:2]))
	g.Expect(r.body).To(HaveKeyWithValue("has_more", true))
	g.Expect(r.body).To(HaveKeyWithValue("next_cursor", all[1]))
	page2, r := listIDs(t, o.key, "/v1/webhook-endpoints?limit=2&cursor="+all[1])
	g.Expect(page2).To(Equal(all[2:]))
	g.Expect(r.body).To(HaveKeyWithValue("has_more", false))
	g.Expect(r.body).To(HaveKeyWithValue("next_cursor", BeNil()))
	exact, r := listIDs(t, o.key, "/v1/webhook-endpoints?limit=3")
	g.Expect(exact).To(Equal(all))
	g.Expect(r.body).To(HaveKeyWithValue("has_more", false))

	t.Run("bad queries", func(t *testing.T) {
		for query, want := range map[string]validationItem{
			"limit=0":                              {loc: []any{"query", "limit"}, typ: "greater_than_equal", input: "0"},
			"limit=101":                            {loc: []any{"query", "limit"}, typ: "less_than_equal", input: "101"},
			"limit=many":                           {loc: []any{"query", "limit"}, typ: "int_parsing", input: "many"},
			"cursor=abc":                           {loc: []any{"query", "cursor"}, typ: "string_pattern_mismatch", input: "abc"},
			"cursor=we_" + strings.Repeat("0", 32): {loc: []any{"query", "cursor"}, typ: "value_error"},
		} {
			t.Run(query, func(t *testing.T) {
				expectValidation(t, do(t, "GET", "/v1/webhook-endpoints?"+query, o.key, nil), want)
			})
		}
	})
}

func TestWebhookAPI_GetPatchDelete(t *testing.T) {
	o := newOrg(t)
	ctx := context.Background()
	id := createEndpoint(t, o.key, map[string]any{"url": "https://203.0.113.7/v1", "events": []string{"call.ended"},
		"description": "first"})["id"].(string)
	path := endpointPath(id)

	patch := func(t *testing.T, body any) map[string]any {
		t.Helper()
		r := do(t, "PATCH", path, o.key, body)
		expectStatusJSON(t, r, http.StatusOK)
		NewWithT(t).Expect(r.body).NotTo(HaveKey("secret"))
		return r.body
	}

	t.Run("change fields", func(t *testing.T) {
		g := NewWithT(t)
		ep := patch(t, map[string]any{"url": "https://203.0.113.7/v2", "events": []string{"call.analyzed", "call.started"},
			"description": "second"})
		g.Expect(ep).To(HaveKeyWithValue("id", id))
		g.Expect(ep).To(HaveKeyWithValue("url", "https://203.0.113.7/v2"))
		g.Expect(ep).To(HaveKeyWithValue("events", []any{"call.started", "call.analyzed"}))
		g.Expect(ep).To(HaveKeyWithValue("description", "second"))
		res := endpointResource(t, o.ns, id)
		g.Expect(res.Spec.URL).To(Equal("https://203.0.113.7/v2"))
		g.Expect(res.Spec.Description).To(Equal("second"))
	})
	t.Run("absent fields stay, null resets", func(t *testing.T) {
		g := NewWithT(t)
		ep := patch(t, map[string]any{})
		g.Expect(ep).To(HaveKeyWithValue("description", "second"))
		ep = patch(t, map[string]any{"events": nil, "description": nil})
		g.Expect(ep).To(HaveKeyWithValue("events", wapiKinds))
		g.Expect(ep).To(HaveKeyWithValue("description", ""))
		g.Expect(ep).To(HaveKeyWithValue("url", "https://203.0.113.7/v2"))
		res := endpointResource(t, o.ns, id)
		g.Expect(res.Spec.Events).To(BeEmpty())
		g.Expect(res.Spec.Description).To(BeEmpty())
	})
	t.Run("disable and re-enable", func(t *testing.T) {
		g := NewWithT(t)
		ep := patch(t, map[string]any{"disabled": true})
		g.Expect(ep).To(HaveKeyWithValue("disabled", true))
		g.Expect(ep).To(HaveKeyWithValue("status", "disabled"))
		g.Expect(ep).To(HaveKeyWithValue("disabled_reason", BeNil()))

		// Switchboard disabled it (say the receiver answered 410).
		res := endpointResource(t, o.ns, id)
		base := client.MergeFrom(res.DeepCopy())
		res.Annotations = map[string]string{switchboardv1.WebhookDisabledReasonAnnotation: "The receiver answered 410 Gone."}
		g.Expect(k8s.Patch(ctx, res, base)).To(Succeed())
		g.Eventually(func() any {
			return do(t, "GET", path, o.key, nil).body["disabled_reason"]
		}, 10*time.Second, 20*time.Millisecond).Should(Equal("The receiver answered 410 Gone."))

		ep = patch(t, map[string]any{"disabled": false})
		g.Expect(ep).To(HaveKeyWithValue("disabled", false))
		g.Expect(ep).To(HaveKeyWithValue("status", "active"))
		g.Expect(ep).To(HaveKeyWithValue("disabled_reason", BeNil()))
		g.Expect(endpointResource(t, o.ns, id).Annotations).NotTo(HaveKey(switchboardv1.WebhookDisabledReasonAnnotation),
			"re-enabling clears the reason")
	})
	t.Run("invalid changes", func(t *testing.T) {
		for name, tc := range map[string]struct {
			body any
			want validationItem
		}{
			"null url":      {map[string]any{"url": nil}, validationItem{loc: []any{"body", "url"}, typ: "string_type"}},
			"null disabled": {map[string]any{"disabled": nil}, validationItem{loc: []any{"body", "disabled"}, typ: "bool_type"}},
			"refused url":   {map[string]any{"url": "ftp://example.com"}, validationItem{loc: []any{"body", "url"}, typ: "url_not_allowed"}},
			"bad events":    {map[string]any{"events": []string{"call.ended", "nope"}}, validationItem{loc: []any{"body", "events", 1.0}, typ: "enum"}},
			"empty body":    {"", validationItem{loc: []any{"body"}, typ: "missing"}},
		} {
			t.Run(name, func(t *testing.T) {
				expectValidation(t, do(t, "PATCH", path, o.key, tc.body), tc.want)
			})
		}
		NewWithT(t).Expect(endpointResource(t, o.ns, id).Spec.URL).To(Equal("https://203.0.113.7/v2"))
	})
	t.Run("delete", func(t *testing.T) {
		g := NewWithT(t)
		res := endpointResource(t, o.ns, id)
		r := do(t, "DELETE", path, o.key, nil)
		g.Expect(r.status).To(Equal(http.StatusNoContent), "body %s", r.raw)
		g.Expect(r.raw).To(BeEmpty())
		err := k8s.Get(ctx, client.ObjectKeyFromObject(res), &switchboardv1.WebhookEndpoint{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the WebhookEndpoint is still there: %v", err)
		g.Eventually(func() int { return do(t, "GET", path, o.key, nil).status }, 10*time.Second, 20*time.Millisecond).
			Should(Equal(http.StatusNotFound))
		g.Expect(expectStringDetail(t, do(t, "GET", path, o.key, nil), http.StatusNotFound)).To(Equal("Webhook endpoint not found."))
		expectStringDetail(t, do(t, "DELETE", path, o.key, nil), http.StatusNotFound)
		expectStringDetail(t, do(t, "PATCH", path, o.key, map[string]any{"description": "x"}), http.StatusNotFound)
	})
}

// An endpoint applied as YAML is the same thing as one registered over REST.
func TestWebhookAPI_EndpointAppliedAsYAML(t *testing.T) {
	o := newOrg(t)
	g := NewWithT(t)
	sink := newHookSink(t, http.StatusOK)
	ep := &switchboardv1.WebhookEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: "crm-hooks"},
		Spec: switchboardv1.WebhookEndpointSpec{URL: sink.url(), Events: []switchboardv1.WebhookEventType{"call.analyzed"},
			Description: "applied"}}
	g.Expect(k8s.Create(context.Background(), ep)).To(Succeed())
	id := ep.ResolvedID()

	// At once, even before the cache has it.
	r := do(t, "GET", endpointPath(id), o.key, nil)
	expectStatusJSON(t, r, http.StatusOK)
	g.Expect(r.body).To(HaveKeyWithValue("id", id))
	g.Expect(r.body).To(HaveKeyWithValue("url", sink.url()))
	g.Expect(r.body).To(HaveKeyWithValue("events", []any{"call.analyzed"}))
	g.Expect(r.body).To(HaveKeyWithValue("description", "applied"))
	g.Eventually(func() []string {
		ids, _ := listIDs(t, o.key, "/v1/webhook-endpoints")
		return ids
	}, 10*time.Second, 20*time.Millisecond).Should(ContainElement(id))

	// Its secret is the one Switchboard generated; a test event is signed
	// with it.
	var secret corev1.Secret
	g.Eventually(func() error {
		return k8s.Get(context.Background(), client.ObjectKey{Namespace: o.ns, Name: ep.SigningSecretName()}, &secret)
	}, 10*time.Second, 20*time.Millisecond).Should(Succeed())
	res := do(t, "POST", endpointPath(id, "/test"), o.key, nil)
	expectStatusJSON(t, res, http.StatusOK)
	g.Expect(res.body).To(HaveKeyWithValue("status", "succeeded"))
	got := sink.requests()
	g.Expect(got).To(HaveLen(1))
	wh, err := standardwebhooks.NewWebhook(string(secret.Data[switchboardv1.WebhookSecretKey]))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(wh.Verify(got[0].body, got[0].header)).To(Succeed())
}

func TestWebhookAPI_OrganizationsAreIsolated(t *testing.T) {
	a, b := newOrg(t), newOrg(t)
	g := NewWithT(t)
	sink := newHookSink(t, http.StatusOK)
	id := createEndpoint(t, a.key, map[string]any{"url": sink.url(), "description": "A's"})["id"].(string)
	test := do(t, "POST", endpointPath(id, "/test"), a.key, nil)
	expectStatusJSON(t, test, http.StatusOK)
	dlv := test.body["delivery_id"].(string)
	g.Expect(sink.requests()).To(HaveLen(1))

	for _, req := range []struct {
		method, path string
		body         any
	}{
		{"GET", endpointPath(id), nil},
		{"PATCH", endpointPath(id), map[string]any{"description": "B's now"}},
		{"DELETE", endpointPath(id), nil},
		{"POST", endpointPath(id, "/rotate-secret"), nil},
		{"POST", endpointPath(id, "/test"), map[string]any{}},
		{"GET", endpointPath(id, "/deliveries"), nil},
		{"GET", endpointPath(id, "/deliveries/", dlv), nil},
		{"POST", endpointPath(id, "/deliveries/", dlv, "/retry"), nil},
	} {
		t.Run(req.method+" "+req.path, func(t *testing.T) {
			r := do(t, req.method, req.path, b.key, req.body)
			NewWithT(t).Expect(expectStringDetail(t, r, http.StatusNotFound)).To(Equal("Webhook endpoint not found."))
		})
	}
	ids, _ := listIDs(t, b.key, "/v1/webhook-endpoints")
	g.Expect(ids).To(BeEmpty(), "B lists A's endpoint")
	g.Expect(sink.requests()).To(HaveLen(1), "B sent a test event to A's endpoint")
	r := do(t, "GET", endpointPath(id), a.key, nil)
	expectStatusJSON(t, r, http.StatusOK)
	g.Expect(r.body).To(HaveKeyWithValue("description", "A's"))
}

func TestWebhookAPI_NeedsKey(t *testing.T) {
	id := "we_" + randHex(16)
	dlv := "dlv_" + randHex(16)
	for _, req := range []struct{ method, path string }{
		{"POST", "/v1/webhook-endpoints"},
		{"GET", "/v1/webhook-endpoints"},
		{"GET", endpointPath(id)},
		{"PATCH", endpointPath(id)},
		{"DELETE", endpointPath(id)},
		{"POST", endpointPath(id, "/rotate-secret")},
		{"POST", endpointPath(id, "/test")},
		{"GET", endpointPath(id, "/deliveries")},
		{"GET", endpointPath(id, "/deliveries/", dlv)},
		{"POST", endpointPath(id, "/deliveries/", dlv, "/retry")},
	} {
		t.Run(req.method+" "+req.path, func(t *testing.T) {
			r := do(t, req.method, req.path, "", nil)
			expectStringDetail(t, r, http.StatusUnauthorized)
			NewWithT(t).Expect(r.header.Get("WWW-Authenticate")).To(HavePrefix("Bearer"))
			expectStringDetail(t, do(t, req.method, req.path, "sk_test_"+randHex(16), nil), http.StatusUnauthorized)
		})
	}
}

func TestWebhookAPI_NotFound(t *testing.T) {
	o := newOrg(t)
	unknown := "we_" + randHex(16)
	for _, id := range []string{unknown, "nope", "we_123", "WE_" + randHex(16), "we_" + strings.ToUpper(randHex(16))} {
		for _, req := range []struct{ method, suffix string }{
			{"GET", ""}, {"PATCH", ""}, {"DELETE", ""}, {"POST", "/rotate-secret"}, {"POST", "/test"},
			{"GET", "/deliveries"}, {"GET", "/deliveries/dlv_" + randHex(16)},
		} {
			t.Run(req.method+" "+id+req.suffix, func(t *testing.T) {
				r := do(t, req.method, endpointPath(id, req.suffix), o.key, map[string]any{})
				NewWithT(t).Expect(expectStringDetail(t, r, http.StatusNotFound)).To(Equal("Webhook endpoint not found."))
			})
		}
	}
	id := createEndpoint(t, o.key, map[string]any{"url": "https://203.0.113.7"})["id"].(string)
	for _, path := range []string{
		endpointPath(id, "/deliveries/dlv_"+randHex(16)),
		endpointPath(id, "/deliveries/dlv_"+randHex(16), "/retry"),
		endpointPath(id, "/deliveries/not-a-delivery"),
		endpointPath(id, "/deliveries/not-a-delivery/retry"),
	} {
		method := "GET"
		if strings.HasSuffix(path, "/retry") {
			method = "POST"
		}
		t.Run(method+" "+path, func(t *testing.T) {
			r := do(t, method, path, o.key, nil)
			NewWithT(t).Expect(expectStringDetail(t, r, http.StatusNotFound)).To(Equal("Delivery not found."))
		})
	}
}

func TestWebhookAPI_RotateSecret(t *testing.T) {
	o := newOrg(t)
	g := NewWithT(t)
	sink := newHookSink(t, http.StatusOK)
	created := createEndpoint(t, o.key, map[string]any{"url": sink.url()})
	id, first := created["id"].(string), created["secret"].(string)

	before := time.Now()
	r := do(t, "POST", endpointPath(id, "/rotate-secret"), o.key, nil)
	expectStatusJSON(t, r, http.StatusOK)
	second := expectSecret(g, r.body["secret"])
	g.Expect(second).NotTo(Equal(first))
	g.Expect(r.body).To(HaveKeyWithValue("id", id))
	g.Expect(r.body).To(HaveKeyWithValue("url", sink.url()))
	expires, err := time.Parse(time.RFC3339, r.body["previous_secret_expires_at"].(string))
	g.Expect(err).NotTo(HaveOccurred(), "previous_secret_expires_at: %s", r.raw)
	g.Expect(expires).To(BeTemporally("~", before.Add(24*time.Hour), 5*time.Second))

	// The Secret holds both, and when the old one stops signing.
	res := endpointResource(t, o.ns, id)
	var s corev1.Secret
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: o.ns, Name: res.SigningSecretName()}, &s)).To(Succeed())
	g.Expect(string(s.Data[switchboardv1.WebhookSecretKey])).To(Equal(second))
	g.Expect(string(s.Data[switchboardv1.WebhookPreviousSecretKey])).To(Equal(first))
	at, err := time.Parse(time.RFC3339, s.Annotations[switchboardv1.WebhookPreviousExpiresAnnotation])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(at).To(BeTemporally("~", expires, time.Second))

	// During the overlap, events verify with either secret, so receivers
	// can switch at their own pace.
	test := do(t, "POST", endpointPath(id, "/test"), o.key, nil)
	expectStatusJSON(t, test, http.StatusOK)
	got := sink.requests()
	g.Expect(got).To(HaveLen(1))
	for _, secret := range []string{first, second} {
		wh, err := standardwebhooks.NewWebhook(secret)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(wh.Verify(got[0].body, got[0].header)).To(Succeed())
	}

	// Rotating again retires the first secret.
	r = do(t, "POST", endpointPath(id, "/rotate-secret"), o.key, nil)
	expectStatusJSON(t, r, http.StatusOK)
	third := expectSecret(g, r.body["secret"])
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(&s), &s)).To(Succeed())
	g.Expect(string(s.Data[switchboardv1.WebhookSecretKey])).To(Equal(third))
	g.Expect(string(s.Data[switchboardv1.WebhookPreviousSecretKey])).To(Equal(second))
}

// An endpoint whose spec.secretRef names a Secret that does not exist
// cannot sign: test says so. Rotation is never done with an API key for a
// Secret the platform team declared, there or not.
func TestWebhookAPI_SecretMissing(t *testing.T) {
	o := newOrg(t)
	g := NewWithT(t)
	sink := newHookSink(t, http.StatusOK)
	ep := &switchboardv1.WebhookEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: "byo-secret"},
		Spec: switchboardv1.WebhookEndpointSpec{URL: sink.url(), SecretRef: &switchboardv1.SecretReference{Name: "not-there"}}}
	g.Expect(k8s.Create(context.Background(), ep)).To(Succeed())
	id := ep.ResolvedID()

	msg := expectCodeDetail(t, do(t, "POST", endpointPath(id, "/rotate-secret"), o.key, nil), http.StatusConflict, "secret_managed_in_cluster")
	g.Expect(msg).To(ContainSubstring("not-there"))
	msg = expectCodeDetail(t, do(t, "POST", endpointPath(id, "/test"), o.key, nil), http.StatusConflict, "secret_missing")
	g.Expect(msg).To(ContainSubstring("not-there"))
	g.Expect(sink.requests()).To(BeEmpty())

	// A Secret without a usable secret is no better.
	g.Expect(k8s.Create(context.Background(), newSecretObject(o.ns, "not-there", "not base64!"))).To(Succeed())
	expectCodeDetail(t, do(t, "POST", endpointPath(id, "/test"), o.key, nil), http.StatusConflict, "secret_missing")
	g.Expect(sink.requests()).To(BeEmpty())
	ids, _ := listIDs(t, o.key, endpointPath(id, "/deliveries"))
	g.Expect(ids).To(BeEmpty(), "a test that was not sent is not in the delivery log")

	// Once the Secret is right, the endpoint's own secret signs.
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte(randHex(16)))
	var s corev1.Secret
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: o.ns, Name: "not-there"}, &s)).To(Succeed())
	s.Data[switchboardv1.WebhookSecretKey] = []byte(secret)
	g.Expect(k8s.Update(context.Background(), &s)).To(Succeed())
	r := do(t, "POST", endpointPath(id, "/test"), o.key, nil)
	expectStatusJSON(t, r, http.StatusOK)
	g.Expect(r.body).To(HaveKeyWithValue("status", "succeeded"))
	wh, err := standardwebhooks.NewWebhook(secret)
	g.Expect(err).NotTo(HaveOccurred())
	got := sink.requests()
	g.Expect(got).To(HaveLen(1))
	g.Expect(wh.Verify(got[0].body, got[0].header)).To(Succeed())
}

// testEvent posts a test event and checks the response's shape.
func testEvent(t *testing.T, key, id string, body any) map[string]any {
	t.Helper()
	r := do(t, "POST", endpointPath(id, "/test"), key, body)
	expectStatusJSON(t, r, http.StatusOK)
	g := NewWithT(t)
	g.Expect(r.body).To(HaveLen(4), "want delivery_id, status, status_code, error: %s", r.raw)
	g.Expect(r.body["delivery_id"]).To(MatchRegexp(wapiDeliveryID))
	g.Expect(r.body).To(HaveKey("status_code"))
	g.Expect(r.body).To(HaveKey("error"))
	return r.body
}

func TestWebhookAPI_TestEvent(t *testing.T) {
	o := newOrg(t)
	g := NewWithT(t)
	sink := newHookSink(t, http.StatusOK)
	created := createEndpoint(t, o.key, map[string]any{"url": sink.url(), "events": []string{"call.started"}})
	id, secret := created["id"].(string), created["secret"].(string)

	res := testEvent(t, o.key, id, nil)
	g.Expect(res).To(HaveKeyWithValue("status", "succeeded"))
	g.Expect(res).To(HaveKeyWithValue("status_code", 200.0))
	g.Expect(res).To(HaveKeyWithValue("error", BeNil()))
	dlv := res["delivery_id"].(string)

	got := sink.requests()
	g.Expect(got).To(HaveLen(1), "one attempt")
	req := got[0]
	g.Expect(req.header.Get("X-Service-Delivery-Id")).To(Equal(dlv))
	g.Expect(req.header.Get("X-Service-Event")).To(Equal("call.ended"), "the default sample is call.ended")
	g.Expect(req.header.Get("X-Service-Signature")).NotTo(BeEmpty())
	g.Expect(req.header.Get("Authorization")).To(BeEmpty())
	wh, err := standardwebhooks.NewWebhook(secret)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(wh.Verify(req.body, req.header)).To(Succeed(), "signed with the endpoint's real secret")
	var envelope struct {
		Event string         `json:"event"`
		Call  map[string]any `json:"call"`
	}
	g.Expect(json.Unmarshal(req.body, &envelope)).To(Succeed())
	g.Expect(envelope.Event).To(Equal("call.ended"))
	g.Expect(envelope.Call).To(HaveKeyWithValue("call_id", "call_test_00000000"))
	g.Expect(envelope.Call).To(HaveKeyWithValue("metadata", map[string]any{"test": true}))
	g.Expect(envelope.Call).To(HaveKeyWithValue("status", "ended"))

	// The delivery log has it: event test, one attempt, nothing pending.
	r := do(t, "GET", endpointPath(id, "/deliveries/", dlv), o.key, nil)
	expectStatusJSON(t, r, http.StatusOK)
	d := r.body
	g.Expect(d).To(HaveKeyWithValue("id", dlv))
	g.Expect(d).To(HaveKeyWithValue("endpoint_id", id))
	g.Expect(d).To(HaveKeyWithValue("event", "test"))
	g.Expect(d).To(HaveKeyWithValue("call_id", "call_test_00000000"))
	g.Expect(d).To(HaveKeyWithValue("status", "succeeded"))
	g.Expect(d).To(HaveKeyWithValue("attempt_count", 1.0))
	g.Expect(d).To(HaveKeyWithValue("next_attempt_at", BeNil()))
	g.Expect(d).To(HaveKeyWithValue("last_status_code", 200.0))
	g.Expect(d).To(HaveKeyWithValue("last_error", BeNil()))
	g.Expect(d).To(HaveKeyWithValue("retry_requested_at", BeNil()))
	g.Expect(d["created_at"]).To(MatchRegexp(wapiTimestamp))
	g.Expect(d["completed_at"]).To(MatchRegexp(wapiTimestamp))
	g.Expect(d["attempts"]).To(HaveLen(1))
	attempt := d["attempts"].([]any)[0].(map[string]any)
	g.Expect(attempt).To(HaveKeyWithValue("trigger", "test"))
	g.Expect(attempt).To(HaveKeyWithValue("status_code", 200.0))
	g.Expect(attempt).To(HaveKeyWithValue("error", BeNil()))
	g.Expect(attempt).To(HaveKeyWithValue("response", "OK"))
	g.Expect(attempt["attempted_at"]).To(MatchRegexp(wapiTimestamp))
	g.Expect(attempt["duration_ms"]).To(BeNumerically(">=", 0))
	g.Expect(d).To(HaveLen(13), "unexpected fields in %s", r.raw)
	// One precision for every time (milliseconds), so they compare as text:
	// the delivery is created, attempted, then completed.
	createdAt, attempted, completed := d["created_at"].(string), attempt["attempted_at"].(string), d["completed_at"].(string)
	g.Expect(createdAt <= attempted && attempted <= completed).To(BeTrue(),
		"created %s, attempted %s, completed %s: out of order", createdAt, attempted, completed)

	g.Eventually(func() []string {
		ids, _ := listIDs(t, o.key, endpointPath(id, "/deliveries"))
		return ids
	}, 10*time.Second, 20*time.Millisecond).Should(Equal([]string{dlv}))
	var filtered []string
	for query, want := range map[string][]string{
		"event=test": {dlv}, "event=call.ended": {}, "status=succeeded": {dlv}, "status=failed": {},
		"event=test&status=succeeded": {dlv},
	} {
		filtered, _ = listIDs(t, o.key, endpointPath(id, "/deliveries?", query))
		g.Expect(filtered).To(Equal(want), query)
	}

	t.Run("test deliveries are not retried", func(t *testing.T) {
		r := do(t, "POST", endpointPath(id, "/deliveries/", dlv, "/retry"), o.key, nil)
		msg := expectCodeDetail(t, r, http.StatusConflict, "test_not_retried")
		NewWithT(t).Expect(msg).To(Equal("Test deliveries are sent once and not retried; send a new test event."))
		NewWithT(t).Expect(sink.requests()).To(HaveLen(1))
	})
	t.Run("every kind has a sample", func(t *testing.T) {
		for _, kind := range []string{"call.started", "call.ended", "call.analyzed"} {
			g := NewWithT(t)
			n := len(sink.requests())
			res := testEvent(t, o.key, id, map[string]any{"event": kind})
			g.Expect(res).To(HaveKeyWithValue("status", "succeeded"))
			got := sink.requests()
			g.Expect(got).To(HaveLen(n + 1))
			last := got[n]
			g.Expect(last.header.Get("X-Service-Event")).To(Equal(kind))
			g.Expect(last.header.Get("X-Service-Delivery-Id")).To(Equal(res["delivery_id"]))
			g.Expect(json.Unmarshal(last.body, &envelope)).To(Succeed())
			g.Expect(envelope.Event).To(Equal(kind))
			g.Expect(envelope.Call).To(HaveKeyWithValue("call_id", "call_test_00000000"))
			g.Expect(wh.Verify(last.body, last.header)).To(Succeed())
			if kind == "call.analyzed" {
				g.Expect(envelope.Call["analysis"]).NotTo(BeNil())
			}
		}
	})
	t.Run("right after the URL changes", func(t *testing.T) {
		g := NewWithT(t)
		moved := newHookSink(t, http.StatusNoContent)
		r := do(t, "PATCH", endpointPath(id), o.key, map[string]any{"url": moved.url()})
		expectStatusJSON(t, r, http.StatusOK)
		n := len(sink.requests())
		res := testEvent(t, o.key, id, nil)
		g.Expect(res).To(HaveKeyWithValue("status_code", 204.0))
		g.Expect(moved.requests()).To(HaveLen(1), "the test went to the old URL")
		g.Expect(sink.requests()).To(HaveLen(n))
		r = do(t, "PATCH", endpointPath(id), o.key, map[string]any{"url": sink.url()})
		expectStatusJSON(t, r, http.StatusOK)
	})
	t.Run("bad bodies", func(t *testing.T) {
		n := len(sink.requests())
		for name, tc := range map[string]struct {
			body any
			want validationItem
		}{
			"unknown kind":  {map[string]any{"event": "call.missed"}, validationItem{loc: []any{"body", "event"}, typ: "enum", input: "call.missed"}},
			"test kind":     {map[string]any{"event": "test"}, validationItem{loc: []any{"body", "event"}, typ: "enum"}},
			"not a string":  {map[string]any{"event": 1}, validationItem{loc: []any{"body", "event"}, typ: "string_type"}},
			"not an object": {"[]", validationItem{loc: []any{"body"}, typ: "model_attributes_type"}},
			"malformed":     {"{", validationItem{loc: []any{"body"}, typ: "json_invalid", locPrefix: true}},
		} {
			t.Run(name, func(t *testing.T) {
				expectValidation(t, do(t, "POST", endpointPath(id, "/test"), o.key, tc.body), tc.want)
			})
		}
		NewWithT(t).Expect(sink.requests()).To(HaveLen(n), "a refused test was sent")
		testEvent(t, o.key, id, map[string]any{}) // {} is the default
	})
}

// One row per outcome of a test send: what the receiver did, what the API answers.
func TestWebhookAPI_TestEventResults(t *testing.T) {
	o := newOrg(t)
	tests := []struct {
		name   string
		status int // the receiver's answer; 0: nothing listens
		want   string
	}{
		{"2xx succeeds", http.StatusOK, "succeeded"},
		{"202 succeeds", http.StatusAccepted, "succeeded"},
		{"401 unauthorized", http.StatusUnauthorized, "failed"},
		{"403 forbidden", http.StatusForbidden, "failed"},
		{"404 wrong path", http.StatusNotFound, "failed"},
		{"500 handler failed", http.StatusInternalServerError, "failed"},
		{"503 handler failed", http.StatusServiceUnavailable, "failed"},
		{"connection failed", 0, "failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			url := closedPortURL(t)
			var sink *hookSink
			if tt.status != 0 {
				sink = newHookSink(t, tt.status)
				url = sink.url()
			}
			id := createEndpoint(t, o.key, map[string]any{"url": url})["id"].(string)
			res := testEvent(t, o.key, id, map[string]any{"event": "call.ended"})
			g.Expect(res).To(HaveKeyWithValue("status", tt.want))
			if tt.status != 0 {
				g.Expect(res).To(HaveKeyWithValue("status_code", float64(tt.status)))
				g.Expect(res).To(HaveKeyWithValue("error", BeNil()), "a response is not an error")
				g.Expect(sink.requests()).To(HaveLen(1), "one attempt, no retries")
			} else {
				g.Expect(res).To(HaveKeyWithValue("status_code", BeNil()))
				g.Expect(res["error"]).To(ContainSubstring("refused"))
			}

			r := do(t, "GET", endpointPath(id, "/deliveries/", res["delivery_id"].(string)), o.key, nil)
			expectStatusJSON(t, r, http.StatusOK)
			g.Expect(r.body).To(HaveKeyWithValue("status", tt.want))
			g.Expect(r.body).To(HaveKeyWithValue("attempt_count", 1.0))
			g.Expect(r.body).To(HaveKeyWithValue("next_attempt_at", BeNil()), "a test is never retried")
			if tt.status == 0 {
				g.Expect(r.body).To(HaveKeyWithValue("last_status_code", BeNil()))
				g.Expect(r.body["last_error"]).To(Equal(res["error"]))
			} else {
				g.Expect(r.body).To(HaveKeyWithValue("last_status_code", float64(tt.status)))
			}
			if sink != nil {
				time.Sleep(200 * time.Millisecond)
				g.Expect(sink.requests()).To(HaveLen(1), "a failed test was retried")
			}
		})
	}
}

// A test event to a URL the policy refuses is not sent, nor recorded.
func TestWebhookAPI_TestEventURLNotAllowed(t *testing.T) {
	o := newOrg(t)
	g := NewWithT(t)
	// The CRD accepts credentials in the URL; the URL policy does not.
	ep := &switchboardv1.WebhookEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: "with-password"},
		Spec: switchboardv1.WebhookEndpointSpec{URL: "http://user:pw@127.0.0.1:9/hooks"}}
	g.Expect(k8s.Create(context.Background(), ep)).To(Succeed())
	id := ep.ResolvedID()
	// The endpoint reconciler generates its Secret even so.
	g.Eventually(func() error {
		return k8s.Get(context.Background(), client.ObjectKey{Namespace: o.ns, Name: ep.SigningSecretName()}, &corev1.Secret{})
	}, 10*time.Second, 20*time.Millisecond).Should(Succeed())

	msg := expectCodeDetail(t, do(t, "POST", endpointPath(id, "/test"), o.key, nil), http.StatusUnprocessableEntity, "url_not_allowed")
	g.Expect(msg).To(Equal("webhook URLs must not contain credentials; every request is signed instead"))
	logged, err := historyStore.ListDeliveries(context.Background(), o.ns, history.DeliveryQuery{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(logged).To(BeEmpty(), "a refused test was recorded")
}

// wapiDelivery stores a delivery of a call event directly in the delivery
// log, with the given final status (nil: pending, never due).
func wapiDelivery(t *testing.T, ep *switchboardv1.WebhookEndpoint, event string, status *history.DeliveryStatus) string {
	t.Helper()
	g := NewWithT(t)
	hexID := randHex(16)
	d := &history.Delivery{
		ObjectMeta: metav1.ObjectMeta{Namespace: ep.Namespace, Name: "dlv-" + hexID, Labels: map[string]string{
			history.DeliveryEndpointLabel: ep.Name, history.DeliveryEventLabel: event,
			history.DeliveryCallLabel: "call-" + strings.Repeat("0", 32)}},
		Spec: history.DeliverySpec{DeliveryID: "dlv_" + hexID, Event: event,
			EndpointRef: history.ObjectName{Name: ep.Name}, EndpointID: ep.ResolvedID(),
			// A call that does not exist: the delivery worker leaves it be.
			CallRef: &history.ObjectName{Name: "call-" + strings.Repeat("0", 32)}, CallID: "call_" + strings.Repeat("0", 32)},
	}
	d.CreationTimestamp = metav1.NewTime(time.Now())
	if status != nil {
		d.Status = *status
	}
	// Not due: the worker never picks it up unless a retry is asked for.
	g.Expect(historyStore.SaveDelivery(context.Background(), d, time.Time{})).To(Succeed())
	return d.Spec.DeliveryID
}

func TestWebhookAPI_DeliveryLog(t *testing.T) {
	o := newOrg(t)
	g := NewWithT(t)
	id := createEndpoint(t, o.key, map[string]any{"url": closedPortURL(t)})["id"].(string)
	ep := endpointResource(t, o.ns, id)
	now := time.Now()
	failed := &history.DeliveryStatus{Phase: history.DeliveryFailed, AttemptCount: 1, ScheduledAttempts: 1,
		LastStatusCode: 500, LastError: "receiver answered 500", CompletedAt: &metav1.Time{Time: now},
		Attempts: []history.DeliveryAttempt{{AttemptedAt: metav1.MicroTime{Time: now}, StatusCode: 500, DurationMS: 7,
			Response: "boom", Trigger: history.TriggerScheduled}}}
	succeeded := &history.DeliveryStatus{Phase: history.DeliverySucceeded, AttemptCount: 1,
		LastStatusCode: 200, CompletedAt: &metav1.Time{Time: now},
		Attempts: []history.DeliveryAttempt{{AttemptedAt: metav1.MicroTime{Time: now}, StatusCode: 200, Trigger: history.TriggerScheduled}}}
	byID := map[string]string{
		wapiDelivery(t, ep, "call.started", succeeded): "call.started",
		wapiDelivery(t, ep, "call.ended", failed):      "call.ended",
		wapiDelivery(t, ep, "call.analyzed", failed):   "call.analyzed",
	}
	test := testEvent(t, o.key, id, nil)["delivery_id"].(string) // failed: nothing listens
	byID[test] = "test"

	// Another endpoint's deliveries are not in this log.
	other := createEndpoint(t, o.key, map[string]any{"url": closedPortURL(t)})["id"].(string)
	otherTest := testEvent(t, o.key, other, nil)["delivery_id"].(string)

	var all []string
	g.Eventually(func() []string {
		all, _ = listIDs(t, o.key, endpointPath(id, "/deliveries"))
		return all
	}, 10*time.Second, 20*time.Millisecond).Should(HaveLen(4))
	g.Expect(all).NotTo(ContainElement(otherTest))

	// Newest first by creation time (kept to the nanosecond, shown to the
	// millisecond: equal shown times are in their true order).
	_, r := listIDs(t, o.key, endpointPath(id, "/deliveries"))
	data := r.body["data"].([]any)
	for i := 1; i < len(data); i++ {
		prev, cur := data[i-1].(map[string]any), data[i].(map[string]any)
		g.Expect(prev["created_at"].(string) >= cur["created_at"].(string)).To(BeTrue(), "order of %s", r.raw)
	}
	for _, item := range data {
		d := item.(map[string]any)
		g.Expect(d).To(HaveKeyWithValue("event", byID[d["id"].(string)]))
		g.Expect(d).To(HaveKeyWithValue("endpoint_id", id))
	}

	t.Run("filters", func(t *testing.T) {
		g := NewWithT(t)
		only := func(query string) []string {
			ids, _ := listIDs(t, o.key, endpointPath(id, "/deliveries?", query))
			return ids
		}
		g.Expect(only("status=succeeded")).To(HaveLen(1))
		g.Expect(byID[only("status=succeeded")[0]]).To(Equal("call.started"))
		g.Expect(only("status=failed")).To(HaveLen(3))
		g.Expect(only("status=pending")).To(BeEmpty())
		g.Expect(only("event=test")).To(Equal([]string{test}))
		g.Expect(only("event=call.ended&status=failed")).To(HaveLen(1))
		g.Expect(only("event=call.ended&status=succeeded")).To(BeEmpty())
	})
	t.Run("pages", func(t *testing.T) {
		g := NewWithT(t)
		page1, r := listIDs(t, o.key, endpointPath(id, "/deliveries?limit=3"))
		g.Expect(page1).To(Equal(all[:3]))
		g.Expect(r.body).To(HaveKeyWithValue("has_more", true))
		g.Expect(r.body).To(HaveKeyWithValue("next_cursor", all[2]))
		page2, r := listIDs(t, o.key, endpointPath(id, "/deliveries?limit=3&cursor=", all[2]))
		g.Expect(page2).To(Equal(all[3:]))
		g.Expect(r.body).To(HaveKeyWithValue("has_more", false))
		g.Expect(r.body).To(HaveKeyWithValue("next_cursor", BeNil()))
		// A cursor with a filter continues the filtered list.
		failed, _ := listIDs(t, o.key, endpointPath(id, "/deliveries?status=failed"))
		f1, r := listIDs(t, o.key, endpointPath(id, "/deliveries?status=failed&limit=1"))
		g.Expect(f1).To(Equal(failed[:1]))
		f2, _ := listIDs(t, o.key, endpointPath(id, "/deliveries?status=failed&limit=5&cursor=", r.body["next_cursor"].(string)))
		g.Expect(f2).To(Equal(failed[1:]))
	})
	t.Run("bad queries", func(t *testing.T) {
		for query, want := range map[string]validationItem{
			"status=done":  {loc: []any{"query", "status"}, typ: "enum", input: "done"},
			"event=call.x": {loc: []any{"query", "event"}, typ: "enum", input: "call.x"},
			"limit=0":      {loc: []any{"query", "limit"}, typ: "greater_than_equal"},
			"limit=1000":   {loc: []any{"query", "limit"}, typ: "less_than_equal"},
			"cursor=we_1":  {loc: []any{"query", "cursor"}, typ: "string_pattern_mismatch"},
			"cursor=" + test[:4] + strings.Repeat("0", 32): {loc: []any{"query", "cursor"}, typ: "value_error"},
			"cursor=" + otherTest:                          {loc: []any{"query", "cursor"}, typ: "value_error"},
		} {
			t.Run(query, func(t *testing.T) {
				expectValidation(t, do(t, "GET", endpointPath(id, "/deliveries?", query), o.key, nil), want)
			})
		}
	})
	t.Run("get one", func(t *testing.T) {
		g := NewWithT(t)
		for dlv, event := range byID {
			r := do(t, "GET", endpointPath(id, "/deliveries/", dlv), o.key, nil)
			expectStatusJSON(t, r, http.StatusOK)
			g.Expect(r.body).To(HaveKeyWithValue("id", dlv))
			g.Expect(r.body).To(HaveKeyWithValue("event", event))
			if event == "call.ended" {
				g.Expect(r.body).To(HaveKeyWithValue("call_id", "call_"+strings.Repeat("0", 32)))
				g.Expect(r.body).To(HaveKeyWithValue("status", "failed"))
				g.Expect(r.body).To(HaveKeyWithValue("last_status_code", 500.0))
				g.Expect(r.body).To(HaveKeyWithValue("last_error", "receiver answered 500"))
				g.Expect(r.body["attempts"]).To(ConsistOf(HaveKeyWithValue("response", "boom")))
			}
		}
		// Another endpoint's delivery, asked for under this endpoint.
		r := do(t, "GET", endpointPath(id, "/deliveries/", otherTest), o.key, nil)
		g.Expect(expectStringDetail(t, r, http.StatusNotFound)).To(Equal("Delivery not found."))
	})
	t.Run("retry", func(t *testing.T) {
		g := NewWithT(t)
		var dlv string
		for d, event := range byID {
			if event == "call.ended" {
				dlv = d
			}
		}
		before := time.Now().Add(-time.Second)
		r := do(t, "POST", endpointPath(id, "/deliveries/", dlv, "/retry"), o.key, nil)
		expectStatusJSON(t, r, http.StatusAccepted)
		g.Expect(r.body).To(HaveKeyWithValue("id", dlv))
		asked, err := time.Parse(time.RFC3339, r.body["retry_requested_at"].(string))
		g.Expect(err).NotTo(HaveOccurred(), "retry_requested_at of %s", r.raw)
		g.Expect(asked).To(BeTemporally(">", before))
		d, err := historyStore.GetDelivery(context.Background(), o.ns, dlv)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(d.Annotations).To(HaveKey(history.DeliveryRetryAnnotation))
		at, err := time.Parse(time.RFC3339Nano, d.Annotations[history.DeliveryRetryAnnotation])
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(at).To(BeTemporally("~", asked, time.Millisecond))

		r = do(t, "POST", endpointPath(id, "/deliveries/", test, "/retry"), o.key, nil)
		expectCodeDetail(t, r, http.StatusConflict, "test_not_retried")
		r = do(t, "POST", endpointPath(other, "/deliveries/", dlv, "/retry"), o.key, nil)
		g.Expect(expectStringDetail(t, r, http.StatusNotFound)).To(Equal("Delivery not found."))
	})
}
