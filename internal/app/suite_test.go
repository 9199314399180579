package app_test

// The integration suite: a real kube-apiserver and etcd (envtest), the whole
// operator started through app.New, and the REST API driven over real HTTP
// the way a customer backend calls it.

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/app"
	"github.com/switchboard-dev/switchboard/internal/authlimit"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/telephony/sim"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
	"github.com/switchboard-dev/switchboard/internal/testsupport/instance"
	"github.com/switchboard-dev/switchboard/internal/webhook"
)

// Short carrier timings keep the suite fast while calls still pass through
// every state for real.
var testTimings = sim.Timings{Ring: 300 * time.Millisecond, Talk: 800 * time.Millisecond, Voicemail: 500 * time.Millisecond}

// testSchedule retries failed deliveries quickly; the timeout per attempt
// stays the API's 10 s.
var testSchedule = webhook.Schedule{0, 300 * time.Millisecond, 600 * time.Millisecond, time.Second}

// receiverTLS trusts the test HTTPS receivers (httptest's certificate).
var receiverTLS = func() *tls.Config {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}()

var (
	// controlPlane is the suite's kube-apiserver and etcd.
	controlPlane *testsupport.ControlPlane
	restConfig   *rest.Config  // the cluster's administrator
	k8s          client.Client // not cached: what the cluster really holds
	// managerConfig is Switchboard's identity: its service account, bound
	// to the roles of config/rbac and nothing else.
	managerConfig *rest.Config
	operator      *runningOperator
	recordDir     string
	// historyStore is the suite's history store (SQLite).
	historyStore history.Store
	signingKey   = []byte("0123456789abcdef0123456789abcdef")
)

func TestMain(m *testing.M) {
	if os.Getenv(receiverProcessEnv) != "" {
		os.Exit(serveReceiverProcess())
	}
	if testsupport.SkipSuiteIfShort("a control plane (envtest), sipp, flite, Node.js, PostgreSQL and versitygw") {
		return
	}
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	cp, err := testsupport.StartControlPlane(filepath.Join("..", ".."), app.NewScheme())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = cp.Stop() }()
	controlPlane, restConfig, k8s, managerConfig = cp, cp.Admin, cp.Client, cp.Manager
	dir, err := os.MkdirTemp("", "switchboard-recordings-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	recordDir = dir
	// One history store for the whole suite, kept across operator
	// restarts as a real installation's is.
	if historyStore, err = history.Open(context.Background(), "sqlite:"+filepath.Join(dir, ".history", "history.db")); err != nil {
		fmt.Fprintln(os.Stderr, "opening history store:", err)
		return 1
	}
	defer func() { _ = historyStore.Close() }()
	// Benchmarks measure the REST API alone, as a non-leader replica runs
	// it: no reconciler competes for the two cores.
	flag.Parse()
	benchmarking := flag.Lookup("test.bench").Value.String() != ""
	if operator, err = startOperator(!benchmarking); err != nil {
		fmt.Fprintln(os.Stderr, "starting operator:", err)
		return 1
	}
	defer func() { operator.stop() }() // the restart test replaces it
	return m.Run()
}

// runningOperator is one Switchboard process.
type runningOperator struct {
	*instance.Process
	baseURL string
}

func (o *runningOperator) stop() { o.Stop() }

// startOperator starts a Switchboard process against the suite's control
// plane; tweaks adjust its options (the benchmarks' timings, say).
func startOperator(reconcilers bool, tweaks ...func(*app.Options)) (*runningOperator, error) {
	return startOperatorOn(managerConfig, reconcilers, tweaks...)
}

// startOperatorOn is startOperator talking to the control plane through cfg
// (one that counts its requests, say).
func startOperatorOn(cfg *rest.Config, reconcilers bool, tweaks ...func(*app.Options)) (*runningOperator, error) {
	opts := app.Options{
		RecordingDir: recordDir, RecordingSigningKey: signingKey,
		SimTimings: testTimings, DefaultRegion: "US", Reconcilers: reconcilers, MaxConcurrentCalls: 32,
		// Calls to the sipp callees on loopback; the spool survives restarts.
		SIP: app.SIPOptions{BindHost: "127.0.0.1", SpoolDir: filepath.Join(recordDir, ".spool"), ProbeInterval: 2 * time.Second},
		// Development mode: the test receivers listen on loopback.
		Webhooks:    app.WebhookOptions{AllowInsecure: true, TLSConfig: receiverTLS, Schedule: testSchedule},
		MetricsAddr: "0", ProbeAddr: "0", SkipNameValidation: true, Log: zap.New(zap.WriteTo(io.Discard)),
		History: historyStore, CallNormalEvents: true,
		// Every test sends from 127.0.0.1, and helpers poll with keys the
		// informer has not delivered yet: the production budget of failed
		// authentications is under test in auth_test.go only.
		AuthFailures: lenientAuthFailures,
		// Tests and benchmarks that post in bursts measure other things:
		// the placement gate is under test in overload_test.go only.
		MaxPlacementsInFlight: -1,
	}
	for _, tweak := range tweaks {
		tweak(&opts)
	}
	p, err := instance.Start(cfg, opts, "/v1/calls/call_0")
	if err != nil {
		return nil, err
	}
	return &runningOperator{Process: p, baseURL: p.BaseURL}, nil
}

// lenientAuthFailures never throttles the suite's one client address.
var lenientAuthFailures = authlimit.Options{Burst: 1 << 20, Rate: 1 << 20}

// withOperator runs the rest of t against an operator started with tweak
// instead of the suite's, and restores the suite's when t ends. Tests that
// use it must not be parallel.
func withOperator(t *testing.T, tweak func(*app.Options)) {
	t.Helper()
	withOperatorRunning(t, true, tweak)
}

// withOperatorRunning is withOperator whose process runs the reconcilers
// or not (a replica that is not the leader serves the API alone).
func withOperatorRunning(t *testing.T, reconcilers bool, tweak func(*app.Options)) {
	t.Helper()
	operator.stop()
	var tweaks []func(*app.Options)
	if tweak != nil {
		tweaks = append(tweaks, tweak)
	}
	op, err := startOperator(reconcilers, tweaks...)
	if err != nil {
		t.Fatal(err)
	}
	operator = op
	t.Cleanup(func() {
		operator.stop()
		restored, err := startOperator(true)
		if err != nil {
			t.Error(err)
			return
		}
		operator = restored
	})
}

// makeWayForReplicas stops the suite's operator for the rest of t, whose
// replicas of one installation take its place, and restarts it when t
// ends.
func makeWayForReplicas(t *testing.T) {
	t.Helper()
	operator.stop()
	t.Cleanup(func() {
		restored, err := startOperator(true)
		if err != nil {
			t.Error(err)
			return
		}
		operator = restored
	})
}

// org is an organization (namespace) with an API key and an outbound agent.
type org struct {
	ns      string
	key     string
	agentID string
	agent   *switchboardv1.Agent
}

const agentFrom = testsupport.AgentFrom

// newOrg creates a namespace with an API key and a ready agent that
// requires customer_name and extracts three fields.
func newOrg(t testing.TB) *org {
	t.Helper()
	ns := controlPlane.NewOrganization(t, "org-")
	o := &org{ns: ns, key: createKey(t, ns, "")}
	o.agent = createAgent(t, ns, "reminder", func(s *switchboardv1.AgentSpec) {})
	o.agentID = o.agent.ResolvedID()
	return o
}

// createKey stores an API key Secret; expiresAt is an RFC 3339 time or "".
func createKey(t testing.TB, ns, expiresAt string) string {
	t.Helper()
	key := "sk_test_" + randHex(16)
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "api-key-"},
		Type:       switchboardv1.APIKeySecretType,
		Data:       map[string][]byte{switchboardv1.APIKeySecretKey: []byte(key)},
	}
	if expiresAt != "" {
		s.Annotations = map[string]string{switchboardv1.APIKeyExpiresAtAnnotation: expiresAt}
	}
	NewWithT(t).Expect(k8s.Create(context.Background(), s)).To(Succeed())
	waitKeyUsable(t, key, expiresAt)
	return key
}

// waitKeyUsable waits until the informer has delivered a new key.
func waitKeyUsable(t testing.TB, key, expiresAt string) {
	t.Helper()
	want := http.StatusNotFound // a valid key reaches the call lookup
	if expiresAt != "" {
		if at, err := time.Parse(time.RFC3339, expiresAt); err == nil && at.Before(time.Now()) {
			return // an expired key never becomes usable
		}
	}
	NewWithT(t).Eventually(func() int {
		return do(t, "GET", "/v1/calls/call_0", key, nil).status
	}, 10*time.Second, 20*time.Millisecond).Should(Equal(want))
}

// createAgent creates an outbound agent (testsupport.CreateAgent).
func createAgent(t testing.TB, ns, name string, mutate func(*switchboardv1.AgentSpec)) *switchboardv1.Agent {
	t.Helper()
	return testsupport.CreateAgent(t, k8s, ns, name, mutate)
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// response is an HTTP answer with its JSON decoded.
type response struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

// do sends a request to the running operator with key as bearer ("" for
// none). body may be a string (sent as is) or any value (sent as JSON).
func do(t testing.TB, method, path, key string, body any) response {
	t.Helper()
	authorization := ""
	if key != "" {
		authorization = "Bearer " + key
	}
	return doWithAuthorization(t, method, path, authorization, body)
}

// doWithAuthorization is do with a raw Authorization header ("" for none).
func doWithAuthorization(t testing.TB, method, path, authorization string, body any) response {
	t.Helper()
	return send(t, operator.baseURL, method, path, authorization, body)
}

// doAt is do against another Switchboard process than the suite's.
func doAt(t testing.TB, baseURL, method, path, key string, body any) response {
	t.Helper()
	return send(t, baseURL, method, path, "Bearer "+key, body)
}

func send(t testing.TB, baseURL, method, path, authorization string, body any) response {
	t.Helper()
	return sendWithHeader(t, baseURL, method, path, authorization, body, nil)
}

// sendWithHeader is send with more request headers.
func sendWithHeader(t testing.TB, baseURL, method, path, authorization string, body any, header http.Header) response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, baseURL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := response{status: resp.StatusCode, header: resp.Header, raw: raw}
	if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/json") {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("%s %s: invalid JSON %q: %v", method, path, raw, err)
		}
		r.body, _ = v.(map[string]any)
	}
	return r
}

// createCall posts a call for o's agent to number and expects 201.
func (o *org) createCall(t *testing.T, number string, extra map[string]any) string {
	t.Helper()
	body := map[string]any{"agent_id": o.agentID, "to_number": number,
		"variables": map[string]any{"customer_name": "Ada"}}
	for k, v := range extra {
		body[k] = v
	}
	r := do(t, "POST", "/v1/calls", o.key, body)
	if r.status != http.StatusCreated {
		t.Fatalf("POST /v1/calls = %d %s, want 201", r.status, r.raw)
	}
	return r.body["call_id"].(string)
}

// getCall reads a call object and expects 200.
func (o *org) getCall(t *testing.T, id string) map[string]any {
	t.Helper()
	r := do(t, "GET", "/v1/calls/"+id, o.key, nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET /v1/calls/%s = %d %s", id, r.status, r.raw)
	}
	return r.body
}

// waitAnalyzed waits until the call is final and analyzed, and returns it.
func (o *org) waitAnalyzed(t *testing.T, id string) map[string]any {
	t.Helper()
	var call map[string]any
	NewWithT(t).Eventually(func() any {
		call = o.getCall(t, id)
		return call["analysis"]
	}, 20*time.Second, 50*time.Millisecond).ShouldNot(BeNil(), "call %s never analyzed", id)
	return call
}

// detail returns the `detail` object of an error response.
func detail(t *testing.T, r response) map[string]any {
	t.Helper()
	d, ok := r.body["detail"].(map[string]any)
	if !ok {
		t.Fatalf("detail is not an object: %s", r.raw)
	}
	return d
}

// countCalls returns how many Call resources namespace holds.
func countCalls(t *testing.T, ns string) int {
	t.Helper()
	var calls switchboardv1.CallList
	NewWithT(t).Expect(k8s.List(context.Background(), &calls, client.InNamespace(ns))).To(Succeed())
	return len(calls.Items)
}

func jsonObject(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }
