package apptest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/history"
)

// Receiver is a customer's HTTPS webhook receiver. It verifies every
// request with the official Standard Webhooks library, against each secret
// it is told to trust, and records what it got.
type Receiver struct {
	Srv *httptest.Server

	Mu      sync.Mutex
	Secrets []string
	Got     []Delivery
	// respond answers the n-th request (0-based); nil answers 200.
	Respond func(n int, w http.ResponseWriter, r *http.Request)
}

// Delivery is one request a receiver got.
type Delivery struct {
	ID, Event string
	Header    http.Header
	Body      []byte
	Envelope  map[string]any
	At        time.Time
	// verified says, per trusted secret, whether the signature verified.
	Verified []bool
}

func (d Delivery) Call() map[string]any { c, _ := d.Envelope["call"].(map[string]any); return c }

func NewReceiver(t testing.TB, respond func(n int, w http.ResponseWriter, r *http.Request)) *Receiver {
	t.Helper()
	rc := &Receiver{Respond: respond}
	rc.Srv = httptest.NewTLSServer(http.HandlerFunc(rc.Serve))
	t.Cleanup(rc.Srv.Close)
	return rc
}

func (rc *Receiver) URL() string { return rc.Srv.URL + "/hooks/switchboard" }

func (rc *Receiver) Trust(secrets ...string) {
	rc.Mu.Lock()
	defer rc.Mu.Unlock()
	rc.Secrets = secrets
}

func (rc *Receiver) Serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	d := Delivery{ID: r.Header.Get("webhook-id"), Header: r.Header.Clone(), Body: body, At: time.Now()}
	_ = json.Unmarshal(body, &d.Envelope)
	d.Event, _ = d.Envelope["event"].(string)
	rc.Mu.Lock()
	for _, s := range rc.Secrets {
		wh, err := standardwebhooks.NewWebhook(s)
		d.Verified = append(d.Verified, err == nil && wh.Verify(body, r.Header) == nil)
	}
	n := len(rc.Got)
	rc.Got = append(rc.Got, d)
	respond := rc.Respond
	rc.Mu.Unlock()
	if respond == nil {
		w.WriteHeader(http.StatusOK)
		return
	}
	respond(n, w, r)
}

// Deliveries returns what the receiver got so far.
func (rc *Receiver) Deliveries() []Delivery {
	rc.Mu.Lock()
	defer rc.Mu.Unlock()
	return append([]Delivery(nil), rc.Got...)
}

// ForCall returns the requests about one call, in arrival order.
func (rc *Receiver) ForCall(callID string) []Delivery {
	var out []Delivery
	for _, d := range rc.Deliveries() {
		if d.Call()["call_id"] == callID {
			out = append(out, d)
		}
	}
	return out
}

func Events(ds []Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Event
	}
	return out
}

// ExpectSigned checks a request the way a careful receiver does: the
// signature verifies with every trusted secret, and the X-Service-*
// headers carry the same values as the webhook-* ones.
func ExpectSigned(g Gomega, d Delivery) {
	g.Expect(d.Verified).NotTo(BeEmpty(), "receiver trusts no secret")
	for i, ok := range d.Verified {
		g.Expect(ok).To(BeTrue(), "signature does not verify with secret %d: %s", i, d.Header.Get("webhook-signature"))
	}
	g.Expect(d.Header.Get("X-Service-Signature")).To(Equal(d.Header.Get("webhook-signature")))
	g.Expect(d.Header.Get("X-Service-Delivery-ID")).To(Equal(d.Header.Get("webhook-id")))
	g.Expect(d.Header.Get("X-Service-Timestamp")).To(Equal(d.Header.Get("webhook-timestamp")))
	g.Expect(d.Header.Get("webhook-id")).To(MatchRegexp(`^dlv_[0-9a-f]{32}$`))
	g.Expect(d.Header.Get("Content-Type")).To(Equal("application/json"))
	g.Expect(d.Header.Get("Authorization")).To(BeEmpty(), "deliveries never carry the API key")
}

// OnlyCallStarted subscribes an endpoint (applyEndpoint's mutate) to
// call.started alone: one delivery per call, for the retry tests.
func OnlyCallStarted(s *switchboardv1.WebhookEndpointSpec) {
	s.Events = []switchboardv1.WebhookEventType{"call.started"}
}

// ApplyEndpoint creates a WebhookEndpoint the way a platform team does
// (kubectl apply), waits until it is Ready, and returns it with the
// signing secret Switchboard generated for it.
func ApplyEndpoint(t testing.TB, ns, url string, mutate func(*switchboardv1.WebhookEndpointSpec)) (*switchboardv1.WebhookEndpoint, string) {
	t.Helper()
	g := NewWithT(t)
	ep := &switchboardv1.WebhookEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "receiver-"},
		Spec: switchboardv1.WebhookEndpointSpec{URL: url}}
	if mutate != nil {
		mutate(&ep.Spec)
	}
	g.Expect(K8s.Create(context.Background(), ep)).To(Succeed())
	g.Eventually(func() bool {
		g.Expect(K8s.Get(context.Background(), client.ObjectKeyFromObject(ep), ep)).To(Succeed())
		return apimeta.IsStatusConditionTrue(ep.Status.Conditions, switchboardv1.ReadyCondition)
	}, 10*time.Second, 20*time.Millisecond).Should(BeTrue(), "endpoint %s never Ready: %+v", ep.Name, ep.Status.Conditions)
	return ep, SigningSecret(t, ep)
}

func SigningSecret(t testing.TB, ep *switchboardv1.WebhookEndpoint) string {
	t.Helper()
	var s corev1.Secret
	NewWithT(t).Expect(K8s.Get(context.Background(), client.ObjectKey{Namespace: ep.Namespace,
		Name: ep.SigningSecretName()}, &s)).To(Succeed())
	secret := string(s.Data[switchboardv1.WebhookSecretKey])
	NewWithT(t).Expect(secret).To(HavePrefix("whsec_"))
	return secret
}

// DeliveriesOf lists the deliveries of a call in the suite's history store.
func DeliveriesOf(t testing.TB, ns, callName string) []history.Delivery {
	t.Helper()
	ds, err := HistoryStore.ListDeliveries(context.Background(), ns, history.DeliveryQuery{CallName: callName, Limit: 1000})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return ds
}

func CallName(id string) string { return "call-" + strings.TrimPrefix(id, "call_") }

func NewSecretObject(ns, name, secret string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data: map[string][]byte{switchboardv1.WebhookSecretKey: []byte(secret)}}
}
