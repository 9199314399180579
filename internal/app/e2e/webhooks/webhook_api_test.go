package webhooks_test

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
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
	"github.com/switchboard-dev/switchboard/internal/history"
)

func TestWebhookAPI_CreateEndpoint(t *testing.T) {
	o := NewOrg(t)
	g := NewWithT(t)
	before := time.Now().Add(-time.Second)
	r := Do(t, "POST", "/v1/webhook-endpoints", o.Key, map[string]any{"url": "https://203.0.113.7/switchboard",
		"events": []string{"call.ended", "call.started"}, "description": "CRM sync", "unknown_field": 1})
	ExpectStatusJSON(t, r, http.StatusCreated)
	ep := r.Body
	id, _ := ep["id"].(string)
	g.Expect(id).To(MatchRegexp(WapiEndpointID))
	g.Expect(r.Header.Get("Location")).To(Equal("/v1/webhook-endpoints/" + id))
	secret := ExpectSecret(g, ep["secret"])
	g.Expect(ep).To(HaveKeyWithValue("url", "https://203.0.113.7/switchboard"))
	g.Expect(ep).To(HaveKeyWithValue("events", []any{"call.started", "call.ended"}), "events are listed in lifecycle order")
	g.Expect(ep).To(HaveKeyWithValue("description", "CRM sync"))
	g.Expect(ep).To(HaveKeyWithValue("disabled", false))
	g.Expect(ep).To(HaveKeyWithValue("disabled_reason", BeNil()))
	g.Expect(ep).To(HaveKeyWithValue("status", "active"))
	g.Expect(ep).To(HaveKeyWithValue("last_delivery_at", BeNil()))
	g.Expect(ep).To(HaveKeyWithValue("last_delivery_result", BeNil()))
	g.Expect(ep["created_at"]).To(MatchRegexp(WapiTimestamp))
	created, err := time.Parse(time.RFC3339, ep["created_at"].(string))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(created).To(BeTemporally(">=", before.Truncate(time.Second)))
	g.Expect(ep).To(HaveLen(11), "unexpected fields in %s", r.Raw)

	// It is a WebhookEndpoint resource, like one applied as YAML.
	res := EndpointResource(t, o.Ns, id)
	g.Expect(res.Name).To(HavePrefix("endpoint-"))
	g.Expect(res.Spec.URL).To(Equal("https://203.0.113.7/switchboard"))
	g.Expect(res.Spec.Events).To(ConsistOf(switchboardv1.WebhookEventType("call.ended"), switchboardv1.WebhookEventType("call.started")))
	g.Expect(res.Spec.Description).To(Equal("CRM sync"))
	g.Expect(res.Spec.SecretRef).To(BeNil())

	// Its generated Secret holds the secret returned, and goes with it.
	var s corev1.Secret
	g.Expect(K8s.Get(context.Background(), client.ObjectKey{Namespace: o.Ns, Name: res.SigningSecretName()}, &s)).To(Succeed())
	g.Expect(string(s.Data[switchboardv1.WebhookSecretKey])).To(Equal(secret))
	g.Expect(string(s.Type)).To(Equal(switchboardv1.WebhookSecretType))
	g.Expect(metav1.IsControlledBy(&s, res)).To(BeTrue(), "Secret owners: %+v", s.OwnerReferences)

	// A GET right after the create finds it, without the secret.
	got := Do(t, "GET", EndpointPath(id), o.Key, nil)
	ExpectStatusJSON(t, got, http.StatusOK)
	delete(ep, "secret")
	g.Expect(got.Body).To(Equal(ep))

	t.Run("defaults", func(t *testing.T) {
		g := NewWithT(t)
		ep := CreateEndpoint(t, o.Key, map[string]any{"url": "https://203.0.113.7/all"})
		g.Expect(ep).To(HaveKeyWithValue("events", WapiKinds), "no events means the call events")
		g.Expect(ep).To(HaveKeyWithValue("description", ""))
		g.Expect(ep).To(HaveKeyWithValue("disabled", false))
		g.Expect(EndpointResource(t, o.Ns, ep["id"].(string)).Spec.Events).To(BeEmpty())
	})
	t.Run("created disabled", func(t *testing.T) {
		g := NewWithT(t)
		ep := CreateEndpoint(t, o.Key, map[string]any{"url": "https://203.0.113.7/off", "events": []string{}, "disabled": true})
		g.Expect(ep).To(HaveKeyWithValue("events", WapiKinds))
		g.Expect(ep).To(HaveKeyWithValue("disabled", true))
		g.Expect(ep).To(HaveKeyWithValue("status", "disabled"))
		g.Expect(ep).To(HaveKeyWithValue("disabled_reason", BeNil()))
	})
	t.Run("every endpoint has its own secret", func(t *testing.T) {
		a := CreateEndpoint(t, o.Key, map[string]any{"url": "https://203.0.113.7/a"})
		b := CreateEndpoint(t, o.Key, map[string]any{"url": "https://203.0.113.7/a"})
		NewWithT(t).Expect(a["secret"]).NotTo(Equal(b["secret"]))
		NewWithT(t).Expect(a["id"]).NotTo(Equal(b["id"]))
	})
}

func TestWebhookAPI_CreateValidation(t *testing.T) {
	o := NewOrg(t)
	tests := []struct {
		name string
		body any
		want []ValidationItem
		msg  string // expected msg of the first item, if set
	}{
		{"empty body", "", []ValidationItem{{Loc: []any{"body"}, Typ: "missing"}}, ""},
		{"malformed JSON", `{"url":`, []ValidationItem{{Loc: []any{"body"}, Typ: "json_invalid", LocPrefix: true}}, ""},
		{"not an object", `["https://example.com"]`, []ValidationItem{{Loc: []any{"body"}, Typ: "model_attributes_type"}}, ""},
		{"missing url", map[string]any{"events": []string{"call.ended"}},
			[]ValidationItem{{Loc: []any{"body", "url"}, Typ: "missing"}}, ""},
		{"url not a string", map[string]any{"url": 42}, []ValidationItem{{Loc: []any{"body", "url"}, Typ: "string_type", Input: 42.0}}, ""},
		{"url too long", map[string]any{"url": "https://example.com/" + strings.Repeat("a", 2048)},
			[]ValidationItem{{Loc: []any{"body", "url"}, Typ: "string_too_long"}}, ""},
		{"ftp url", map[string]any{"url": "ftp://example.com/hooks"},
			[]ValidationItem{{Loc: []any{"body", "url"}, Typ: "url_not_allowed", Input: "ftp://example.com/hooks"}},
			"webhook URLs must use http or https"},
		{"url with credentials", map[string]any{"url": "https://user:pw@example.com/hooks"},
			[]ValidationItem{{Loc: []any{"body", "url"}, Typ: "url_not_allowed"}},
			"webhook URLs must not contain credentials; every request is signed instead"},
		{"relative url", map[string]any{"url": "/hooks"},
			[]ValidationItem{{Loc: []any{"body", "url"}, Typ: "url_not_allowed"}}, ""},
		{"events not a list", map[string]any{"url": "https://example.com", "events": "call.ended"},
			[]ValidationItem{{Loc: []any{"body", "events"}, Typ: "list_type", Input: "call.ended"}}, ""},
		{"unknown event", map[string]any{"url": "https://example.com", "events": []string{"call.ended", "call.missed"}},
			[]ValidationItem{{Loc: []any{"body", "events", 1.0}, Typ: "enum", Input: "call.missed"}},
			"Input should be 'call.started', 'call.ended', 'call.analyzed', 'campaign.started', 'campaign.paused' or " +
				"'campaign.completed'"},
		{"test is not an event to subscribe to", map[string]any{"url": "https://example.com", "events": []string{"test"}},
			[]ValidationItem{{Loc: []any{"body", "events", 0.0}, Typ: "enum"}}, ""},
		{"duplicate event", map[string]any{"url": "https://example.com", "events": []string{"call.ended", "call.ended"}},
			[]ValidationItem{{Loc: []any{"body", "events", 1.0}, Typ: "value_error"}}, ""},
		{"description too long", map[string]any{"url": "https://example.com", "description": strings.Repeat("d", 513)},
			[]ValidationItem{{Loc: []any{"body", "description"}, Typ: "string_too_long"}}, ""},
		{"disabled not a bool", map[string]any{"url": "https://example.com", "disabled": "true"},
			[]ValidationItem{{Loc: []any{"body", "disabled"}, Typ: "bool_type", Input: "true"}}, ""},
		{"every problem", map[string]any{"events": 1, "description": 2, "disabled": 3}, []ValidationItem{
			{Loc: []any{"body", "url"}, Typ: "missing"}, {Loc: []any{"body", "events"}, Typ: "list_type"},
			{Loc: []any{"body", "description"}, Typ: "string_type"}, {Loc: []any{"body", "disabled"}, Typ: "bool_type"}}, ""},
		{"key twice", `{"url":"https://example.com","url":"https://203.0.113.7"}`,
			[]ValidationItem{{Loc: []any{"body", "url"}, Typ: "duplicate_key", Input: "url"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items := ExpectValidation(t, Do(t, "POST", "/v1/webhook-endpoints", o.Key, tt.body), tt.want...)
			if tt.msg != "" {
				NewWithT(t).Expect(items[0]["msg"]).To(Equal(tt.msg))
			}
		})
	}
	t.Run("body too large", func(t *testing.T) {
		r := Do(t, "POST", "/v1/webhook-endpoints", o.Key, `{"url":"https://example.com","description":"`+strings.Repeat("x", 64<<10)+`"}`)
		NewWithT(t).Expect(ExpectStringDetail(t, r, http.StatusRequestEntityTooLarge)).To(ContainSubstring("65536 bytes"))
	})
	NewWithT(t).Expect(CountEndpoints(t, o.Ns)).To(BeZero(), "a refused request left an endpoint behind")
}

func TestWebhookAPI_ListEndpoints(t *testing.T) {
	o := NewOrg(t)
	g := NewWithT(t)
	empty, r := ListIDs(t, o.Key, "/v1/webhook-endpoints")
	g.Expect(empty).To(BeEmpty())
	g.Expect(r.Body).To(HaveKeyWithValue("has_more", false))
	g.Expect(r.Body).To(HaveKeyWithValue("next_cursor", BeNil()))

	var created []string
	for i := range 3 {
		created = append(created, CreateEndpoint(t, o.Key, map[string]any{"url": fmt.Sprintf("https://203.0.113.7/%d", i)})["id"].(string))
	}
	var all []string
	g.Eventually(func() []string {
		all, _ = ListIDs(t, o.Key, "/v1/webhook-endpoints")
		return all
	}, 10*time.Second, 20*time.Millisecond).Should(ConsistOf(created))

	// Oldest first: creation time, then id (creation times are seconds).
	_, r = ListIDs(t, o.Key, "/v1/webhook-endpoints")
	var prev [2]string
	for _, item := range r.Body["data"].([]any) {
		ep := item.(map[string]any)
		key := [2]string{ep["created_at"].(string), ep["id"].(string)}
		g.Expect(key[0] > prev[0] || (key[0] == prev[0] && key[1] > prev[1])).To(BeTrue(), "order of %s", r.Raw)
		prev = key
		g.Expect(ep).NotTo(HaveKey("secret"), "a list never shows secrets")
	}

	page1, r := ListIDs(t, o.Key, "/v1/webhook-endpoints?limit=2")
	g.Expect(page1).To(Equal(all[:2]))
	g.Expect(r.Body).To(HaveKeyWithValue("has_more", true))
	g.Expect(r.Body).To(HaveKeyWithValue("next_cursor", all[1]))
	page2, r := ListIDs(t, o.Key, "/v1/webhook-endpoints?limit=2&cursor="+all[1])
	g.Expect(page2).To(Equal(all[2:]))
	g.Expect(r.Body).To(HaveKeyWithValue("has_more", false))
	g.Expect(r.Body).To(HaveKeyWithValue("next_cursor", BeNil()))
	exact, r := ListIDs(t, o.Key, "/v1/webhook-endpoints?limit=3")
	g.Expect(exact).To(Equal(all))
	g.Expect(r.Body).To(HaveKeyWithValue("has_more", false))

	t.Run("bad queries", func(t *testing.T) {
		for query, want := range map[string]ValidationItem{
			"limit=0":                              {Loc: []any{"query", "limit"}, Typ: "greater_than_equal", Input: "0"},
			"limit=101":                            {Loc: []any{"query", "limit"}, Typ: "less_than_equal", Input: "101"},
			"limit=many":                           {Loc: []any{"query", "limit"}, Typ: "int_parsing", Input: "many"},
			"cursor=abc":                           {Loc: []any{"query", "cursor"}, Typ: "string_pattern_mismatch", Input: "abc"},
			"cursor=we_" + strings.Repeat("0", 32): {Loc: []any{"query", "cursor"}, Typ: "value_error"},
		} {
			t.Run(query, func(t *testing.T) {
				ExpectValidation(t, Do(t, "GET", "/v1/webhook-endpoints?"+query, o.Key, nil), want)
			})
		}
	})
}

func TestWebhookAPI_GetPatchDelete(t *testing.T) {
	o := NewOrg(t)
	ctx := context.Background()
	id := CreateEndpoint(t, o.Key, map[string]any{"url": "https://203.0.113.7/v1", "events": []string{"call.ended"},
		"description": "first"})["id"].(string)
	path := EndpointPath(id)

	patch := func(t *testing.T, body any) map[string]any {
		t.Helper()
		r := Do(t, "PATCH", path, o.Key, body)
		ExpectStatusJSON(t, r, http.StatusOK)
		NewWithT(t).Expect(r.Body).NotTo(HaveKey("secret"))
		return r.Body
	}

	t.Run("change fields", func(t *testing.T) {
		g := NewWithT(t)
		ep := patch(t, map[string]any{"url": "https://203.0.113.7/v2", "events": []string{"call.analyzed", "call.started"},
			"description": "second"})
		g.Expect(ep).To(HaveKeyWithValue("id", id))
		g.Expect(ep).To(HaveKeyWithValue("url", "https://203.0.113.7/v2"))
		g.Expect(ep).To(HaveKeyWithValue("events", []any{"call.started", "call.analyzed"}))
		g.Expect(ep).To(HaveKeyWithValue("description", "second"))
		res := EndpointResource(t, o.Ns, id)
		g.Expect(res.Spec.URL).To(Equal("https://203.0.113.7/v2"))
		g.Expect(res.Spec.Description).To(Equal("second"))
	})
	t.Run("absent fields stay, null resets", func(t *testing.T) {
		g := NewWithT(t)
		ep := patch(t, map[string]any{})
		g.Expect(ep).To(HaveKeyWithValue("description", "second"))
		ep = patch(t, map[string]any{"events": nil, "description": nil})
		g.Expect(ep).To(HaveKeyWithValue("events", WapiKinds))
		g.Expect(ep).To(HaveKeyWithValue("description", ""))
		g.Expect(ep).To(HaveKeyWithValue("url", "https://203.0.113.7/v2"))
		res := EndpointResource(t, o.Ns, id)
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
		res := EndpointResource(t, o.Ns, id)
		base := client.MergeFrom(res.DeepCopy())
		res.Annotations = map[string]string{switchboardv1.WebhookDisabledReasonAnnotation: "The receiver answered 410 Gone."}
		g.Expect(K8s.Patch(ctx, res, base)).To(Succeed())
		g.Eventually(func() any {
			return Do(t, "GET", path, o.Key, nil).Body["disabled_reason"]
		}, 10*time.Second, 20*time.Millisecond).Should(Equal("The receiver answered 410 Gone."))

		ep = patch(t, map[string]any{"disabled": false})
		g.Expect(ep).To(HaveKeyWithValue("disabled", false))
		g.Expect(ep).To(HaveKeyWithValue("status", "active"))
		g.Expect(ep).To(HaveKeyWithValue("disabled_reason", BeNil()))
		g.Expect(EndpointResource(t, o.Ns, id).Annotations).NotTo(HaveKey(switchboardv1.WebhookDisabledReasonAnnotation),
			"re-enabling clears the reason")
	})
	t.Run("invalid changes", func(t *testing.T) {
		for name, tc := range map[string]struct {
			body any
			want ValidationItem
		}{
			"null url":      {map[string]any{"url": nil}, ValidationItem{Loc: []any{"body", "url"}, Typ: "string_type"}},
			"null disabled": {map[string]any{"disabled": nil}, ValidationItem{Loc: []any{"body", "disabled"}, Typ: "bool_type"}},
			"refused url":   {map[string]any{"url": "ftp://example.com"}, ValidationItem{Loc: []any{"body", "url"}, Typ: "url_not_allowed"}},
			"bad events":    {map[string]any{"events": []string{"call.ended", "nope"}}, ValidationItem{Loc: []any{"body", "events", 1.0}, Typ: "enum"}},
			"empty body":    {"", ValidationItem{Loc: []any{"body"}, Typ: "missing"}},
		} {
			t.Run(name, func(t *testing.T) {
				ExpectValidation(t, Do(t, "PATCH", path, o.Key, tc.body), tc.want)
			})
		}
		NewWithT(t).Expect(EndpointResource(t, o.Ns, id).Spec.URL).To(Equal("https://203.0.113.7/v2"))
	})
	t.Run("delete", func(t *testing.T) {
		g := NewWithT(t)
		res := EndpointResource(t, o.Ns, id)
		r := Do(t, "DELETE", path, o.Key, nil)
		g.Expect(r.Status).To(Equal(http.StatusNoContent), "body %s", r.Raw)
		g.Expect(r.Raw).To(BeEmpty())
		err := K8s.Get(ctx, client.ObjectKeyFromObject(res), &switchboardv1.WebhookEndpoint{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the WebhookEndpoint is still there: %v", err)
		g.Eventually(func() int { return Do(t, "GET", path, o.Key, nil).Status }, 10*time.Second, 20*time.Millisecond).
			Should(Equal(http.StatusNotFound))
		g.Expect(ExpectStringDetail(t, Do(t, "GET", path, o.Key, nil), http.StatusNotFound)).To(Equal("Webhook endpoint not found."))
		ExpectStringDetail(t, Do(t, "DELETE", path, o.Key, nil), http.StatusNotFound)
		ExpectStringDetail(t, Do(t, "PATCH", path, o.Key, map[string]any{"description": "x"}), http.StatusNotFound)
	})
}

// An endpoint applied as YAML is the same thing as one registered over REST.
func TestWebhookAPI_EndpointAppliedAsYAML(t *testing.T) {
	o := NewOrg(t)
	g := NewWithT(t)
	sink := NewHookSink(t, http.StatusOK)
	ep := &switchboardv1.WebhookEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: o.Ns, Name: "crm-hooks"},
		Spec: switchboardv1.WebhookEndpointSpec{URL: sink.URL(), Events: []switchboardv1.WebhookEventType{"call.analyzed"},
			Description: "applied"}}
	g.Expect(K8s.Create(context.Background(), ep)).To(Succeed())
	id := ep.ResolvedID()

	// At once, even before the cache has it.
	r := Do(t, "GET", EndpointPath(id), o.Key, nil)
	ExpectStatusJSON(t, r, http.StatusOK)
	g.Expect(r.Body).To(HaveKeyWithValue("id", id))
	g.Expect(r.Body).To(HaveKeyWithValue("url", sink.URL()))
	g.Expect(r.Body).To(HaveKeyWithValue("events", []any{"call.analyzed"}))
	g.Expect(r.Body).To(HaveKeyWithValue("description", "applied"))
	g.Eventually(func() []string {
		ids, _ := ListIDs(t, o.Key, "/v1/webhook-endpoints")
		return ids
	}, 10*time.Second, 20*time.Millisecond).Should(ContainElement(id))

	// Its secret is the one Switchboard generated; a test event is signed
	// with it.
	var secret corev1.Secret
	g.Eventually(func() error {
		return K8s.Get(context.Background(), client.ObjectKey{Namespace: o.Ns, Name: ep.SigningSecretName()}, &secret)
	}, 10*time.Second, 20*time.Millisecond).Should(Succeed())
	res := Do(t, "POST", EndpointPath(id, "/test"), o.Key, nil)
	ExpectStatusJSON(t, res, http.StatusOK)
	g.Expect(res.Body).To(HaveKeyWithValue("status", "succeeded"))
	got := sink.Requests()
	g.Expect(got).To(HaveLen(1))
	wh, err := standardwebhooks.NewWebhook(string(secret.Data[switchboardv1.WebhookSecretKey]))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(wh.Verify(got[0].Body, got[0].Header)).To(Succeed())
}

func TestWebhookAPI_OrganizationsAreIsolated(t *testing.T) {
	a, b := NewOrg(t), NewOrg(t)
	g := NewWithT(t)
	sink := NewHookSink(t, http.StatusOK)
	id := CreateEndpoint(t, a.Key, map[string]any{"url": sink.URL(), "description": "A's"})["id"].(string)
	test := Do(t, "POST", EndpointPath(id, "/test"), a.Key, nil)
	ExpectStatusJSON(t, test, http.StatusOK)
	dlv := test.Body["delivery_id"].(string)
	g.Expect(sink.Requests()).To(HaveLen(1))

	for _, req := range []struct {
		method, path string
		body         any
	}{
		{"GET", EndpointPath(id), nil},
		{"PATCH", EndpointPath(id), map[string]any{"description": "B's now"}},
		{"DELETE", EndpointPath(id), nil},
		{"POST", EndpointPath(id, "/rotate-secret"), nil},
		{"POST", EndpointPath(id, "/test"), map[string]any{}},
		{"GET", EndpointPath(id, "/deliveries"), nil},
		{"GET", EndpointPath(id, "/deliveries/", dlv), nil},
		{"POST", EndpointPath(id, "/deliveries/", dlv, "/retry"), nil},
	} {
		t.Run(req.method+" "+req.path, func(t *testing.T) {
			r := Do(t, req.method, req.path, b.Key, req.body)
			NewWithT(t).Expect(ExpectStringDetail(t, r, http.StatusNotFound)).To(Equal("Webhook endpoint not found."))
		})
	}
	ids, _ := ListIDs(t, b.Key, "/v1/webhook-endpoints")
	g.Expect(ids).To(BeEmpty(), "B lists A's endpoint")
	g.Expect(sink.Requests()).To(HaveLen(1), "B sent a test event to A's endpoint")
	r := Do(t, "GET", EndpointPath(id), a.Key, nil)
	ExpectStatusJSON(t, r, http.StatusOK)
	g.Expect(r.Body).To(HaveKeyWithValue("description", "A's"))
}

func TestWebhookAPI_NeedsKey(t *testing.T) {
	id := "we_" + RandHex(16)
	dlv := "dlv_" + RandHex(16)
	for _, req := range []struct{ method, path string }{
		{"POST", "/v1/webhook-endpoints"},
		{"GET", "/v1/webhook-endpoints"},
		{"GET", EndpointPath(id)},
		{"PATCH", EndpointPath(id)},
		{"DELETE", EndpointPath(id)},
		{"POST", EndpointPath(id, "/rotate-secret")},
		{"POST", EndpointPath(id, "/test")},
		{"GET", EndpointPath(id, "/deliveries")},
		{"GET", EndpointPath(id, "/deliveries/", dlv)},
		{"POST", EndpointPath(id, "/deliveries/", dlv, "/retry")},
	} {
		t.Run(req.method+" "+req.path, func(t *testing.T) {
			r := Do(t, req.method, req.path, "", nil)
			ExpectStringDetail(t, r, http.StatusUnauthorized)
			NewWithT(t).Expect(r.Header.Get("WWW-Authenticate")).To(HavePrefix("Bearer"))
			ExpectStringDetail(t, Do(t, req.method, req.path, "sk_test_"+RandHex(16), nil), http.StatusUnauthorized)
		})
	}
}

func TestWebhookAPI_NotFound(t *testing.T) {
	o := NewOrg(t)
	unknown := "we_" + RandHex(16)
	for _, id := range []string{unknown, "nope", "we_123", "WE_" + RandHex(16), "we_" + strings.ToUpper(RandHex(16))} {
		for _, req := range []struct{ method, suffix string }{
			{"GET", ""}, {"PATCH", ""}, {"DELETE", ""}, {"POST", "/rotate-secret"}, {"POST", "/test"},
			{"GET", "/deliveries"}, {"GET", "/deliveries/dlv_" + RandHex(16)},
		} {
			t.Run(req.method+" "+id+req.suffix, func(t *testing.T) {
				r := Do(t, req.method, EndpointPath(id, req.suffix), o.Key, map[string]any{})
				NewWithT(t).Expect(ExpectStringDetail(t, r, http.StatusNotFound)).To(Equal("Webhook endpoint not found."))
			})
		}
	}
	id := CreateEndpoint(t, o.Key, map[string]any{"url": "https://203.0.113.7"})["id"].(string)
	for _, path := range []string{
		EndpointPath(id, "/deliveries/dlv_"+RandHex(16)),
		EndpointPath(id, "/deliveries/dlv_"+RandHex(16), "/retry"),
		EndpointPath(id, "/deliveries/not-a-delivery"),
		EndpointPath(id, "/deliveries/not-a-delivery/retry"),
	} {
		method := "GET"
		if strings.HasSuffix(path, "/retry") {
			method = "POST"
		}
		t.Run(method+" "+path, func(t *testing.T) {
			r := Do(t, method, path, o.Key, nil)
			NewWithT(t).Expect(ExpectStringDetail(t, r, http.StatusNotFound)).To(Equal("Delivery not found."))
		})
	}
}

func TestWebhookAPI_RotateSecret(t *testing.T) {
	o := NewOrg(t)
	g := NewWithT(t)
	sink := NewHookSink(t, http.StatusOK)
	created := CreateEndpoint(t, o.Key, map[string]any{"url": sink.URL()})
	id, first := created["id"].(string), created["secret"].(string)

	before := time.Now()
	r := Do(t, "POST", EndpointPath(id, "/rotate-secret"), o.Key, nil)
	ExpectStatusJSON(t, r, http.StatusOK)
	second := ExpectSecret(g, r.Body["secret"])
	g.Expect(second).NotTo(Equal(first))
	g.Expect(r.Body).To(HaveKeyWithValue("id", id))
	g.Expect(r.Body).To(HaveKeyWithValue("url", sink.URL()))
	expires, err := time.Parse(time.RFC3339, r.Body["previous_secret_expires_at"].(string))
	g.Expect(err).NotTo(HaveOccurred(), "previous_secret_expires_at: %s", r.Raw)
	g.Expect(expires).To(BeTemporally("~", before.Add(24*time.Hour), 5*time.Second))

	// The Secret holds both, and when the old one stops signing.
	res := EndpointResource(t, o.Ns, id)
	var s corev1.Secret
	g.Expect(K8s.Get(context.Background(), client.ObjectKey{Namespace: o.Ns, Name: res.SigningSecretName()}, &s)).To(Succeed())
	g.Expect(string(s.Data[switchboardv1.WebhookSecretKey])).To(Equal(second))
	g.Expect(string(s.Data[switchboardv1.WebhookPreviousSecretKey])).To(Equal(first))
	at, err := time.Parse(time.RFC3339, s.Annotations[switchboardv1.WebhookPreviousExpiresAnnotation])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(at).To(BeTemporally("~", expires, time.Second))

	// During the overlap, events verify with either secret, so receivers
	// can switch at their own pace.
	test := Do(t, "POST", EndpointPath(id, "/test"), o.Key, nil)
	ExpectStatusJSON(t, test, http.StatusOK)
	got := sink.Requests()
	g.Expect(got).To(HaveLen(1))
	for _, secret := range []string{first, second} {
		wh, err := standardwebhooks.NewWebhook(secret)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(wh.Verify(got[0].Body, got[0].Header)).To(Succeed())
	}

	// Rotating again retires the first secret.
	r = Do(t, "POST", EndpointPath(id, "/rotate-secret"), o.Key, nil)
	ExpectStatusJSON(t, r, http.StatusOK)
	third := ExpectSecret(g, r.Body["secret"])
	g.Expect(K8s.Get(context.Background(), client.ObjectKeyFromObject(&s), &s)).To(Succeed())
	g.Expect(string(s.Data[switchboardv1.WebhookSecretKey])).To(Equal(third))
	g.Expect(string(s.Data[switchboardv1.WebhookPreviousSecretKey])).To(Equal(second))
}

// An endpoint whose spec.secretRef names a Secret that does not exist
// cannot sign: test says so. Rotation is never done with an API key for a
// Secret the platform team declared, there or not.
func TestWebhookAPI_SecretMissing(t *testing.T) {
	o := NewOrg(t)
	g := NewWithT(t)
	sink := NewHookSink(t, http.StatusOK)
	ep := &switchboardv1.WebhookEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: o.Ns, Name: "byo-secret"},
		Spec: switchboardv1.WebhookEndpointSpec{URL: sink.URL(), SecretRef: &switchboardv1.SecretReference{Name: "not-there"}}}
	g.Expect(K8s.Create(context.Background(), ep)).To(Succeed())
	id := ep.ResolvedID()

	msg := ExpectCodeDetail(t, Do(t, "POST", EndpointPath(id, "/rotate-secret"), o.Key, nil), http.StatusConflict, "secret_managed_in_cluster")
	g.Expect(msg).To(ContainSubstring("not-there"))
	msg = ExpectCodeDetail(t, Do(t, "POST", EndpointPath(id, "/test"), o.Key, nil), http.StatusConflict, "secret_missing")
	g.Expect(msg).To(ContainSubstring("not-there"))
	g.Expect(sink.Requests()).To(BeEmpty())

	// A Secret without a usable secret is no better.
	g.Expect(K8s.Create(context.Background(), NewSecretObject(o.Ns, "not-there", "not base64!"))).To(Succeed())
	ExpectCodeDetail(t, Do(t, "POST", EndpointPath(id, "/test"), o.Key, nil), http.StatusConflict, "secret_missing")
	g.Expect(sink.Requests()).To(BeEmpty())
	ids, _ := ListIDs(t, o.Key, EndpointPath(id, "/deliveries"))
	g.Expect(ids).To(BeEmpty(), "a test that was not sent is not in the delivery log")

	// Once the Secret is right, the endpoint's own secret signs.
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte(RandHex(16)))
	var s corev1.Secret
	g.Expect(K8s.Get(context.Background(), client.ObjectKey{Namespace: o.Ns, Name: "not-there"}, &s)).To(Succeed())
	s.Data[switchboardv1.WebhookSecretKey] = []byte(secret)
	g.Expect(K8s.Update(context.Background(), &s)).To(Succeed())
	r := Do(t, "POST", EndpointPath(id, "/test"), o.Key, nil)
	ExpectStatusJSON(t, r, http.StatusOK)
	g.Expect(r.Body).To(HaveKeyWithValue("status", "succeeded"))
	wh, err := standardwebhooks.NewWebhook(secret)
	g.Expect(err).NotTo(HaveOccurred())
	got := sink.Requests()
	g.Expect(got).To(HaveLen(1))
	g.Expect(wh.Verify(got[0].Body, got[0].Header)).To(Succeed())
}

func TestWebhookAPI_TestEvent(t *testing.T) {
	o := NewOrg(t)
	g := NewWithT(t)
	sink := NewHookSink(t, http.StatusOK)
	created := CreateEndpoint(t, o.Key, map[string]any{"url": sink.URL(), "events": []string{"call.started"}})
	id, secret := created["id"].(string), created["secret"].(string)

	res := SendTestEvent(t, o.Key, id, nil)
	g.Expect(res).To(HaveKeyWithValue("status", "succeeded"))
	g.Expect(res).To(HaveKeyWithValue("status_code", 200.0))
	g.Expect(res).To(HaveKeyWithValue("error", BeNil()))
	dlv := res["delivery_id"].(string)

	got := sink.Requests()
	g.Expect(got).To(HaveLen(1), "one attempt")
	req := got[0]
	g.Expect(req.Header.Get("X-Service-Delivery-ID")).To(Equal(dlv))
	g.Expect(req.Header.Get("X-Service-Event")).To(Equal("call.ended"), "the default sample is call.ended")
	g.Expect(req.Header.Get("X-Service-Signature")).NotTo(BeEmpty())
	g.Expect(req.Header.Get("Authorization")).To(BeEmpty())
	wh, err := standardwebhooks.NewWebhook(secret)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(wh.Verify(req.Body, req.Header)).To(Succeed(), "signed with the endpoint's real secret")
	var envelope struct {
		Event string         `json:"event"`
		Call  map[string]any `json:"call"`
	}
	g.Expect(json.Unmarshal(req.Body, &envelope)).To(Succeed())
	g.Expect(envelope.Event).To(Equal("call.ended"))
	g.Expect(envelope.Call).To(HaveKeyWithValue("call_id", "call_test_00000000"))
	g.Expect(envelope.Call).To(HaveKeyWithValue("metadata", map[string]any{"test": true}))
	g.Expect(envelope.Call).To(HaveKeyWithValue("status", "ended"))

	// The delivery log has it: event test, one attempt, nothing pending.
	r := Do(t, "GET", EndpointPath(id, "/deliveries/", dlv), o.Key, nil)
	ExpectStatusJSON(t, r, http.StatusOK)
	d := r.Body
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
	g.Expect(d["created_at"]).To(MatchRegexp(WapiTimestamp))
	g.Expect(d["completed_at"]).To(MatchRegexp(WapiTimestamp))
	g.Expect(d["attempts"]).To(HaveLen(1))
	attempt := d["attempts"].([]any)[0].(map[string]any)
	g.Expect(attempt).To(HaveKeyWithValue("trigger", "test"))
	g.Expect(attempt).To(HaveKeyWithValue("status_code", 200.0))
	g.Expect(attempt).To(HaveKeyWithValue("error", BeNil()))
	g.Expect(attempt).To(HaveKeyWithValue("response", "OK"))
	g.Expect(attempt["attempted_at"]).To(MatchRegexp(WapiTimestamp))
	g.Expect(attempt["duration_ms"]).To(BeNumerically(">=", 0))
	g.Expect(d).To(HaveLen(13), "unexpected fields in %s", r.Raw)
	// One precision for every time (milliseconds), so they compare as text:
	// the delivery is created, attempted, then completed.
	createdAt, attempted, completed := d["created_at"].(string), attempt["attempted_at"].(string), d["completed_at"].(string)
	g.Expect(createdAt <= attempted && attempted <= completed).To(BeTrue(),
		"created %s, attempted %s, completed %s: out of order", createdAt, attempted, completed)

	g.Eventually(func() []string {
		ids, _ := ListIDs(t, o.Key, EndpointPath(id, "/deliveries"))
		return ids
	}, 10*time.Second, 20*time.Millisecond).Should(Equal([]string{dlv}))
	var filtered []string
	for query, want := range map[string][]string{
		"event=test": {dlv}, "event=call.ended": {}, "status=succeeded": {dlv}, "status=failed": {},
		"event=test&status=succeeded": {dlv},
	} {
		filtered, _ = ListIDs(t, o.Key, EndpointPath(id, "/deliveries?", query))
		g.Expect(filtered).To(Equal(want), query)
	}

	t.Run("test deliveries are not retried", func(t *testing.T) {
		r := Do(t, "POST", EndpointPath(id, "/deliveries/", dlv, "/retry"), o.Key, nil)
		msg := ExpectCodeDetail(t, r, http.StatusConflict, "test_not_retried")
		NewWithT(t).Expect(msg).To(Equal("Test deliveries are sent once and not retried; send a new test event."))
		NewWithT(t).Expect(sink.Requests()).To(HaveLen(1))
	})
	t.Run("every kind has a sample", func(t *testing.T) {
		for _, kind := range []string{"call.started", "call.ended", "call.analyzed"} {
			g := NewWithT(t)
			n := len(sink.Requests())
			res := SendTestEvent(t, o.Key, id, map[string]any{"event": kind})
			g.Expect(res).To(HaveKeyWithValue("status", "succeeded"))
			got := sink.Requests()
			g.Expect(got).To(HaveLen(n + 1))
			last := got[n]
			g.Expect(last.Header.Get("X-Service-Event")).To(Equal(kind))
			g.Expect(last.Header.Get("X-Service-Delivery-ID")).To(Equal(res["delivery_id"]))
			g.Expect(json.Unmarshal(last.Body, &envelope)).To(Succeed())
			g.Expect(envelope.Event).To(Equal(kind))
			g.Expect(envelope.Call).To(HaveKeyWithValue("call_id", "call_test_00000000"))
			g.Expect(wh.Verify(last.Body, last.Header)).To(Succeed())
			if kind == "call.analyzed" {
				g.Expect(envelope.Call["analysis"]).NotTo(BeNil())
			}
		}
	})
	t.Run("right after the URL changes", func(t *testing.T) {
		g := NewWithT(t)
		moved := NewHookSink(t, http.StatusNoContent)
		r := Do(t, "PATCH", EndpointPath(id), o.Key, map[string]any{"url": moved.URL()})
		ExpectStatusJSON(t, r, http.StatusOK)
		n := len(sink.Requests())
		res := SendTestEvent(t, o.Key, id, nil)
		g.Expect(res).To(HaveKeyWithValue("status_code", 204.0))
		g.Expect(moved.Requests()).To(HaveLen(1), "the test went to the old URL")
		g.Expect(sink.Requests()).To(HaveLen(n))
		r = Do(t, "PATCH", EndpointPath(id), o.Key, map[string]any{"url": sink.URL()})
		ExpectStatusJSON(t, r, http.StatusOK)
	})
	t.Run("bad bodies", func(t *testing.T) {
		n := len(sink.Requests())
		for name, tc := range map[string]struct {
			body any
			want ValidationItem
		}{
			"unknown kind":  {map[string]any{"event": "call.missed"}, ValidationItem{Loc: []any{"body", "event"}, Typ: "enum", Input: "call.missed"}},
			"test kind":     {map[string]any{"event": "test"}, ValidationItem{Loc: []any{"body", "event"}, Typ: "enum"}},
			"not a string":  {map[string]any{"event": 1}, ValidationItem{Loc: []any{"body", "event"}, Typ: "string_type"}},
			"not an object": {"[]", ValidationItem{Loc: []any{"body"}, Typ: "model_attributes_type"}},
			"malformed":     {"{", ValidationItem{Loc: []any{"body"}, Typ: "json_invalid", LocPrefix: true}},
		} {
			t.Run(name, func(t *testing.T) {
				ExpectValidation(t, Do(t, "POST", EndpointPath(id, "/test"), o.Key, tc.body), tc.want)
			})
		}
		NewWithT(t).Expect(sink.Requests()).To(HaveLen(n), "a refused test was sent")
		SendTestEvent(t, o.Key, id, map[string]any{}) // {} is the default
	})
}

// One row per outcome of a test send: what the receiver did, what the API answers.
func TestWebhookAPI_TestEventResults(t *testing.T) {
	o := NewOrg(t)
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
			url := ClosedPortURL(t)
			var sink *HookSink
			if tt.status != 0 {
				sink = NewHookSink(t, tt.status)
				url = sink.URL()
			}
			id := CreateEndpoint(t, o.Key, map[string]any{"url": url})["id"].(string)
			res := SendTestEvent(t, o.Key, id, map[string]any{"event": "call.ended"})
			g.Expect(res).To(HaveKeyWithValue("status", tt.want))
			if tt.status != 0 {
				g.Expect(res).To(HaveKeyWithValue("status_code", float64(tt.status)))
				g.Expect(res).To(HaveKeyWithValue("error", BeNil()), "a response is not an error")
				g.Expect(sink.Requests()).To(HaveLen(1), "one attempt, no retries")
			} else {
				g.Expect(res).To(HaveKeyWithValue("status_code", BeNil()))
				g.Expect(res["error"]).To(ContainSubstring("refused"))
			}

			r := Do(t, "GET", EndpointPath(id, "/deliveries/", res["delivery_id"].(string)), o.Key, nil)
			ExpectStatusJSON(t, r, http.StatusOK)
			g.Expect(r.Body).To(HaveKeyWithValue("status", tt.want))
			g.Expect(r.Body).To(HaveKeyWithValue("attempt_count", 1.0))
			g.Expect(r.Body).To(HaveKeyWithValue("next_attempt_at", BeNil()), "a test is never retried")
			if tt.status == 0 {
				g.Expect(r.Body).To(HaveKeyWithValue("last_status_code", BeNil()))
				g.Expect(r.Body["last_error"]).To(Equal(res["error"]))
			} else {
				g.Expect(r.Body).To(HaveKeyWithValue("last_status_code", float64(tt.status)))
			}
			if sink != nil {
				time.Sleep(200 * time.Millisecond)
				g.Expect(sink.Requests()).To(HaveLen(1), "a failed test was retried")
			}
		})
	}
}

// A test event to a URL the policy refuses is not sent, nor recorded.
func TestWebhookAPI_TestEventURLNotAllowed(t *testing.T) {
	o := NewOrg(t)
	g := NewWithT(t)
	// The CRD accepts credentials in the URL; the URL policy does not.
	ep := &switchboardv1.WebhookEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: o.Ns, Name: "with-password"},
		Spec: switchboardv1.WebhookEndpointSpec{URL: "http://user:pw@127.0.0.1:9/hooks"}}
	g.Expect(K8s.Create(context.Background(), ep)).To(Succeed())
	id := ep.ResolvedID()
	// The endpoint reconciler generates its Secret even so.
	g.Eventually(func() error {
		return K8s.Get(context.Background(), client.ObjectKey{Namespace: o.Ns, Name: ep.SigningSecretName()}, &corev1.Secret{})
	}, 10*time.Second, 20*time.Millisecond).Should(Succeed())

	msg := ExpectCodeDetail(t, Do(t, "POST", EndpointPath(id, "/test"), o.Key, nil), http.StatusUnprocessableEntity, "url_not_allowed")
	g.Expect(msg).To(Equal("webhook URLs must not contain credentials; every request is signed instead"))
	logged, err := HistoryStore.ListDeliveries(context.Background(), o.Ns, history.DeliveryQuery{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(logged).To(BeEmpty(), "a refused test was recorded")
}

func TestWebhookAPI_DeliveryLog(t *testing.T) {
	o := NewOrg(t)
	g := NewWithT(t)
	id := CreateEndpoint(t, o.Key, map[string]any{"url": ClosedPortURL(t)})["id"].(string)
	ep := EndpointResource(t, o.Ns, id)
	now := time.Now()
	failed := &history.DeliveryStatus{Phase: history.DeliveryFailed, AttemptCount: 1, ScheduledAttempts: 1,
		LastStatusCode: 500, LastError: "receiver answered 500", CompletedAt: &metav1.Time{Time: now},
		Attempts: []history.DeliveryAttempt{{AttemptedAt: metav1.MicroTime{Time: now}, StatusCode: 500, DurationMS: 7,
			Response: "boom", Trigger: history.TriggerScheduled}}}
	succeeded := &history.DeliveryStatus{Phase: history.DeliverySucceeded, AttemptCount: 1,
		LastStatusCode: 200, CompletedAt: &metav1.Time{Time: now},
		Attempts: []history.DeliveryAttempt{{AttemptedAt: metav1.MicroTime{Time: now}, StatusCode: 200, Trigger: history.TriggerScheduled}}}
	byID := map[string]string{
		WapiDelivery(t, ep, "call.started", succeeded): "call.started",
		WapiDelivery(t, ep, "call.ended", failed):      "call.ended",
		WapiDelivery(t, ep, "call.analyzed", failed):   "call.analyzed",
	}
	test := SendTestEvent(t, o.Key, id, nil)["delivery_id"].(string) // failed: nothing listens
	byID[test] = "test"

	// Another endpoint's deliveries are not in this log.
	other := CreateEndpoint(t, o.Key, map[string]any{"url": ClosedPortURL(t)})["id"].(string)
	otherTest := SendTestEvent(t, o.Key, other, nil)["delivery_id"].(string)

	var all []string
	g.Eventually(func() []string {
		all, _ = ListIDs(t, o.Key, EndpointPath(id, "/deliveries"))
		return all
	}, 10*time.Second, 20*time.Millisecond).Should(HaveLen(4))
	g.Expect(all).NotTo(ContainElement(otherTest))

	// Newest first by creation time (kept to the nanosecond, shown to the
	// millisecond: equal shown times are in their true order).
	_, r := ListIDs(t, o.Key, EndpointPath(id, "/deliveries"))
	data := r.Body["data"].([]any)
	for i := 1; i < len(data); i++ {
		prev, cur := data[i-1].(map[string]any), data[i].(map[string]any)
		g.Expect(prev["created_at"].(string) >= cur["created_at"].(string)).To(BeTrue(), "order of %s", r.Raw)
	}
	for _, item := range data {
		d := item.(map[string]any)
		g.Expect(d).To(HaveKeyWithValue("event", byID[d["id"].(string)]))
		g.Expect(d).To(HaveKeyWithValue("endpoint_id", id))
	}

	t.Run("filters", func(t *testing.T) {
		g := NewWithT(t)
		only := func(query string) []string {
			ids, _ := ListIDs(t, o.Key, EndpointPath(id, "/deliveries?", query))
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
		page1, r := ListIDs(t, o.Key, EndpointPath(id, "/deliveries?limit=3"))
		g.Expect(page1).To(Equal(all[:3]))
		g.Expect(r.Body).To(HaveKeyWithValue("has_more", true))
		g.Expect(r.Body).To(HaveKeyWithValue("next_cursor", all[2]))
		page2, r := ListIDs(t, o.Key, EndpointPath(id, "/deliveries?limit=3&cursor=", all[2]))
		g.Expect(page2).To(Equal(all[3:]))
		g.Expect(r.Body).To(HaveKeyWithValue("has_more", false))
		g.Expect(r.Body).To(HaveKeyWithValue("next_cursor", BeNil()))
		// A cursor with a filter continues the filtered list.
		failed, _ := ListIDs(t, o.Key, EndpointPath(id, "/deliveries?status=failed"))
		f1, r := ListIDs(t, o.Key, EndpointPath(id, "/deliveries?status=failed&limit=1"))
		g.Expect(f1).To(Equal(failed[:1]))
		f2, _ := ListIDs(t, o.Key, EndpointPath(id, "/deliveries?status=failed&limit=5&cursor=", r.Body["next_cursor"].(string)))
		g.Expect(f2).To(Equal(failed[1:]))
	})
	t.Run("bad queries", func(t *testing.T) {
		for query, want := range map[string]ValidationItem{
			"status=done":  {Loc: []any{"query", "status"}, Typ: "enum", Input: "done"},
			"event=call.x": {Loc: []any{"query", "event"}, Typ: "enum", Input: "call.x"},
			"limit=0":      {Loc: []any{"query", "limit"}, Typ: "greater_than_equal"},
			"limit=1000":   {Loc: []any{"query", "limit"}, Typ: "less_than_equal"},
			"cursor=we_1":  {Loc: []any{"query", "cursor"}, Typ: "string_pattern_mismatch"},
			"cursor=" + test[:4] + strings.Repeat("0", 32): {Loc: []any{"query", "cursor"}, Typ: "value_error"},
			"cursor=" + otherTest:                          {Loc: []any{"query", "cursor"}, Typ: "value_error"},
		} {
			t.Run(query, func(t *testing.T) {
				ExpectValidation(t, Do(t, "GET", EndpointPath(id, "/deliveries?", query), o.Key, nil), want)
			})
		}
	})
	t.Run("get one", func(t *testing.T) {
		g := NewWithT(t)
		for dlv, event := range byID {
			r := Do(t, "GET", EndpointPath(id, "/deliveries/", dlv), o.Key, nil)
			ExpectStatusJSON(t, r, http.StatusOK)
			g.Expect(r.Body).To(HaveKeyWithValue("id", dlv))
			g.Expect(r.Body).To(HaveKeyWithValue("event", event))
			if event == "call.ended" {
				g.Expect(r.Body).To(HaveKeyWithValue("call_id", "call_"+strings.Repeat("0", 32)))
				g.Expect(r.Body).To(HaveKeyWithValue("status", "failed"))
				g.Expect(r.Body).To(HaveKeyWithValue("last_status_code", 500.0))
				g.Expect(r.Body).To(HaveKeyWithValue("last_error", "receiver answered 500"))
				g.Expect(r.Body["attempts"]).To(ConsistOf(HaveKeyWithValue("response", "boom")))
			}
		}
		// Another endpoint's delivery, asked for under this endpoint.
		r := Do(t, "GET", EndpointPath(id, "/deliveries/", otherTest), o.Key, nil)
		g.Expect(ExpectStringDetail(t, r, http.StatusNotFound)).To(Equal("Delivery not found."))
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
		r := Do(t, "POST", EndpointPath(id, "/deliveries/", dlv, "/retry"), o.Key, nil)
		ExpectStatusJSON(t, r, http.StatusAccepted)
		g.Expect(r.Body).To(HaveKeyWithValue("id", dlv))
		asked, err := time.Parse(time.RFC3339, r.Body["retry_requested_at"].(string))
		g.Expect(err).NotTo(HaveOccurred(), "retry_requested_at of %s", r.Raw)
		g.Expect(asked).To(BeTemporally(">", before))
		d, err := HistoryStore.GetDelivery(context.Background(), o.Ns, dlv)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(d.Annotations).To(HaveKey(history.DeliveryRetryAnnotation))
		at, err := time.Parse(time.RFC3339Nano, d.Annotations[history.DeliveryRetryAnnotation])
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(at).To(BeTemporally("~", asked, time.Millisecond))

		r = Do(t, "POST", EndpointPath(id, "/deliveries/", test, "/retry"), o.Key, nil)
		ExpectCodeDetail(t, r, http.StatusConflict, "test_not_retried")
		r = Do(t, "POST", EndpointPath(other, "/deliveries/", dlv, "/retry"), o.Key, nil)
		g.Expect(ExpectStringDetail(t, r, http.StatusNotFound)).To(Equal("Delivery not found."))
	})
}
