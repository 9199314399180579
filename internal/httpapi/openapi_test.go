package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/go-logr/logr"

	"github.com/switchboard-dev/switchboard/internal/apikeys"
	"github.com/switchboard-dev/switchboard/internal/httpapi"
	"github.com/switchboard-dev/switchboard/internal/httpapi/openapitest"
	"github.com/switchboard-dev/switchboard/internal/services"
)

// testRouter is the API's router with nothing behind it: enough to walk
// its routes and to answer what it answers before reaching the cluster.
// RecordingFiles is set so that the /recordings/ route exists, as it does
// with local recordings.
func testRouter() http.Handler {
	return httpapi.NewRouter(httpapi.Config{Services: services.Services{Keys: apikeys.NewIndex()}, Log: logr.Discard(),
		RecordingFiles: http.NotFoundHandler()})
}

// fetchDocument gets the document the way a client generator does: over
// HTTP, without a key.
func fetchDocument(t *testing.T, h http.Handler) []byte {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/openapi.json", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /v1/openapi.json without a key = %d %s, want 200", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("GET /v1/openapi.json: Content-Type %q, want application/json", ct)
	}
	return rec.Body.Bytes()
}

func TestOpenAPIDocumentIsValidOpenAPI31(t *testing.T) {
	doc, err := openapitest.Load(fetchDocument(t, testRouter()))
	if err != nil {
		t.Fatal(err)
	}
	info := asMap(doc.Tree["info"])
	if doc.Tree["openapi"] != "3.1.0" || info["version"] != "1.0" {
		t.Errorf("openapi %v, info.version %v; want 3.1.0 and 1.0 (the API's version)", doc.Tree["openapi"], info["version"])
	}
	bearer := dig(doc.Tree, "components", "securitySchemes", "bearerAuth")
	if bearer["type"] != "http" || bearer["scheme"] != "bearer" {
		t.Errorf("security scheme bearerAuth = %v, want HTTP bearer", bearer)
	}
	if sec, _ := doc.Tree["security"].([]any); len(sec) != 1 || asMap(sec[0])["bearerAuth"] == nil {
		t.Errorf("top-level security = %v, want bearerAuth", doc.Tree["security"])
	}

	// Every event kind, and the test event, with the Standard Webhooks
	// headers and their X-Service- twins, and no API key.
	var webhooks []string
	for name, item := range asMap(doc.Tree["webhooks"]) {
		webhooks = append(webhooks, name)
		post := asMap(asMap(item)["post"])
		if post["requestBody"] == nil {
			t.Errorf("webhook %s: no POST with a body", name)
			continue
		}
		var headers []string
		for _, p := range post["parameters"].([]any) {
			if param := doc.Resolve(p); param["in"] == "header" && param["required"] == true {
				headers = append(headers, param["name"].(string))
			}
		}
		for _, h := range []string{"webhook-id", "webhook-timestamp", "webhook-signature",
			"X-Service-Delivery-Id", "X-Service-Timestamp", "X-Service-Signature", "X-Service-Event"} {
			if !slices.Contains(headers, h) {
				t.Errorf("webhook %s: required header %s is not documented (has %v)", name, h, headers)
			}
		}
		if sec, ok := post["security"].([]any); !ok || len(sec) != 0 {
			t.Errorf("webhook %s: security must be [] (deliveries carry a signature, not the API key)", name)
		}
	}
	sort.Strings(webhooks)
	if want := []string{"call.analyzed", "call.ended", "call.started", "campaign.completed", "campaign.paused",
		"campaign.started", "test"}; !slices.Equal(webhooks, want) {
		t.Errorf("webhooks %v, want %v", webhooks, want)
	}
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// TestOpenAPIValidatorRejectsBrokenDocuments keeps the validity test above
// honest: the library must refuse these small breakages of the real
// document, each of which OpenAPI 3.1 forbids.
func TestOpenAPIValidatorRejectsBrokenDocuments(t *testing.T) {
	raw := fetchDocument(t, testRouter())
	breakages := map[string]func(doc map[string]any){
		"no info": func(doc map[string]any) { delete(doc, "info") },
		"a response without description": func(doc map[string]any) {
			delete(dig(doc, "paths", "/v1/calls", "post", "responses", "201"), "description")
		},
		"a path parameter missing from the template": func(doc map[string]any) {
			paths := dig(doc, "paths")
			paths["/v1/calls/gone"] = paths["/v1/calls/{call_id}"]
			delete(paths, "/v1/calls/{call_id}")
		},
		"an unknown type in a schema": func(doc map[string]any) {
			dig(doc, "components", "schemas", "CallList", "properties", "has_more")["type"] = "bool"
		},
		"a boolean exclusiveMinimum (OpenAPI 3.0 only)": func(doc map[string]any) {
			dig(doc, "components", "schemas", "Call", "properties", "duration_ms")["exclusiveMinimum"] = true
		},
		"a dangling reference": func(doc map[string]any) {
			dig(doc, "components", "schemas", "CallList", "properties", "data", "items")["$ref"] = "#/components/schemas/Nope"
		},
		"a duplicate operationId": func(doc map[string]any) {
			dig(doc, "paths", "/v1/calls/{call_id}", "get")["operationId"] = "createCall"
		},
		"an example that does not match its schema": func(doc map[string]any) {
			dig(doc, "paths", "/v1/calls", "post", "requestBody", "content", "application/json")["example"] =
				map[string]any{"agent_id": 7}
		},
	}
	for name, breakIt := range breakages {
		t.Run(name, func(t *testing.T) {
			var doc map[string]any
			if err := json.Unmarshal(raw, &doc); err != nil {
				t.Fatal(err)
			}
			breakIt(doc)
			broken, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			_, err = openapitest.Load(broken)
			if err == nil {
				t.Fatal("the broken document validated")
			}
			t.Log(err)
		})
	}
}

// dig walks a decoded JSON document down keys, failing loudly (a panic in
// a test) when the document no longer has that shape.
func dig(node map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		next, ok := node[k].(map[string]any)
		if !ok {
			panic("document has no object at " + strings.Join(keys, " > "))
		}
		node = next
	}
	return node
}

// undocumentedPrefixes are the routes the document leaves out on purpose:
//   - /v2/, /v3/ and /create-batch-call: compatibility routes for the
//     hosted service's SDKs, which speak that service's API, not this one
//     (their own contract);
//   - /recordings/: the signed links that recording_url and the recording
//     endpoint hand out; a client follows them, it does not call them;
//   - health and metrics: for the kubelet and Prometheus, served on their
//     own ports, not part of the customer API (listed in case they move).
var undocumentedPrefixes = []string{"/v2/", "/v3/", "/create-batch-call", "/recordings/", "/healthz", "/readyz", "/metrics"}

// chiParams maps the router's parameter names to the document's (the
// API's public names).
var chiParams = map[string]string{"callID": "call_id", "endpointID": "id", "deliveryID": "delivery_id", "campaignID": "campaign_id"}

var chiParam = regexp.MustCompile(`\{([^}:]+)(:[^}]*)?\}`)

// openAPIPath writes a chi pattern the way the document does: parameters
// renamed (and any regexp dropped), no trailing slash (chi's "/" inside a
// Route is the route's own path).
func openAPIPath(pattern string) string {
	p := chiParam.ReplaceAllStringFunc(pattern, func(m string) string {
		name := chiParam.FindStringSubmatch(m)[1]
		if n, ok := chiParams[name]; ok {
			name = n
		}
		return "{" + name + "}"
	})
	if len(p) > 1 {
		p = strings.TrimSuffix(p, "/")
	}
	return p
}

func undocumented(path string) bool {
	for _, prefix := range undocumentedPrefixes {
		if strings.HasPrefix(path, prefix) {
			return true
		}
	}
	return false
}

// TestOpenAPIMatchesRouter holds the document and the router to each
// other: every route is documented, and every documented operation is
// routed.
func TestOpenAPIMatchesRouter(t *testing.T) {
	h := testRouter()
	doc, err := openapitest.Load(fetchDocument(t, h))
	if err != nil {
		t.Fatal(err)
	}
	routed := map[string]bool{}
	err = chi.Walk(h.(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if path := openAPIPath(route); !undocumented(path) {
			routed[method+" "+path] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !routed["GET /v1/calls/{call_id}"] {
		t.Fatalf("the walk found no GET /v1/calls/{call_id}: the pattern mapping is off (routes: %v)", keys(routed))
	}
	documented := map[string]bool{}
	for _, op := range doc.Operations() {
		if undocumented(op.Path) {
			t.Errorf("%s is documented, but its prefix is one the document leaves out", op.Path)
		}
		documented[op.Method+" "+op.Path] = true
	}
	var notDocumented, notRouted []string
	for op := range routed {
		if !documented[op] {
			notDocumented = append(notDocumented, op)
		}
	}
	for op := range documented {
		if !routed[op] {
			notRouted = append(notRouted, op)
		}
	}
	sort.Strings(notDocumented)
	sort.Strings(notRouted)
	if len(notDocumented) > 0 {
		t.Errorf("routed but not in the OpenAPI document (document them in internal/httpapi/openapi/openapi.yaml):\n  %s",
			strings.Join(notDocumented, "\n  "))
	}
	if len(notRouted) > 0 {
		t.Errorf("in the OpenAPI document but not routed:\n  %s", strings.Join(notRouted, "\n  "))
	}
}

// samplePathValues fill the document's path parameters with well-formed
// ids.
var samplePathValues = map[string]string{
	"call_id":     "call_4a35433fba4ee9a8dde28705f8a6f374",
	"id":          "we_8ae376b9238d40ae846c9214bc6c076c",
	"delivery_id": "dlv_dbbc1225034483e274a05f3247835f55",
	"campaign_id": "campaign-4a35433fba4ee9a8dde28705f8a6f374",
}

// TestOpenAPISecurityMatchesRouter sends every documented operation
// without a key: those the document secures must answer 401, in the
// documented shape; those it leaves open (the document itself) must not.
func TestOpenAPISecurityMatchesRouter(t *testing.T) {
	h := testRouter()
	raw := fetchDocument(t, h)
	doc, err := openapitest.Load(raw)
	if err != nil {
		t.Fatal(err)
	}
	v, err := openapitest.NewValidator(raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range doc.Operations() {
		path := op.Path
		for name, value := range samplePathValues {
			path = strings.ReplaceAll(path, "{"+name+"}", value)
		}
		req := httptest.NewRequest(op.Method, path, nil)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		body, _ := io.ReadAll(rec.Body)
		switch {
		case op.Secured && rec.Code != http.StatusUnauthorized:
			t.Errorf("%s %s without a key = %d %s; the document requires a key (401)", op.Method, path, rec.Code, body)
			continue
		case !op.Secured && rec.Code == http.StatusUnauthorized:
			t.Errorf("%s %s without a key = 401; the document says it needs none", op.Method, path)
			continue
		}
		if err := v.Response(req, nil, rec.Code, rec.Header(), body); err != nil {
			t.Errorf("%s %s without a key: the %d response does not match the document:\n  %v", op.Method, path, rec.Code, err)
		}
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
