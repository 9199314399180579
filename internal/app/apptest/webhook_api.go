package apptest

// The webhook-endpoint API (README, "Webhook-endpoint API") over real HTTP against a real
// kube-apiserver: endpoints created, listed, changed and deleted, secrets
// rotated, test events sent to real receivers, and the delivery log read.
// The suite runs webhooks in development mode, so plain-http loopback
// receivers are allowed.

import (
	"context"
	"encoding/base64"
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/history"
)

// Receivers that are never called are IP literals: the URL policy resolves
// host names, and the test machine may have no DNS.
const (
	WapiEndpointID = `^we_[0-9a-f]{32}$`
	WapiDeliveryID = `^dlv_[0-9a-f]{32}$`
	WapiTimestamp  = `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`
)

// WapiKinds are the kinds an endpoint subscribed to none receives: the
// call events, not the campaigns' (which carry no call), which an endpoint
// gets only by naming them.
var WapiKinds = []any{"call.started", "call.ended", "call.analyzed"}

// HookSink is a plain-http receiver that answers every request with one
// status and keeps what it got.
type HookSink struct {
	Srv    *httptest.Server
	Status int
	Mu     sync.Mutex
	Got    []SinkRequest
}

type SinkRequest struct {
	Header http.Header
	Body   []byte
}

func NewHookSink(t *testing.T, status int) *HookSink {
	t.Helper()
	s := &HookSink{Status: status}
	s.Srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.Mu.Lock()
		s.Got = append(s.Got, SinkRequest{Header: r.Header.Clone(), Body: body})
		s.Mu.Unlock()
		w.WriteHeader(s.Status)
		_, _ = io.WriteString(w, http.StatusText(s.Status))
	}))
	t.Cleanup(s.Srv.Close)
	return s
}

func (s *HookSink) URL() string { return s.Srv.URL + "/hooks" }

func (s *HookSink) Requests() []SinkRequest {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	return slices.Clone(s.Got)
}

// ClosedPortURL is a receiver URL nothing listens on.
func ClosedPortURL(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	_ = lis.Close()
	return "http://" + addr + "/hooks"
}

// CreateEndpoint registers an endpoint over REST, expects 201 and returns
// the response body (with the secret).
func CreateEndpoint(t *testing.T, key string, body map[string]any) map[string]any {
	t.Helper()
	r := Do(t, "POST", "/v1/webhook-endpoints", key, body)
	if r.Status != http.StatusCreated {
		t.Fatalf("POST /v1/webhook-endpoints = %d %s, want 201", r.Status, r.Raw)
	}
	return r.Body
}

func EndpointPath(id string, rest ...string) string {
	return "/v1/webhook-endpoints/" + id + strings.Join(rest, "")
}

// EndpointResource finds the WebhookEndpoint behind a REST id.
func EndpointResource(t *testing.T, ns, id string) *switchboardv1.WebhookEndpoint {
	t.Helper()
	var list switchboardv1.WebhookEndpointList
	NewWithT(t).Expect(K8s.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	for i := range list.Items {
		if list.Items[i].ResolvedID() == id {
			return &list.Items[i]
		}
	}
	t.Fatalf("no WebhookEndpoint in %s has id %s", ns, id)
	return nil
}

func CountEndpoints(t *testing.T, ns string) int {
	t.Helper()
	var list switchboardv1.WebhookEndpointList
	NewWithT(t).Expect(K8s.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	return len(list.Items)
}

// ListIDs reads one page of a list endpoint and returns its ids.
func ListIDs(t *testing.T, key, path string) ([]string, Response) {
	t.Helper()
	r := Do(t, "GET", path, key, nil)
	ExpectStatusJSON(t, r, http.StatusOK)
	data, ok := r.Body["data"].([]any)
	if !ok {
		t.Fatalf("GET %s: data is not an array: %s", path, r.Raw)
	}
	ids := make([]string, len(data))
	for i, item := range data {
		ids[i] = item.(map[string]any)["id"].(string)
	}
	return ids, r
}

// ExpectSecret checks a signing secret's shape: whsec_ + base64 of 32 bytes.
func ExpectSecret(g Gomega, v any) string {
	s, ok := v.(string)
	g.Expect(ok).To(BeTrue(), "secret is not a string: %v", v)
	g.Expect(s).To(HavePrefix("whsec_"))
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
	g.Expect(err).NotTo(HaveOccurred(), "secret is not whsec_ + standard base64")
	g.Expect(raw).To(HaveLen(32))
	return s
}

// ExpectCodeDetail asserts {"detail": {"error": "...", "error_code": code}}
// and returns the error text.
func ExpectCodeDetail(t *testing.T, r Response, status int, code string) string {
	t.Helper()
	ExpectStatusJSON(t, r, status)
	g := NewWithT(t)
	g.Expect(r.Body).To(HaveLen(1), "body %s", r.Raw)
	d := Detail(t, r)
	g.Expect(d).To(HaveLen(2), "body %s", r.Raw)
	g.Expect(d).To(HaveKeyWithValue("error_code", code), "body %s", r.Raw)
	msg, _ := d["error"].(string)
	g.Expect(msg).NotTo(BeEmpty(), "body %s", r.Raw)
	return msg
}

// SendTestEvent posts a test event and checks the response's shape.
func SendTestEvent(t *testing.T, key, id string, body any) map[string]any {
	t.Helper()
	r := Do(t, "POST", EndpointPath(id, "/test"), key, body)
	ExpectStatusJSON(t, r, http.StatusOK)
	g := NewWithT(t)
	g.Expect(r.Body).To(HaveLen(4), "want delivery_id, status, status_code, error: %s", r.Raw)
	g.Expect(r.Body["delivery_id"]).To(MatchRegexp(WapiDeliveryID))
	g.Expect(r.Body).To(HaveKey("status_code"))
	g.Expect(r.Body).To(HaveKey("error"))
	return r.Body
}

// WapiDelivery stores a delivery of a call event directly in the delivery
// log, with the given final status (nil: pending, never due).
func WapiDelivery(t *testing.T, ep *switchboardv1.WebhookEndpoint, event string, status *history.DeliveryStatus) string {
	t.Helper()
	g := NewWithT(t)
	hexID := RandHex(16)
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
	g.Expect(HistoryStore.SaveDelivery(context.Background(), d, time.Time{})).To(Succeed())
	return d.Spec.DeliveryID
}
