package dashboard_test

// The dashboard's suite: a real kube-apiserver and etcd (envtest), the
// whole operator started through app.New as `make run` starts it, and a
// real headless Chromium driven with chromedp, the way a support person
// uses the dashboard. A Go HTTP client checks what a browser would not
// let a test do (a form without its CSRF token).

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

var (
	controlPlane *testsupport.ControlPlane
	k8s          client.Client // the administrator's, not cached
	baseURL      string
	store        history.Store
	// browserCtx is the headless Chromium; each test opens its tab.
	browserCtx context.Context
)

// Short carrier timings: a call is dialed, answered, ended and analyzed in
// about two seconds, for real.
var timings = sim.Timings{Ring: 300 * time.Millisecond, Talk: 800 * time.Millisecond, Voicemail: 500 * time.Millisecond}

// suite is the control plane, the history store, the operator and the
// browser, started by the first test that needs them: the pure tests of
// package dashboard run without them under -short.
var suite = &testsupport.Suite{What: "a control plane (envtest) and Chromium", Start: startSuite}

func TestMain(m *testing.M) { os.Exit(suite.Run(m)) }

func startSuite() (stop func(), err error) {
	var stops testsupport.Stops
	defer func() {
		if err != nil {
			stops.All()
		}
	}()
	cp, err := testsupport.StartControlPlane(filepath.Join("..", ".."), app.NewScheme())
	if err != nil {
		return nil, err
	}
	stops.Add(func() { _ = cp.Stop() })
	controlPlane, k8s = cp, cp.Client
	dir, err := os.MkdirTemp("", "switchboard-dashboard-")
	if err != nil {
		return nil, err
	}
	stops.Add(func() { _ = os.RemoveAll(dir) })
	if store, err = history.Open(context.Background(), "sqlite:"+filepath.Join(dir, "history.db")); err != nil {
		return nil, fmt.Errorf("opening history store: %w", err)
	}
	stops.Add(func() { _ = store.Close() })
	stopOperator, err := startOperator(dir, !benchmarking())
	if err != nil {
		return nil, fmt.Errorf("starting operator: %w", err)
	}
	stops.Add(stopOperator)
	if !benchmarking() {
		cancel, err := startBrowser()
		if err != nil {
			return nil, err
		}
		stops.Add(cancel)
	}
	return stops.All, nil
}

func benchmarking() bool { return flag.Lookup("test.bench").Value.String() != "" }

// startOperator runs Switchboard as `make run` does (development mode:
// cookies over plain http, receivers on loopback), as its service account
// with the RBAC of config/rbac.
func startOperator(dir string, reconcilers bool) (func(), error) {
	p, err := instance.Start(controlPlane.Manager, app.Options{
		RecordingDir: filepath.Join(dir, "recordings"), RecordingSigningKey: []byte("0123456789abcdef0123456789abcdef"),
		SimTimings: timings, DefaultRegion: "US", Reconcilers: reconcilers, MaxConcurrentCalls: 16,
		SIP:      app.SIPOptions{Disabled: true},
		Webhooks: app.WebhookOptions{AllowInsecure: true, Schedule: webhook.Schedule{0, 300 * time.Millisecond}},
		History:  store, DashboardInsecureCookies: true, MetricsAddr: "0", ProbeAddr: "0",
		// Every test signs in from 127.0.0.1 and newOrg polls with a key
		// not delivered yet; the throttle is under test in internal_test.go.
		AuthFailures: authlimit.Options{Burst: 1 << 20, Rate: 1 << 20},
		Log:          zap.New(zap.WriteTo(io.Discard))}, "/dashboard/sign-in")
	if err != nil {
		return nil, err
	}
	baseURL = p.BaseURL
	return p.Stop, nil
}

// startBrowser starts Debian's chromium headless; SWITCHBOARD_CHROMIUM
// names another binary.
func startBrowser() (context.CancelFunc, error) {
	bin := os.Getenv("SWITCHBOARD_CHROMIUM")
	if bin == "" {
		bin = "chromium"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("no %s to drive: install Debian's chromium (.ci/run does) or set SWITCHBOARD_CHROMIUM", bin)
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(path),
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.WindowSize(1280, 800))
	ctx, cancelBrowser := chromedp.NewContext(alloc)
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		cancelBrowser()
		cancelAlloc()
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	browserCtx = ctx
	return func() { cancelBrowser(); cancelAlloc() }, nil
}

// newTab is a tab of a fresh browser profile (no cookies) for one test.
func newTab(t *testing.T) context.Context {
	t.Helper()
	tab, cancel := chromedp.NewContext(browserCtx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(tab); err != nil { // opens the tab, for as long as tab lives
		t.Fatal(err)
	}
	ctx, cancelTimeout := context.WithTimeout(tab, 90*time.Second)
	t.Cleanup(cancelTimeout)
	return ctx
}

// do runs browser steps, failing the test at the first that fails.
func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%v; the page at that moment:\n%s", err, pageText(ctx))
	}
}

// pageText is what the tab shows, to explain a failure.
func pageText(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText`))
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	return s
}

// get runs one browser action and returns its value.
func get[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// text is the visible text of the element sel (CSS).
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	return get(t, ctx, chromedp.Text(chromedp.CSS(sel)))
}

// updateScreenshots rewrites the README's pictures of the dashboard. Off by
// default, so that running the tests leaves the checkout as it was.
var updateScreenshots = flag.Bool("update-screenshots", false,
	"save each page the tests visit as testdata/NAME.png (the README's pictures)")

// screenshot captures the viewport (a page that cannot be rendered fails
// the test) and, with -update-screenshots, saves it as testdata/NAME.png.
func screenshot(name string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tgt *chromedp.Target) error {
		png, err := chromedp.CaptureScreenshot()(ctx, tgt)
		if err != nil || !*updateScreenshots {
			return err
		}
		return os.WriteFile(filepath.Join("testdata", name+".png"), png, 0o644)
	})
}

// signIn signs the tab in with key.
func signIn(key string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.Navigate(baseURL+"/dashboard/sign-in"),
		chromedp.WaitVisible(chromedp.CSS("#api_key")),
		chromedp.SendKeys(chromedp.CSS("#api_key"), key),
		chromedp.Submit(chromedp.CSS("#api_key")),
		chromedp.WaitVisible(chromedp.CSS("#fig-calls")),
	)
}

// org is an organization (namespace) with an API key and an agent.
type org struct {
	ns, key, keySecret, agentID string
}

func newOrg(t testing.TB) *org {
	t.Helper()
	ctx := context.Background()
	ns := controlPlane.NewOrganization(t, "org-")
	o := &org{ns: ns, key: "sk_test_" + randHex(16)}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "api-key-"},
		Type: switchboardv1.APIKeySecretType, Data: map[string][]byte{switchboardv1.APIKeySecretKey: []byte(o.key)}}
	must(t, k8s.Create(ctx, s))
	o.keySecret = s.Name
	a := &switchboardv1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reminder"},
		Spec: switchboardv1.AgentSpec{FromNumber: "+14155550100", Greeting: "Hello from the test clinic.",
			RequiredVariables: []string{"customer_name"},
			ExtractedData: []switchboardv1.ExtractedDataField{{Name: "customer_name", Type: switchboardv1.ExtractedString},
				{Name: "confirmed", Type: switchboardv1.ExtractedBoolean}}}}
	must(t, k8s.Create(ctx, a))
	o.agentID = a.ResolvedID()
	eventually(t, "the key works", func() bool {
		status, _ := o.api(t, "GET", "/v1/calls/call_0", nil)
		return status == http.StatusNotFound
	})
	return o
}

// api calls the REST API with the organization's key.
func (o *org) api(t testing.TB, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var r io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		r = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, baseURL+path, r) //nolint:noctx // test
	req.Header.Set("Authorization", "Bearer "+o.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func (o *org) placeCall(t testing.TB, number string) string {
	t.Helper()
	status, body := o.api(t, "POST", "/v1/calls", map[string]any{"agent_id": o.agentID, "to_number": number,
		"variables": map[string]any{"customer_name": "Ada"}})
	if status != http.StatusCreated {
		t.Fatalf("POST /v1/calls = %d %v", status, body)
	}
	return body["call_id"].(string)
}

// browserlessClient is a signed-in session driven without a browser.
type browserlessClient struct {
	http *http.Client
	csrf string
	// setCookie is the session's Set-Cookie header.
	setCookie string
}

var csrfInput = regexp.MustCompile(`name="csrf_token" value="([0-9a-f]+)"`)

// signInClient signs in with key as a browser would (the sign-in form's
// token, then the key), without following redirects.
func signInClient(t testing.TB, key string) *browserlessClient {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &browserlessClient{http: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
	_, page := c.get(t, "/dashboard/sign-in")
	token := csrfInput.FindStringSubmatch(page)
	if token == nil {
		t.Fatalf("no CSRF token in the sign-in page: %s", page)
	}
	resp := c.post(t, "/dashboard/sign-in", url.Values{"csrf_token": {token[1]}, "api_key": {key}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in = %d, want 303", resp.StatusCode)
	}
	for _, h := range resp.Header.Values("Set-Cookie") {
		if strings.HasPrefix(h, "switchboard_session=") {
			c.setCookie = h
		}
	}
	_, overview := c.get(t, "/dashboard/")
	c.csrf = csrfInput.FindStringSubmatch(overview)[1]
	return c
}

func (c *browserlessClient) get(t testing.TB, path string) (*http.Response, string) {
	t.Helper()
	resp, err := c.http.Get(baseURL + path) //nolint:noctx // test
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func (c *browserlessClient) post(t testing.TB, path string, form url.Values) *http.Response {
	t.Helper()
	resp, err := c.http.PostForm(baseURL+path, form) //nolint:noctx // test
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp
}

func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
