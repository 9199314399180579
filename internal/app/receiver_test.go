package app_test

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

// receiver is a customer's HTTPS webhook receiver. It verifies every
// request with the official Standard Webhooks library, against each secret
// it is told to trust, and records what it got.
type receiver struct {
	srv *httptest.Server

	mu      sync.Mutex
	secrets []string
	got     []delivery
	// respond answers the n-th request (0-based); nil answers 200.
	respond func(n int, w http.ResponseWriter, r *http.Request)
}

// delivery is one request a receiver got.
type delivery struct {
	id, event string
	header    http.Header
	body      []byte
	envelope  map[string]any
	at        time.Time
	// verified says, per trusted secret, whether the signature verified.
	verified []bool
}

func (d delivery) call() map[string]any { c, _ := d.envelope["call"].(map[string]any); return c }

func newReceiver(t testing.TB, respond func(n int, w http.ResponseWriter, r *http.Request)) *receiver {
	t.Helper()
	rc := &receiver{respond: respond}
	rc.srv = httptest.NewTLSServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) url() string { return rc.srv.URL + "/hooks/switchboard" }

func (rc *receiver) trust(secrets ...string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.secrets = secrets
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	d := delivery{id: r.Header.Get("webhook-id"), header: r.Header.Clone(), body: body, at: time.Now()}
	_ = json.Unmarshal(body, &d.envelope)
	d.event, _ = d.envelope["event"].(string)
	rc.mu.Lock()
	for _, s := range rc.secrets {
		wh, err := standardwebhooks.NewWebhook(s)
		d.verified = append(d.verified, err == nil && wh.Verify(body, r.Header) == nil)
	}
	n := len(rc.got)
	rc.got = append(rc.got, d)
	respond := rc.respond
	rc.mu.Unlock()
	if respond == nil {
		w.WriteHeader(http.StatusOK)
		return
	}
	respond(n, w, r)
}

// deliveries returns what the receiver got so far.
func (rc *receiver) deliveries() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]delivery(nil), rc.got...)
}

// forCall returns the requests about one call, in arrival order.
func (rc *receiver) forCall(callID string) []delivery {
	var out []delivery
	for _, d := range rc.deliveries() {
		if d.call()["call_id"] == callID {
			out = append(out, d)
		}
	}
	return out
}

func events(ds []delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.event
	}
	return out
}

// expectSigned checks a request the way a careful receiver does: the
// signature verifies with every trusted secret, and the X-Service-*
// headers carry the same values as the webhook-* ones.
func expectSigned(g Gomega, d delivery) {
	g.Expect(d.verified).NotTo(BeEmpty(), "receiver trusts no secret")
	for i, ok := range d.verified {
		g.Expect(ok).To(BeTrue(), "signature does not verify with secret %d: %s", i, d.header.Get("webhook-signature"))
	}
	g.Expect(d.header.Get("X-Service-Signature")).To(Equal(d.header.Get("webhook-signature")))
	g.Expect(d.header.Get("X-Service-Delivery-Id")).To(Equal(d.header.Get("webhook-id")))
	g.Expect(d.header.Get("X-Service-Timestamp")).To(Equal(d.header.Get("webhook-timestamp")))
	g.Expect(d.header.Get("webhook-id")).To(MatchRegexp(`^dlv_[0-9a-f]{32}$`))
	g.Expect(d.header.Get("Content-Type")).To(Equal("application/json"))
	g.Expect(d.header.Get("Authorization")).To(BeEmpty(), "deliveries never carry the API key")
}

// onlyCallStarted subscribes an endpoint (applyEndpoint's mutate) to
// call.started alone: one delivery per call, for the retry tests.
func onlyCallStarted(s *switchboardv1.WebhookEndpointSpec) {
	s.Events = []switchboardv1.WebhookEventType{"call.started"}
}

// applyEndpoint creates a WebhookEndpoint the way a platform team does
// (kubectl apply), waits until it is Ready, and returns it with the
// signing secret Switchboard generated for it.
func applyEndpoint(t testing.TB, ns, url string, mutate func(*switchboardv1.WebhookEndpointSpec)) (*switchboardv1.WebhookEndpoint, string) {
	t.Helper()
	g := NewWithT(t)
	ep := &switchboardv1.WebhookEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "receiver-"},
		Spec: switchboardv1.WebhookEndpointSpec{URL: url}}
	if mutate != nil {
		mutate(&ep.Spec)
	}
	g.Expect(k8s.Create(context.Background(), ep)).To(Succeed())
	g.Eventually(func() bool {
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(ep), ep)).To(Succeed())
		return apimeta.IsStatusConditionTrue(ep.Status.Conditions, switchboardv1.ReadyCondition)
	}, 10*time.Second, 20*time.Millisecond).Should(BeTrue(), "endpoint %s never Ready: %+v", ep.Name, ep.Status.Conditions)
	return ep, signingSecret(t, ep)
}

func signingSecret(t testing.TB, ep *switchboardv1.WebhookEndpoint) string {
	t.Helper()
	var s corev1.Secret
	NewWithT(t).Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ep.Namespace,
		Name: ep.SigningSecretName()}, &s)).To(Succeed())
	secret := string(s.Data[switchboardv1.WebhookSecretKey])
	NewWithT(t).Expect(secret).To(HavePrefix("whsec_"))
	return secret
}

// deliveriesOf lists the deliveries of a call in the suite's history store.
func deliveriesOf(t testing.TB, ns, callName string) []history.Delivery {
	t.Helper()
	ds, err := historyStore.ListDeliveries(context.Background(), ns, history.DeliveryQuery{CallName: callName, Limit: 1000})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return ds
}

func callName(id string) string { return "call-" + strings.TrimPrefix(id, "call_") }

func newSecretObject(ns, name, secret string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data: map[string][]byte{switchboardv1.WebhookSecretKey: []byte(secret)}}
}
