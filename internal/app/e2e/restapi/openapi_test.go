package restapi_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
	"github.com/switchboard-dev/switchboard/internal/httpapi/openapitest"
	"github.com/switchboard-dev/switchboard/internal/quota"
	"github.com/switchboard-dev/switchboard/internal/webhook/deliveries"
)

// TestOpenAPIContract drives the main paths of the REST API over HTTP and
// validates every request and response, and every webhook delivery, with
// the OpenAPI document the operator serves at /v1/openapi.json.
func TestOpenAPIContract(t *testing.T) {
	fetched := Do(t, "GET", "/v1/openapi.json", "", nil)
	if fetched.Status != http.StatusOK || fetched.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /v1/openapi.json without a key = %d %q, want 200 application/json", fetched.Status, fetched.Header.Get("Content-Type"))
	}
	v, err := openapitest.NewValidator(fetched.Raw)
	if err != nil {
		t.Fatal(err)
	}
	c := &Contract{T: t, V: v}
	c.Do(Exchange{Method: "GET", Path: "/v1/openapi.json", Valid: true, Want: []int{200}})

	o := NewOrg(t)
	rc := NewReceiver(t, nil)
	applied, secret := ApplyEndpoint(t, o.Ns, rc.URL(), nil)
	rc.Trust(secret)

	t.Run("keys", func(t *testing.T) {
		c := &Contract{T: t, V: v}
		c.Do(Exchange{Method: "GET", Path: "/v1/calls", Valid: false, Want: []int{401}})
		c.Do(Exchange{Method: "GET", Path: "/v1/calls", Key: "sk_test_not_a_key", Valid: true, Want: []int{401}})
		c.Do(Exchange{Method: "POST", Path: "/v1/calls/call_0/stop", Valid: false, Want: []int{401}})
		c.Do(Exchange{Method: "GET", Path: "/v1/webhook-endpoints", Valid: false, Want: []int{401}})
	})

	ada := map[string]any{"customer_name": "Ada"}
	create := func(body map[string]any, header http.Header, valid bool, want ...int) Response {
		return c.Do(Exchange{Method: "POST", Path: "/v1/calls", Key: o.Key, Body: body, Header: header, Valid: valid, Want: want})
	}
	answered := create(map[string]any{"agent_id": o.AgentID, "to_number": "+14155551234", "variables": ada,
		"metadata": map[string]any{"order": 7}}, nil, true, 201)
	callID := answered.Body["call_id"].(string)

	t.Run("create", func(t *testing.T) {
		c, g := &Contract{T: t, V: v}, NewWithT(t)
		create := func(body any, header http.Header, valid bool, want ...int) Response {
			return c.Do(Exchange{Method: "POST", Path: "/v1/calls", Key: o.Key, Body: body, Header: header, Valid: valid, Want: want})
		}
		create(map[string]any{"override_agent_id": o.AgentID, "to_number": "(415) 555-1236",
			"retell_llm_dynamic_variables": ada, "override_agent_version": 3, "unknown": true}, nil, true, 201)
		key := http.Header{"Idempotency-Key": {"contract-" + RandHex(8)}}
		body := map[string]any{"agent_id": o.AgentID, "to_number": "+14155551237", "variables": ada}
		first := create(body, key, true, 201)
		again := create(body, key, true, 201)
		g.Expect(again.Header.Get("Idempotent-Replayed")).To(Equal("true"))
		g.Expect(again.Body["call_id"]).To(Equal(first.Body["call_id"]))
		create(map[string]any{"agent_id": o.AgentID, "to_number": "+14155551238", "variables": ada}, key, true, 422)
		create(body, http.Header{"Idempotency-Key": {strings.Repeat("k", 256)}}, false, 422)

		// Over 64 KiB: the document states no size, so it takes the request.
		create(map[string]any{"agent_id": o.AgentID, "to_number": "+14155551234", "variables": ada,
			"metadata": map[string]any{"pad": strings.Repeat("x", 70<<10)}}, nil, true, 413)
		create(map[string]any{"to_number": "hello"}, nil, false, 422)
		create("[1]", nil, false, 422)
		create(`{"agent_id":`, nil, false, 422)
		create(map[string]any{"agent_id": "7f2c1e9a-0000-4000-8000-000000000000", "to_number": "+14155551234"}, nil, true, 404)
		create(map[string]any{"agent_id": o.AgentID, "to_number": "+14155551234"}, nil, true, 422)
		create(map[string]any{"agent_id": o.AgentID, "to_number": "+14155551234", "from_number": "+14155550199",
			"variables": ada}, nil, true, 422)
		failed := create(map[string]any{"agent_id": o.AgentID, "to_number": "+14155550008", "variables": ada}, nil, true, 502)
		failedID := Detail(t, failed)["call_id"].(string)
		c.Do(Exchange{Method: "GET", Path: "/v1/calls/" + failedID, Key: o.Key, Valid: true, Want: []int{200}})
		c.Do(Exchange{Method: "GET", Path: "/v1/calls/" + failedID + "/recording", Key: o.Key, Valid: true, Want: []int{404}})
		c.Do(Exchange{Method: "GET", Path: "/v1/calls/" + failedID + "/transcript", Key: o.Key, Valid: true, Want: []int{404}})
	})

	t.Run("read", func(t *testing.T) {
		c, g := &Contract{T: t, V: v}, NewWithT(t)
		get := func(path string, valid bool, want ...int) Response {
			return c.Do(Exchange{Method: "GET", Path: path, Key: o.Key, Valid: valid, Want: want})
		}
		get("/v1/calls/"+callID, true, 200)
		o.WaitAnalyzed(t, callID)
		call := get("/v1/calls/"+callID, true, 200)
		g.Expect(call.Body["recording_url"]).NotTo(BeNil())
		get("/v1/calls/"+callID+"/recording", true, 200)
		get("/v1/calls/"+callID+"/transcript", true, 200)
		get("/v1/calls/call_0", true, 404)
		get("/v1/calls/call_0/recording", true, 404)
		get("/v1/calls/call_0/transcript", true, 404)
		get("/v1/calls/not-a-call", false, 422)
		get("/v1/calls/not-a-call/recording", false, 422)
		get("/v1/calls/not-a-call/transcript", false, 422)

		page := get("/v1/calls?limit=2", true, 200)
		g.Expect(page.Body["has_more"]).To(BeTrue())
		get("/v1/calls?limit=2&cursor="+url.QueryEscape(page.Body["next_cursor"].(string)), true, 200)
		q := url.Values{"status": {"ended"}, "disposition": {"answered"}, "source": {"api"}, "agent_id": {o.AgentID},
			"to_number": {"+14155551234"}, "created_after": {"2020-01-01T00:00:00Z"}, "created_before": {"2100-01-01T00:00:00Z"}}
		list := get("/v1/calls?"+q.Encode(), true, 200)
		g.Expect(list.Body["data"]).NotTo(BeEmpty())
		get("/v1/calls?status=done", false, 422)
		get("/v1/calls?limit=0", false, 422)
		get("/v1/calls?limit=1001", false, 422)
	})

	t.Run("campaigns", func(t *testing.T) {
		c, g := &Contract{T: t, V: v}, NewWithT(t)
		send := func(method, path string, body any, valid bool, want ...int) Response {
			return c.Do(Exchange{Method: method, Path: path, Key: o.Key, Body: body, Valid: valid, Want: want})
		}
		created := send("POST", "/v1/campaigns", map[string]any{"agent_id": o.AgentID, "name": "Contract",
			"contacts":       []any{map[string]any{"to_number": "+14155551240", "variables": ada}},
			"calling_window": map[string]any{"start": "00:00", "end": "24:00"}, "pacing": map[string]any{"calls_per_second": 1},
			"redial": map[string]any{"busy": map[string]any{"attempts": 2, "min_gap_seconds": 60}}}, true, 201)
		id := created.Body["campaign_id"].(string)
		send("GET", "/v1/campaigns/"+id, nil, true, 200)
		send("GET", "/v1/campaigns", nil, true, 200)
		send("POST", "/v1/campaigns/"+id+"/pause", nil, true, 200)
		send("POST", "/v1/campaigns/"+id+"/contacts", map[string]any{
			"contacts": []any{map[string]any{"to_number": "+14155551241", "variables": ada}}}, true, 200)
		send("POST", "/v1/campaigns/"+id+"/contacts", map[string]any{
			"contacts": []any{map[string]any{"to_number": "not a number"}}}, true, 422)
		send("POST", "/v1/campaigns/campaign-none/contacts", map[string]any{
			"contacts": []any{map[string]any{"to_number": "+14155551242"}}}, true, 404)
		send("POST", "/v1/campaigns/"+id+"/cancel", nil, true, 200)
		send("POST", "/v1/campaigns/"+id+"/contacts", map[string]any{
			"contacts": []any{map[string]any{"to_number": "+14155551243"}}}, true, 409)
		send("POST", "/v1/campaigns/"+id+"/resume", nil, true, 409)
		g.Eventually(func() any { return send("GET", "/v1/campaigns/"+id, nil, true, 200).Body["completed_at"] },
			10*time.Second, 100*time.Millisecond).ShouldNot(BeNil())
		send("GET", "/v1/campaigns/"+id, nil, true, 200)
		send("GET", "/v1/campaigns/"+id+"/calls", nil, true, 200)
		send("GET", "/v1/campaigns/campaign-none", nil, true, 404)
		send("POST", "/v1/campaigns", map[string]any{"agent_id": o.AgentID,
			"contacts": []any{map[string]any{"to_number": "+14155551240", "timezone": "Nowhere/Land"}}}, true, 422)
		send("POST", "/v1/campaigns", map[string]any{"agent_id": o.AgentID}, false, 422)
		send("POST", "/v1/campaigns", map[string]any{"agent_id": "7f2c1e9a-0000-4000-8000-000000000000",
			"contacts": []any{map[string]any{"to_number": "+14155551240"}}}, true, 404)
	})

	t.Run("stop", func(t *testing.T) {
		c, g := &Contract{T: t, V: v}, NewWithT(t)
		stop := func(id string, valid bool, want ...int) Response {
			return c.Do(Exchange{Method: "POST", Path: "/v1/calls/" + id + "/stop", Key: o.Key, Valid: valid, Want: want})
		}
		id := o.CreateCall(t, "+14155551239", nil)
		stop(id, true, 202)
		g.Eventually(func() any { return o.GetCall(t, id)["status"] }, 10*time.Second, 50*time.Millisecond).
			Should(BeElementOf("ended", "failed"))
		stop(id, true, 409)
		stop("call_0", true, 404)
		stop("not-a-call", false, 422)
	})

	t.Run("limits", func(t *testing.T) {
		c, g := &Contract{T: t, V: v}, NewWithT(t)
		concurrency := c.Do(Exchange{Method: "GET", Path: "/v1/concurrency", Key: o.Key, Valid: true, Want: []int{200}})
		g.Expect(concurrency.Body["concurrency_limit"]).To(BeNil())
		var ns corev1.Namespace
		g.Expect(K8s.Get(context.Background(), client.ObjectKey{Name: o.Ns}, &ns)).To(Succeed())
		patch := client.MergeFrom(ns.DeepCopy())
		ns.Annotations = map[string]string{quota.CreateRateAnnotation: "0.01", quota.ActiveCallsAnnotation: "1"}
		g.Expect(K8s.Patch(context.Background(), &ns, patch)).To(Succeed())
		g.Eventually(func() any { return Do(t, "GET", "/v1/concurrency", o.Key, nil).Body["concurrency_limit"] },
			10*time.Second, 50*time.Millisecond).Should(BeEquivalentTo(1))
		c.Do(Exchange{Method: "GET", Path: "/v1/concurrency", Key: o.Key, Valid: true, Want: []int{200}})
		body := map[string]any{"agent_id": o.AgentID, "to_number": "+14155551240", "variables": ada}
		c.Do(Exchange{Method: "POST", Path: "/v1/calls", Key: o.Key, Body: body, Valid: true, Want: []int{201, 429}})
		refused := c.Do(Exchange{Method: "POST", Path: "/v1/calls", Key: o.Key, Body: body, Valid: true, Want: []int{429}})
		g.Expect(refused.Header.Get("Retry-After")).NotTo(BeEmpty())
	})

	t.Run("webhook endpoints", func(t *testing.T) {
		c, g := &Contract{T: t, V: v}, NewWithT(t)
		call := func(method, path string, body any, valid bool, want ...int) Response {
			return c.Do(Exchange{Method: method, Path: path, Key: o.Key, Body: body, Valid: valid, Want: want})
		}
		created := call("POST", "/v1/webhook-endpoints", map[string]any{"url": rc.URL(), "events": []string{"call.ended"},
			"description": "contract"}, true, 201)
		ep := "/v1/webhook-endpoints/" + created.Body["id"].(string)
		call("POST", "/v1/webhook-endpoints", map[string]any{"url": 5}, false, 422)
		call("POST", "/v1/webhook-endpoints", map[string]any{"url": rc.URL(), "pad": strings.Repeat("x", 70<<10)}, true, 413)
		call("POST", "/v1/webhook-endpoints", map[string]any{"description": "no url"}, false, 422)

		page := call("GET", "/v1/webhook-endpoints?limit=1", nil, true, 200)
		g.Expect(page.Body["has_more"]).To(BeTrue())
		call("GET", "/v1/webhook-endpoints?cursor="+page.Body["next_cursor"].(string), nil, true, 200)
		call("GET", "/v1/webhook-endpoints?limit=0", nil, false, 422)
		call("GET", ep, nil, true, 200)
		call("GET", "/v1/webhook-endpoints/we_00000000000000000000000000000000", nil, true, 404)

		call("PATCH", ep, map[string]any{"events": nil, "description": nil}, true, 200)
		call("PATCH", ep, map[string]any{"disabled": true}, true, 200)
		call("PATCH", ep, map[string]any{"disabled": false}, true, 200)
		call("PATCH", ep, map[string]any{"url": nil}, false, 422)

		call("POST", ep+"/test", nil, true, 200)
		call("POST", ep+"/test", map[string]any{"event": "call.started"}, true, 200)
		call("POST", ep+"/test", map[string]any{"event": "call.analyzed"}, true, 200)
		call("POST", ep+"/test", map[string]any{"event": "nope"}, false, 422)

		call("GET", ep+"/deliveries", nil, true, 200)
		tests := call("GET", ep+"/deliveries?event=test&status=succeeded&limit=2", nil, true, 200)
		g.Expect(tests.Body["has_more"]).To(BeTrue(), "three test deliveries, two a page")
		testDelivery := tests.Body["data"].([]any)[0].(map[string]any)["id"].(string)
		call("GET", ep+"/deliveries?event=test&cursor="+tests.Body["next_cursor"].(string), nil, true, 200)
		call("GET", ep+"/deliveries?status=bogus", nil, false, 422)
		call("GET", ep+"/deliveries/"+testDelivery, nil, true, 200)
		call("GET", ep+"/deliveries/dlv_00000000000000000000000000000000", nil, true, 404)
		call("POST", ep+"/deliveries/"+testDelivery+"/retry", nil, true, 409)

		// A real delivery: the call event of the endpoint applied as YAML.
		appliedPath := "/v1/webhook-endpoints/" + applied.ResolvedID()
		g.Eventually(func() int { return len(rc.ForCall(callID)) }, 20*time.Second, 50*time.Millisecond).Should(BeNumerically(">=", 3))
		ended := call("GET", appliedPath+"/deliveries?event=call.ended", nil, true, 200)
		g.Expect(ended.Body["data"]).NotTo(BeEmpty())
		realDelivery := ended.Body["data"].([]any)[0].(map[string]any)["id"].(string)
		call("POST", appliedPath+"/deliveries/"+realDelivery+"/retry", nil, true, 202)

		call("POST", ep+"/rotate-secret", nil, true, 200)
		call("DELETE", ep, nil, true, 204)
		// Reads come from the cache, which learns of the delete a moment later.
		g.Eventually(func() int { return Do(t, "GET", ep, o.Key, nil).Status }, 10*time.Second, 20*time.Millisecond).
			Should(Equal(http.StatusNotFound))
		call("GET", ep, nil, true, 404)
	})

	t.Run("webhook deliveries", func(t *testing.T) {
		got := rc.Deliveries()
		kinds := map[string]int{}
		for _, d := range got {
			name := d.Event
			if d.Call()["call_id"] == deliveries.SampleCallID {
				name = "test"
			}
			kinds[name]++
			if err := v.Webhook(name, d.Header, d.Body); err != nil {
				t.Errorf("a %s delivery does not match the OpenAPI document's webhook %q:\n  %v\n  body: %s", d.Event, name, err, d.Body)
			}
		}
		for _, name := range []string{"call.started", "call.ended", "call.analyzed", "test"} {
			if kinds[name] == 0 {
				t.Errorf("the receiver got no %s delivery (got %v)", name, kinds)
			}
		}
	})
}
