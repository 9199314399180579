package controllers_test

// The WebhookEndpoint reconciler and the delivery worker: an endpoint
// applied without a Secret gets a generated signing Secret and becomes
// Ready; the events of a Call reach its receiver signed with that Secret,
// and the delivery log records them.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
	"github.com/switchboard-dev/switchboard/internal/webhook"
	"github.com/switchboard-dev/switchboard/internal/webhook/deliveries"
)

// received is one request a test receiver got.
type received struct {
	header http.Header
	body   []byte
	event  string
}

// testReceiver is an HTTP receiver on loopback that keeps what it gets.
type testReceiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []received
}

func newTestReceiver(t *testing.T) *testReceiver {
	t.Helper()
	rc := &testReceiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var envelope struct{ Event string }
		_ = json.Unmarshal(body, &envelope)
		rc.mu.Lock()
		rc.got = append(rc.got, received{header: r.Header.Clone(), body: body, event: envelope.Event})
		rc.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *testReceiver) received() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// createEndpoint applies an endpoint for events to url, without a Secret.
func createEndpoint(t *testing.T, ns, name, url string, events ...switchboardv1.WebhookEventType) *switchboardv1.WebhookEndpoint {
	t.Helper()
	ep := &switchboardv1.WebhookEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: switchboardv1.WebhookEndpointSpec{URL: url, Events: events}}
	NewWithT(t).Expect(k8s.Create(context.Background(), ep)).To(Succeed())
	return ep
}

// waitEndpointReady waits until ep is Ready and returns it.
func waitEndpointReady(t *testing.T, ep *switchboardv1.WebhookEndpoint) *switchboardv1.WebhookEndpoint {
	t.Helper()
	var cur switchboardv1.WebhookEndpoint
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(ep), &cur)).To(Succeed())
		ready := testsupport.Ready(g, cur.Status.Conditions)
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
	}, resWait, resPoll).Should(Succeed())
	return &cur
}

func TestWebhookEndpointGetsSigningSecret(t *testing.T) {
	suite.Need(t)
	g := NewWithT(t)
	ns := newOrganization(t)
	rc := newTestReceiver(t)
	ep := waitEndpointReady(t, createEndpoint(t, ns, "crm", rc.srv.URL+"/hooks"))
	g.Expect(ep.Status.EndpointID).To(MatchRegexp(`^we_[0-9a-f]{32}$`))
	g.Expect(ep.Status.SecretName).To(Equal(ep.SigningSecretName()))

	var s corev1.Secret
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: ep.Status.SecretName}, &s)).To(Succeed())
	g.Expect(string(s.Data[switchboardv1.WebhookSecretKey])).To(HavePrefix("whsec_"))
	g.Expect(metav1.IsControlledBy(&s, ep)).To(BeTrue(), "the Secret goes with its endpoint")
}

func TestWebhookDeliveryWorkerSendsSignedEvents(t *testing.T) {
	suite.Need(t)
	g := NewWithT(t)
	ns, agentID := newCallOrganization(t)
	rc := newTestReceiver(t)
	ep := waitEndpointReady(t, createEndpoint(t, ns, "crm", rc.srv.URL+"/hooks", webhook.EventCallEnded))
	var s corev1.Secret
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: ep.Status.SecretName}, &s)).To(Succeed())
	verifier, err := standardwebhooks.NewWebhook(string(s.Data[switchboardv1.WebhookSecretKey]))
	g.Expect(err).NotTo(HaveOccurred())

	testsupport.CreateCall(t, k8s, ns, "notified", agentID, "+14155551234")
	c := testsupport.WaitCallFinished(t, k8s, ns, "notified")
	g.Eventually(rc.received, resWait, resPoll).Should(HaveLen(1))
	g.Consistently(rc.received, time.Second, 100*time.Millisecond).Should(HaveLen(1), "only the subscribed event")
	got := rc.received()[0]
	g.Expect(got.event).To(Equal(webhook.EventCallEnded))
	g.Expect(string(got.body)).To(ContainSubstring(c.Status.CallID))
	g.Expect(verifier.Verify(got.body, got.header)).To(Succeed())

	g.Eventually(func(g Gomega) {
		ds, err := historyStore.ListDeliveries(context.Background(), ns, history.DeliveryQuery{CallName: c.Name, Limit: 10})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ds).To(HaveLen(1))
		g.Expect(ds[0].Spec.Event).To(Equal(webhook.EventCallEnded))
		g.Expect(ds[0].Status.Phase).To(BeEquivalentTo("succeeded"))
	}, resWait, resPoll).Should(Succeed())
	// The endpoint reports its last delivery.
	g.Eventually(func(g Gomega) {
		var cur switchboardv1.WebhookEndpoint
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(ep), &cur)).To(Succeed())
		g.Expect(cur.Status.LastDeliveryResult).To(Equal("200"))
	}, resWait, resPoll).Should(Succeed())
}

// An event of a call that has left the cluster (ended, archived, deleted
// before a busy queue reached it) is sent from the call's archive: the
// apiserver is not asked for it.
func TestWebhookDeliveryOfArchivedCallReadsNoAPIServer(t *testing.T) {
	suite.Need(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns, agentID := newCallOrganization(t)
	rc := newTestReceiver(t)
	ep := waitEndpointReady(t, createEndpoint(t, ns, "archive", rc.srv.URL+"/hooks", webhook.EventCallEnded))

	ended := metav1.NewMicroTime(time.Now())
	c := &switchboardv1.Call{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "call-0123456789abcdef0123456789abcdef",
		UID: "archived-call", CreationTimestamp: metav1.NewTime(ended.Add(-time.Minute))},
		Spec: switchboardv1.CallSpec{AgentID: agentID, ToNumber: "+14155551234"},
		Status: switchboardv1.CallStatus{CallID: "call_0123456789abcdef0123456789abcdef", Phase: switchboardv1.CallEnded,
			Disposition: switchboardv1.DispositionNoAnswer, StartedAt: &ended, EndedAt: &ended,
			Analysis: &switchboardv1.CallAnalysis{Summary: "Nobody answered."}}}
	g.Expect(historyStore.SaveCall(ctx, c)).To(Succeed())
	key := client.ObjectKeyFromObject(c)
	g.Expect(historyStore.EnqueueDeliveries(ctx, []*history.Delivery{
		deliveries.ForCall(c, webhook.EventCallEnded, ep, c.Status.CallID)})).To(Succeed())

	g.Eventually(rc.received, resWait, resPoll).Should(HaveLen(1))
	g.Expect(string(rc.received()[0].body)).To(ContainSubstring(c.Status.CallID))
	g.Expect(deliveryLiveReads.reads(key)).To(BeZero(), "the apiserver was asked for a call the archive has")
}
