// Package apptest is the harness of the end-to-end tests under
// internal/app/e2e: a real kube-apiserver and etcd (envtest), the whole
// operator started through app.New, and the REST API driven over real HTTP
// the way a customer backend calls it. Each package of tests runs its own
// suite (Main), so that go test runs them side by side; its files are
// named after the tests that first needed them.
package apptest

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
var TestTimings = sim.Timings{Ring: 300 * time.Millisecond, Talk: 800 * time.Millisecond, Voicemail: 500 * time.Millisecond}

// TestSchedule retries failed deliveries quickly; the timeout per attempt
// stays the API's 10 s.
var TestSchedule = webhook.Schedule{0, 300 * time.Millisecond, 600 * time.Millisecond, time.Second}

// ReceiverTLS trusts the test HTTPS receivers (httptest's certificate).
var ReceiverTLS = func() *tls.Config {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}()

var (
	// controlPlane is the suite's kube-apiserver and etcd.
	ControlPlane *testsupport.ControlPlane
	RestConfig   *rest.Config  // the cluster's administrator
	K8s          client.Client // not cached: what the cluster really holds
	// managerConfig is Switchboard's identity: its service account, bound
	// to the roles of config/rbac and nothing else.
	ManagerConfig *rest.Config
	Operator      *RunningOperator
	RecordDir     string
	// historyStore is the suite's history store (SQLite).
	HistoryStore history.Store
	SigningKey   = []byte("0123456789abcdef0123456789abcdef")
)

// Main is the TestMain of each end-to-end package: it runs the package's
// tests against a control plane and a Switchboard of its own, so that go
// test runs the packages side by side. A test binary started as a
// receiver process (the soak benchmark's) serves instead.
func Main(m *testing.M) int {
	if os.Getenv(ReceiverProcessEnv) != "" {
		return ServeReceiverProcess()
	}
	if testsupport.SkipSuiteIfShort("a control plane (envtest), sipp, flite, Node.js, PostgreSQL and versitygw") {
		return 0
	}
	return RunSuite(m)
}

// RepoRoot is the module's root: the folder above the test's (where go
// test runs the tests) that holds go.mod.
var RepoRoot = repoRoot()

func repoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			panic("no go.mod above the test's folder")
		}
		dir = parent
	}
}

func RunSuite(m *testing.M) int {
	cp, err := testsupport.StartControlPlane(RepoRoot, app.NewScheme())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = cp.Stop() }()
	ControlPlane, RestConfig, K8s, ManagerConfig = cp, cp.Admin, cp.Client, cp.Manager
	dir, err := os.MkdirTemp("", "switchboard-recordings-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	RecordDir = dir
	// One history store for the whole suite, kept across operator
	// restarts as a real installation's is.
	if HistoryStore, err = history.Open(context.Background(), "sqlite:"+filepath.Join(dir, ".history", "history.db")); err != nil {
		fmt.Fprintln(os.Stderr, "opening history store:", err)
		return 1
	}
	defer func() { _ = HistoryStore.Close() }()
	// Benchmarks measure the REST API alone, as a non-leader replica runs
	// it: no reconciler competes for the two cores.
	flag.Parse()
	benchmarking := flag.Lookup("test.bench").Value.String() != ""
	if Operator, err = StartOperator(!benchmarking); err != nil {
		fmt.Fprintln(os.Stderr, "starting operator:", err)
		return 1
	}
	defer func() { Operator.Stop() }() // the restart test replaces it
	return m.Run()
}

// RunningOperator is one Switchboard process.
type RunningOperator struct {
	*instance.Process
}

// StartOperator starts a Switchboard process against the suite's control
// plane; tweaks adjust its options (the benchmarks' timings, say).
func StartOperator(reconcilers bool, tweaks ...func(*app.Options)) (*RunningOperator, error) {
	return StartOperatorOn(ManagerConfig, reconcilers, tweaks...)
}

// StartOperatorOn is startOperator talking to the control plane through cfg
// (one that counts its requests, say).
func StartOperatorOn(cfg *rest.Config, reconcilers bool, tweaks ...func(*app.Options)) (*RunningOperator, error) {
	opts := app.Options{
		RecordingDir: RecordDir, RecordingSigningKey: SigningKey,
		SimTimings: TestTimings, DefaultRegion: "US", Reconcilers: reconcilers, MaxConcurrentCalls: 32,
		// Calls to the sipp callees on loopback; the spool survives restarts.
		SIP: app.SIPOptions{BindHost: "127.0.0.1", SpoolDir: filepath.Join(RecordDir, ".spool"), ProbeInterval: 2 * time.Second},
		// Development mode: the test receivers listen on loopback.
		Webhooks:    app.WebhookOptions{AllowInsecure: true, TLSConfig: ReceiverTLS, Schedule: TestSchedule},
		MetricsAddr: "0", ProbeAddr: "0", SkipNameValidation: true, Log: zap.New(zap.WriteTo(io.Discard)),
		History: HistoryStore, CallNormalEvents: true,
		// Every test sends from 127.0.0.1, and helpers poll with keys the
		// informer has not delivered yet: the production budget of failed
		// authentications is under test in auth_test.go only.
		AuthFailures: LenientAuthFailures,
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
	return &RunningOperator{Process: p}, nil
}

// LenientAuthFailures never throttles the suite's one client address.
var LenientAuthFailures = authlimit.Options{Burst: 1 << 20, Rate: 1 << 20}

// WithOperator runs the rest of t against an operator started with tweak
// instead of the suite's, and restores the suite's when t ends. Tests that
// use it must not be parallel.
func WithOperator(t *testing.T, tweak func(*app.Options)) {
	t.Helper()
	WithOperatorRunning(t, true, tweak)
}

// WithOperatorRunning is withOperator whose process runs the reconcilers
// or not (a replica that is not the leader serves the API alone).
func WithOperatorRunning(t *testing.T, reconcilers bool, tweak func(*app.Options)) {
	t.Helper()
	Operator.Stop()
	var tweaks []func(*app.Options)
	if tweak != nil {
		tweaks = append(tweaks, tweak)
	}
	op, err := StartOperator(reconcilers, tweaks...)
	if err != nil {
		t.Fatal(err)
	}
	Operator = op
	t.Cleanup(func() {
		Operator.Stop()
		restored, err := StartOperator(true)
		if err != nil {
			t.Error(err)
			return
		}
		Operator = restored
	})
}

// MakeWayForReplicas stops the suite's operator for the rest of t, whose
// replicas of one installation take its place, and restarts it when t
// ends.
func MakeWayForReplicas(t *testing.T) {
	t.Helper()
	Operator.Stop()
	t.Cleanup(func() {
		restored, err := StartOperator(true)
		if err != nil {
			t.Error(err)
			return
		}
		Operator = restored
	})
}

// Org is an organization (namespace) with an API key and an outbound agent.
type Org struct {
	Ns      string
	Key     string
	AgentID string
	Agent   *switchboardv1.Agent
}

const AgentFrom = testsupport.AgentFrom

// NewOrg creates a namespace with an API key and a ready agent that
// requires customer_name and extracts three fields.
func NewOrg(t testing.TB) *Org {
	t.Helper()
	ns := ControlPlane.NewOrganization(t, "org-")
	o := &Org{Ns: ns, Key: CreateKey(t, ns, "")}
	o.Agent = CreateAgent(t, ns, "reminder", func(s *switchboardv1.AgentSpec) {})
	o.AgentID = o.Agent.ResolvedID()
	return o
}

// CreateKey stores an API key Secret; expiresAt is an RFC 3339 time or "".
func CreateKey(t testing.TB, ns, expiresAt string) string {
	t.Helper()
	key := "sk_test_" + RandHex(16)
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "api-key-"},
		Type:       switchboardv1.APIKeySecretType,
		Data:       map[string][]byte{switchboardv1.APIKeySecretKey: []byte(key)},
	}
	if expiresAt != "" {
		s.Annotations = map[string]string{switchboardv1.APIKeyExpiresAtAnnotation: expiresAt}
	}
	NewWithT(t).Expect(K8s.Create(context.Background(), s)).To(Succeed())
	WaitKeyUsable(t, key, expiresAt)
	return key
}

// WaitKeyUsable waits until the informer has delivered a new key.
func WaitKeyUsable(t testing.TB, key, expiresAt string) {
	t.Helper()
	want := http.StatusNotFound // a valid key reaches the call lookup
	if expiresAt != "" {
		if at, err := time.Parse(time.RFC3339, expiresAt); err == nil && at.Before(time.Now()) {
			return // an expired key never becomes usable
		}
	}
	NewWithT(t).Eventually(func() int {
		return Do(t, "GET", "/v1/calls/call_0", key, nil).Status
	}, 10*time.Second, 20*time.Millisecond).Should(Equal(want))
}

// CreateAgent creates an outbound agent (testsupport.CreateAgent).
func CreateAgent(t testing.TB, ns, name string, mutate func(*switchboardv1.AgentSpec)) *switchboardv1.Agent {
	t.Helper()
	return testsupport.CreateAgent(t, K8s, ns, name, mutate)
}

func RandHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Response is an HTTP answer with its JSON decoded.
type Response struct {
	Status int
	Header http.Header
	Raw    []byte
	Body   map[string]any
}

// Do sends a request to the running operator with key as bearer ("" for
// none). body may be a string (sent as is) or any value (sent as JSON).
func Do(t testing.TB, method, path, key string, body any) Response {
	t.Helper()
	authorization := ""
	if key != "" {
		authorization = "Bearer " + key
	}
	return DoWithAuthorization(t, method, path, authorization, body)
}

// DoWithAuthorization is do with a raw Authorization header ("" for none).
func DoWithAuthorization(t testing.TB, method, path, authorization string, body any) Response {
	t.Helper()
	return Send(t, Operator.BaseURL, method, path, authorization, body)
}

// DoAt is do against another Switchboard process than the suite's.
func DoAt(t testing.TB, baseURL, method, path, key string, body any) Response {
	t.Helper()
	return Send(t, baseURL, method, path, "Bearer "+key, body)
}

func Send(t testing.TB, baseURL, method, path, authorization string, body any) Response {
	t.Helper()
	return SendWithHeader(t, baseURL, method, path, authorization, body, nil)
}

// SendWithHeader is send with more request headers.
func SendWithHeader(t testing.TB, baseURL, method, path, authorization string, body any, header http.Header) Response {
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
	r := Response{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/json") {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("%s %s: invalid JSON %q: %v", method, path, raw, err)
		}
		r.Body, _ = v.(map[string]any)
	}
	return r
}

// CreateCall posts a call for o's agent to number and expects 201.
func (o *Org) CreateCall(t *testing.T, number string, extra map[string]any) string {
	t.Helper()
	body := map[string]any{"agent_id": o.AgentID, "to_number": number,
		"variables": map[string]any{"customer_name": "Ada"}}
	for k, v := range extra {
		body[k] = v
	}
	r := Do(t, "POST", "/v1/calls", o.Key, body)
	if r.Status != http.StatusCreated {
		t.Fatalf("POST /v1/calls = %d %s, want 201", r.Status, r.Raw)
	}
	return r.Body["call_id"].(string)
}

// GetCall reads a call object and expects 200.
func (o *Org) GetCall(t *testing.T, id string) map[string]any {
	t.Helper()
	r := Do(t, "GET", "/v1/calls/"+id, o.Key, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("GET /v1/calls/%s = %d %s", id, r.Status, r.Raw)
	}
	return r.Body
}

// WaitAnalyzed waits until the call is final and analyzed, and returns it.
func (o *Org) WaitAnalyzed(t *testing.T, id string) map[string]any {
	t.Helper()
	var call map[string]any
	NewWithT(t).Eventually(func() any {
		call = o.GetCall(t, id)
		return call["analysis"]
	}, 20*time.Second, 50*time.Millisecond).ShouldNot(BeNil(), "call %s never analyzed", id)
	return call
}

// Detail returns the `detail` object of an error response.
func Detail(t *testing.T, r Response) map[string]any {
	t.Helper()
	d, ok := r.Body["detail"].(map[string]any)
	if !ok {
		t.Fatalf("detail is not an object: %s", r.Raw)
	}
	return d
}

// CountCalls returns how many Call resources namespace holds.
func CountCalls(t *testing.T, ns string) int {
	t.Helper()
	var calls switchboardv1.CallList
	NewWithT(t).Expect(K8s.List(context.Background(), &calls, client.InNamespace(ns))).To(Succeed())
	return len(calls.Items)
}

func JSONObject(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }
