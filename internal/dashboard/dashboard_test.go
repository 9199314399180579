package dashboard_test

import (
	"context"
	"html"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/quota"
	"github.com/switchboard-dev/switchboard/internal/telephony/audio"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts/ttstest"
	"github.com/switchboard-dev/switchboard/internal/workers"
)

// A support person signs in, places a call from the form, and watches it
// go through to analyzed on its page without reloading; the recording
// player's source is the audio; the calls list shows the call, placed
// from the dashboard, and a call placed meanwhile through the API appears
// in it by itself.
func TestPlaceACallAndWatchIt(t *testing.T) {
	suite.Need(t)
	o := newOrg(t)
	ctx := newTab(t)
	do(t, ctx, signIn(o.key),
		chromedp.Navigate(baseURL+"/dashboard/calls/new"),
		chromedp.WaitVisible(chromedp.CSS("#to_number")),
		chromedp.SendKeys(chromedp.CSS("#to_number"), "+14155551234"),
		chromedp.SendKeys(chromedp.CSS("#var-customer_name"), "Ada"),
		chromedp.SetValue(chromedp.CSS("#metadata"), `{"ticket": "T-17"}`),
		screenshot("place-a-call"),
		chromedp.Submit(chromedp.CSS("#to_number")),
		chromedp.WaitVisible(chromedp.CSS("#call-status")),
	)
	path := get(t, ctx, chromedp.Evaluate[string](`window.location.pathname`))
	// A marker that a reload would wipe out.
	get(t, ctx, chromedp.Evaluate[bool](`window.notReloaded = true`))
	callID := strings.TrimPrefix(path, "/dashboard/calls/")
	if !strings.HasPrefix(callID, "call_") {
		t.Fatalf("after placing, the page is %s, want the call's", path)
	}
	do(t, ctx, chromedp.WaitVisible(chromedp.CSS(`li.done[data-step="Analyzed"]`)))
	analyzedAt := text(t, ctx, `li[data-step="Analyzed"] time`)
	status, summary := text(t, ctx, "#call-status"), text(t, ctx, "#analysis-summary")
	notReloaded := get(t, ctx, chromedp.Evaluate[bool](`window.notReloaded === true`))
	do(t, ctx, screenshot("call"))
	if !notReloaded || status != "ended" || !strings.Contains(analyzedAt, "UTC") || summary == "" {
		t.Fatalf("reached analyzed without reload %v, status %q, analyzed at %q, summary %q", notReloaded, status, analyzedAt, summary)
	}
	src := get(t, ctx, chromedp.AttributeValue(chromedp.CSS("#recording"), "src"))
	resp, err := http.Get(src.Value) //nolint:noctx // test
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "audio/wav" {
		t.Fatalf("the player's source %s answers %d %s, want 200 audio/wav", src.Value, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	// The transcript is beside the recording, in the callee's own words;
	// choosing an utterance's time seeks the player there.
	transcript := text(t, ctx, "#transcript")
	if !strings.Contains(transcript, "Callee 0:00.3 Um, Ada.") || !strings.Contains(transcript, "Agent 0:00.0 Hello from the test clinic.") {
		t.Fatalf("the transcript reads %q, want the agent's lines and the callee's answers", transcript)
	}
	seek := get(t, ctx, chromedp.AttributeValue(chromedp.CSS(`#transcript li.user button.seek`), "data-seek"))
	get(t, ctx, chromedp.Evaluate[bool](`document.getElementById("recording").addEventListener("seeked",
		function (e) { window.seekedTo = e.target.currentTime; }) === undefined`))
	do(t, ctx, chromedp.Click(chromedp.CSS(`#transcript li.user button.seek`)))
	eventually(t, "the player seeks to the utterance", func() bool {
		return get(t, ctx, chromedp.Evaluate[bool](`window.seekedTo !== undefined`))
	})
	seekedTo := get(t, ctx, chromedp.Evaluate[float64](`window.seekedTo`))
	if want, _ := strconv.ParseFloat(seek.Value, 64); want <= 0 || math.Abs(seekedTo-want) > 0.05 {
		t.Fatalf("the player seeked to %.3f s, want the utterance's start, %s s", seekedTo, seek.Value)
	}
	if _, call := o.api(t, "GET", "/v1/calls/"+callID, nil); call["source"] != "dashboard" ||
		call["metadata"].(map[string]any)["ticket"] != "T-17" {
		t.Fatalf("the API reads the call as %v, want source dashboard and the metadata", call)
	}

	do(t, ctx, chromedp.Navigate(baseURL+"/dashboard/calls"),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-call-id="`+callID+`"]`)))
	get(t, ctx, chromedp.Evaluate[bool](`window.notReloaded = true`))
	other := o.placeCall(t, "+14155550001")
	do(t, ctx, chromedp.WaitVisible(chromedp.CSS(`tr[data-call-id="`+other+`"]`)), screenshot("calls"))
	if !get(t, ctx, chromedp.Evaluate[bool](`window.notReloaded === true`)) {
		t.Fatal("the new call appeared by reloading the page")
	}

	// The overview counts both: one answered, one busy.
	eventually(t, "the busy call ends", func() bool {
		_, call := o.api(t, "GET", "/v1/calls/"+other, nil)
		return call["disposition"] != nil
	})
	do(t, ctx, chromedp.Navigate(baseURL+"/dashboard/"), chromedp.WaitVisible(chromedp.CSS("svg.chart rect.answered")),
		screenshot("overview"))
	if calls, rate := text(t, ctx, "#fig-calls"), text(t, ctx, "#fig-answer-rate"); calls != "2" || rate != "50%" {
		t.Fatalf("the overview shows %s calls answered at %s, want 2 at 50%%", calls, rate)
	}
	// The one replica is the one worker, taking calls.
	if state, capacity := text(t, ctx, "table.workers tbody td:nth-child(4)"), text(t, ctx, "table.workers tbody td:nth-child(3)"); state != "taking calls" ||
		capacity != strconv.Itoa(workers.DefaultCapacity()) {
		t.Fatalf("the overview lists the worker %s with capacity %s, want taking calls with %d", state, capacity, workers.DefaultCapacity())
	}
}

// The form says why the API would refuse a call, beside the field.
func TestPlaceACallShowsTheAPIsMessages(t *testing.T) {
	suite.Need(t)
	o := newOrg(t)
	c := signInClient(t, o.key)
	resp, err := c.http.PostForm(baseURL+"/dashboard/calls", url.Values{"csrf_token": {c.csrf}, "agent_id": {o.agentID},
		"to_number": {"12"}, "var.customer_name": {"Ada"}})
	if err != nil {
		t.Fatal(err)
	}
	page := readAll(t, resp)
	if resp.StatusCode != http.StatusUnprocessableEntity || !contains(page, `id="to_number-error"`) {
		t.Fatalf("a bad number: %d %s", resp.StatusCode, page)
	}
	status, body := o.api(t, "POST", "/v1/calls", map[string]any{"agent_id": o.agentID, "to_number": "12",
		"variables": map[string]any{"customer_name": "Ada"}})
	msg := body["detail"].([]any)[0].(map[string]any)["msg"].(string)
	if status != http.StatusUnprocessableEntity || !contains(html.UnescapeString(page), msg) {
		t.Fatalf("the page does not say what the API says (%q): %s", msg, page)
	}
}

// Calls placed from the dashboard meet the organization's limits, the
// same counters as the API's: after the API used up the burst, the form is
// refused with the API's message.
func TestDashboardCallsMeetTheLimits(t *testing.T) {
	suite.Need(t)
	o := newOrg(t)
	var ns corev1.Namespace
	must(t, k8s.Get(context.Background(), client.ObjectKey{Name: o.ns}, &ns))
	patch := client.MergeFrom(ns.DeepCopy())
	ns.Annotations = map[string]string{quota.CreateRateAnnotation: "0.01", quota.CreateBurstAnnotation: "1"}
	must(t, k8s.Patch(context.Background(), &ns, patch))
	eventually(t, "the limit applies", func() bool {
		_, usage := o.api(t, "GET", "/v1/concurrency", nil)
		return usage["create_rate_limit"] != nil
	})
	o.placeCall(t, "+14155550002")
	c := signInClient(t, o.key)
	resp, err := c.http.PostForm(baseURL+"/dashboard/calls", url.Values{"csrf_token": {c.csrf}, "agent_id": {o.agentID},
		"to_number": {"+14155550002"}, "var.customer_name": {"Ada"}})
	must(t, err)
	page := html.UnescapeString(readAll(t, resp))
	status, body := o.api(t, "POST", "/v1/calls", map[string]any{"agent_id": o.agentID, "to_number": "+14155550002",
		"variables": map[string]any{"customer_name": "Ada"}})
	msg := body["detail"].(map[string]any)["error"].(string)
	if resp.StatusCode != http.StatusUnprocessableEntity || status != http.StatusTooManyRequests || !contains(page, msg) {
		t.Fatalf("the form over the limit: %d (the API: %d %q): %s", resp.StatusCode, status, msg, page)
	}
}

// The stop button of a live call ends it, as POST /v1/calls/{id}/stop does.
func TestStopALiveCall(t *testing.T) {
	suite.Need(t)
	o := newOrg(t)
	c := signInClient(t, o.key)
	id := o.placeCall(t, "+14155551234")
	resp, err := c.http.PostForm(baseURL+"/dashboard/calls/"+id+"/stop", url.Values{"csrf_token": {c.csrf}})
	must(t, err)
	if page := readAll(t, resp); resp.StatusCode != http.StatusOK || !contains(page, "The call is stopping") {
		t.Fatalf("stop = %d: %s", resp.StatusCode, page)
	}
	eventually(t, "the call ends, stopped", func() bool {
		_, call := o.api(t, "GET", "/v1/calls/"+id, nil)
		return call["disconnection_reason"] == "api_hangup" || call["disconnection_reason"] == "canceled"
	})
}

// An endpoint is created from the dashboard (its secret shown once), sent
// a test event whose result is explained, and its secret rotated.
func TestEndpointTestEventAndRotation(t *testing.T) {
	suite.Need(t)
	o := newOrg(t)
	var answer atomic.Int32
	answer.Store(http.StatusUnauthorized)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(int(answer.Load()))
	}))
	t.Cleanup(receiver.Close)
	ctx := newTab(t)
	do(t, ctx, signIn(o.key),
		chromedp.Navigate(baseURL+"/dashboard/endpoints/new"),
		chromedp.WaitVisible(chromedp.CSS("#url")),
		chromedp.SendKeys(chromedp.CSS("#url"), receiver.URL+"/hooks"),
		chromedp.SendKeys(chromedp.CSS("#description"), "CRM"),
		chromedp.Submit(chromedp.CSS("#url")),
		chromedp.WaitVisible(chromedp.CSS("#secret")),
		screenshot("endpoint-secret"))
	secret := text(t, ctx, "#secret")
	if !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("the secret shown is %q", secret)
	}
	do(t, ctx, chromedp.Click(chromedp.Search(`//a[text()="Go to the endpoint"]`)),
		chromedp.WaitVisible(chromedp.CSS("#test-event")),
		chromedp.Click(chromedp.Search(`//button[text()="Send a test event"]`)),
		chromedp.WaitVisible(chromedp.CSS("#test-meaning")))
	if meaning := text(t, ctx, "#test-meaning"); !strings.Contains(meaning, "refused") || !strings.Contains(meaning, "signature") {
		t.Fatalf("a 401 reads %q", meaning)
	}
	answer.Store(http.StatusNoContent)
	do(t, ctx, chromedp.Click(chromedp.Search(`//button[text()="Send a test event"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#test-result.succeeded`)))
	// The answer scrolls to the result; the README's picture is the page's top.
	get(t, ctx, chromedp.Evaluate[bool](`window.scrollTo(0, 0) === undefined`))
	do(t, ctx, screenshot("endpoint"))
	if meaning := text(t, ctx, "#test-meaning"); !strings.HasPrefix(meaning, "Delivered") {
		t.Fatalf("a 204 reads %q", meaning)
	}
	do(t, ctx, chromedp.Click(chromedp.CSS("#rotate-secret")), chromedp.WaitVisible(chromedp.CSS("#confirm")),
		chromedp.Click(chromedp.Search(`//button[text()="Rotate the secret"]`)),
		chromedp.WaitVisible(chromedp.CSS("#secret")))
	if rotated := text(t, ctx, "#secret"); !strings.HasPrefix(rotated, "whsec_") || rotated == secret {
		t.Fatalf("rotating showed %q (was %q)", rotated, secret)
	}
	do(t, ctx, chromedp.Navigate(baseURL+"/dashboard/endpoints"),
		chromedp.WaitVisible(chromedp.CSS("table.endpoints")), screenshot("endpoints"))

	// A call's failed delivery is retried from the call's page.
	answer.Store(http.StatusInternalServerError)
	callID := o.placeCall(t, "+14155550001")
	var failed map[string]any
	eventually(t, "a delivery of the call fails", func() bool {
		_, list := o.api(t, "GET", "/v1/webhook-endpoints", nil)
		epID := list["data"].([]any)[0].(map[string]any)["id"].(string)
		_, page := o.api(t, "GET", "/v1/webhook-endpoints/"+epID+"/deliveries?status=failed&event=call.ended", nil)
		if data := page["data"].([]any); len(data) > 0 {
			failed = data[0].(map[string]any)
		}
		return failed != nil
	})
	row := `tr[data-delivery-id="` + failed["id"].(string) + `"]`
	do(t, ctx, chromedp.Navigate(baseURL+"/dashboard/calls/"+callID),
		chromedp.WaitVisible(chromedp.CSS(row+" button")),
		chromedp.Click(chromedp.CSS(row+" button")),
		chromedp.WaitVisible(chromedp.CSS("#call-status")))
	if path := get(t, ctx, chromedp.Evaluate[string](`window.location.pathname`)); path != "/dashboard/calls/"+callID {
		t.Fatalf("after the retry the page is %s, want the call's", path)
	}
	eventually(t, "the manual attempt is made", func() bool {
		_, d := o.api(t, "GET", "/v1/webhook-endpoints/"+failed["endpoint_id"].(string)+"/deliveries/"+failed["id"].(string), nil)
		attempts := d["attempts"].([]any)
		return attempts[len(attempts)-1].(map[string]any)["trigger"] == "manual"
	})
}

// A form posted without the session's CSRF token is refused; with it, it
// goes through.
func TestFormWithoutCSRFTokenIsRefused(t *testing.T) {
	suite.Need(t)
	o := newOrg(t)
	c := signInClient(t, o.key)
	form := url.Values{"url": {"http://127.0.0.1:9/hooks"}}
	if resp := c.post(t, "/dashboard/endpoints", form); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("without the token: %d, want 403", resp.StatusCode)
	}
	wrong := []byte(c.csrf)
	wrong[0] ^= 1 // one character off: never the token itself
	form.Set("csrf_token", string(wrong))
	if resp := c.post(t, "/dashboard/endpoints", form); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("with a wrong token: %d, want 403", resp.StatusCode)
	}
	form.Set("csrf_token", c.csrf)
	// Created, and sent on to the page showing its secret.
	if resp := c.post(t, "/dashboard/endpoints", form); resp.StatusCode != http.StatusSeeOther ||
		!strings.HasSuffix(resp.Header.Get("Location"), "/secret") {
		t.Fatalf("with the token: %d to %q, want 303 to the secret", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// Another organization's call and endpoint are 404, as on the API.
func TestAnotherOrganizationsCallIs404(t *testing.T) {
	suite.Need(t)
	mine, theirs := newOrg(t), newOrg(t)
	theirCall := theirs.placeCall(t, "+14155550002")
	status, ep := theirs.api(t, "POST", "/v1/webhook-endpoints", map[string]any{"url": "http://127.0.0.1:9/hooks"})
	if status != http.StatusCreated {
		t.Fatalf("creating their endpoint: %d %v", status, ep)
	}
	c := signInClient(t, mine.key)
	for _, path := range []string{"/dashboard/calls/" + theirCall, "/dashboard/endpoints/" + ep["id"].(string)} {
		if resp, _ := c.get(t, path); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", path, resp.StatusCode)
		}
	}
	if resp := c.post(t, "/dashboard/calls/"+theirCall+"/stop", url.Values{"csrf_token": {c.csrf}}); resp.StatusCode != http.StatusNotFound {
		t.Errorf("stopping their call = %d, want 404", resp.StatusCode)
	}
	theirs2 := signInClient(t, theirs.key)
	if resp, _ := theirs2.get(t, "/dashboard/calls/"+theirCall); resp.StatusCode != http.StatusOK {
		t.Errorf("their own call = %d, want 200", resp.StatusCode)
	}
}

// Signing out ends the session: the cookie it had no longer opens a page.
func TestSignOutEndsTheSession(t *testing.T) {
	suite.Need(t)
	o := newOrg(t)
	ctx := newTab(t)
	do(t, ctx, signIn(o.key),
		chromedp.Click(chromedp.Search(`//button[text()="Sign out"]`)),
		chromedp.WaitVisible(chromedp.CSS("#api_key")),
		screenshot("sign-in"),
		chromedp.Navigate(baseURL+"/dashboard/calls"),
		chromedp.WaitVisible(chromedp.CSS("#api_key")))
	if path := get(t, ctx, chromedp.Evaluate[string](`window.location.pathname`)); path != "/dashboard/sign-in" {
		t.Fatalf("after signing out, /dashboard/calls shows %s", path)
	}
	// The session is gone on the server, not only from the browser.
	c := signInClient(t, o.key)
	session := sessionCookie(t, c)
	c.post(t, "/dashboard/sign-out", url.Values{"csrf_token": {c.csrf}})
	replay := &http.Client{CheckRedirect: c.http.CheckRedirect}
	req, _ := http.NewRequest(http.MethodGet, baseURL+"/dashboard/calls", nil) //nolint:noctx // test
	req.AddCookie(session)
	resp, err := replay.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/dashboard/sign-in") {
		t.Fatalf("the signed-out cookie: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// Deleting the API key a session was opened with ends the session at its
// next request.
func TestRevokedKeyEndsItsSessions(t *testing.T) {
	suite.Need(t)
	o := newOrg(t)
	c := signInClient(t, o.key)
	if resp, _ := c.get(t, "/dashboard/calls"); resp.StatusCode != http.StatusOK {
		t.Fatalf("signed in: %d", resp.StatusCode)
	}
	must(t, k8s.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: o.keySecret}}))
	eventually(t, "the session ends", func() bool {
		resp, _ := c.get(t, "/dashboard/calls")
		return resp.StatusCode == http.StatusSeeOther && resp.Header.Get("Location") == "/dashboard/sign-in?ended=revoked"
	})
}

// The session cookie is HttpOnly and SameSite=Strict, and expires.
func TestSessionCookie(t *testing.T) {
	suite.Need(t)
	o := newOrg(t)
	c := signInClient(t, o.key)
	for _, want := range []string{"HttpOnly", "SameSite=Strict", "Path=/dashboard", "Max-Age=43200"} {
		if !strings.Contains(c.setCookie, want) {
			t.Errorf("Set-Cookie %q lacks %s", c.setCookie, want)
		}
	}
}

// What the platform team declared reads, with where it changes.
func TestReadOnlyPages(t *testing.T) {
	suite.Need(t)
	o := newOrg(t)
	ctx := newTab(t)
	do(t, ctx, signIn(o.key))
	for _, p := range []string{"agents", "sip-trunks", "number-lists"} {
		do(t, ctx, chromedp.Navigate(baseURL+"/dashboard/"+p), chromedp.WaitVisible(chromedp.CSS("main")))
		main := text(t, ctx, "main")
		if !strings.Contains(main, "kubectl apply") {
			t.Errorf("%s does not say where it changes: %s", p, main)
		}
		if p == "agents" {
			if !strings.Contains(main, "reminder") || !strings.Contains(main, "requires customer_name") {
				t.Errorf("agents page: %s", main)
			}
			// A sample of the agent's voice, loaded when asked for: the
			// browser plays what the endpoint renders.
			sample := `document.querySelector("audio.voice-sample[controls]")`
			if preload := get(t, ctx, chromedp.Evaluate[string](sample+`?.preload ?? ""`)); preload != "none" {
				t.Errorf("the agent's voice sample: preload %q, want none", preload)
			}
			get(t, ctx, chromedp.Evaluate[bool](sample+`.load() === undefined`))
			eventually(t, "the browser loads the voice sample", func() bool {
				return get(t, ctx, chromedp.Evaluate[float64](sample+`.duration || 0`)) > 0.5
			})
			do(t, ctx, screenshot("agents"))
		}
	}
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	return string(b)
}

func sessionCookie(t *testing.T, c *browserlessClient) *http.Cookie {
	t.Helper()
	u, _ := url.Parse(baseURL + "/dashboard/")
	for _, ck := range c.http.Jar.Cookies(u) {
		if ck.Name == "switchboard_session" {
			return ck
		}
	}
	t.Fatal("no session cookie")
	return nil
}

// An agent's voice sample is a WAV of its line in the embedded voice, for
// the organization's own agents only.
func TestAgentVoiceSample(t *testing.T) {
	suite.Need(t)
	mine, theirs := newOrg(t), newOrg(t)
	must(t, k8s.Create(context.Background(), &switchboardv1.Agent{
		ObjectMeta: metav1.ObjectMeta{Namespace: theirs.ns, Name: "collections"},
		Spec:       switchboardv1.AgentSpec{FromNumber: "+14155550101"}}))
	c := signInClient(t, mine.key)
	resp, body := c.get(t, "/dashboard/agents/reminder/voice.wav")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "audio/wav" {
		t.Fatalf("my agent's sample = %d %s, want 200 audio/wav: %.200s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	pcm, err := audio.DecodeMono(strings.NewReader(body))
	if err != nil || len(pcm) < audio.SampleRate/2 {
		t.Fatalf("my agent's sample: %d samples, %v; want a WAV of at least half a second", len(pcm), err)
	}
	if again, body2 := c.get(t, "/dashboard/agents/reminder/voice.wav"); again.StatusCode != http.StatusOK || body2 != body {
		t.Errorf("the sample again = %d, %d bytes; want the same %d bytes", again.StatusCode, len(body2), len(body))
	}
	for _, path := range []string{"/dashboard/agents/collections/voice.wav", "/dashboard/agents/nobody/voice.wav"} {
		if resp, _ := c.get(t, path); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", path, resp.StatusCode)
		}
	}
}

// An agent with a voice server is heard in the server's voice (the
// stand-in's tone, of its pitch and length), kept until the agent
// changes; a sample the server fails plays in the embedded voice, not kept.
func TestAgentVoiceSampleFromItsServer(t *testing.T) {
	suite.Need(t)
	ctx := context.Background()
	mine := newOrg(t)
	stand := ttstest.New(t, ttstest.Behaviour{Tone: 600, Length: 700 * time.Millisecond})
	agent := &switchboardv1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: mine.ns, Name: "voiced"},
		Spec: switchboardv1.AgentSpec{FromNumber: "+14155550102", Voice: &switchboardv1.AgentVoice{
			Server: &switchboardv1.VoiceServer{URL: stand.URL, Voice: "af_heart"}}}}
	must(t, k8s.Create(ctx, agent))
	c := signInClient(t, mine.key)
	const path = "/dashboard/agents/voiced/voice.wav"

	// sample fetches the sample once the dashboard's cache shows the
	// agent at its generation (keep) and its tone is hz.
	sample := func(what string, hz float64, length time.Duration) *http.Response {
		t.Helper()
		var resp *http.Response
		var pcm []int16
		eventually(t, what, func() bool {
			var body string
			if resp, body = c.get(t, path); resp.StatusCode != http.StatusOK {
				return false
			}
			var err error
			pcm, err = audio.DecodeMono(strings.NewReader(body))
			must(t, err)
			return hz == 0 || math.Abs(pitch(pcm)-hz) < hz/20
		})
		want := int(length.Seconds() * audio.SampleRate)
		if length > 0 && (len(pcm) < want-80 || len(pcm) > want+80) {
			t.Errorf("%s: %d samples, want the stand-in's %d", what, len(pcm), want)
		}
		return resp
	}

	resp := sample("the server's voice (600 Hz)", 600, 700*time.Millisecond)
	if cc := resp.Header.Get("Cache-Control"); cc != "private, max-age=3600" {
		t.Errorf("the server's sample: Cache-Control %q, want it kept", cc)
	}
	reqs := stand.Requests()
	if len(reqs) == 0 || reqs[len(reqs)-1].Input != "Hello, this is voiced." || reqs[len(reqs)-1].Voice != "af_heart" {
		t.Fatalf("the stand-in was asked %+v", reqs)
	}
	if again, _ := c.get(t, path); again.StatusCode != http.StatusOK || len(stand.Requests()) != len(reqs) {
		t.Errorf("the sample again = %d after %d requests to the server, want it kept (%d)",
			again.StatusCode, len(stand.Requests()), len(reqs))
	}

	// A changed voice is heard: the sample is kept by the agent's generation.
	stand.Set(ttstest.Behaviour{Tone: 300, Length: 500 * time.Millisecond})
	setVoice := func(voice string) {
		t.Helper()
		must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(agent), agent); err != nil {
				return err
			}
			agent.Spec.Voice.Server.Voice = voice
			return k8s.Update(ctx, agent)
		}))
	}
	setVoice("bf_emma")
	sample("the changed voice (300 Hz)", 300, 500*time.Millisecond)

	// A server that fails: the embedded voice, not kept.
	stand.Set(ttstest.Behaviour{Mode: ttstest.Status})
	setVoice("am_adam")
	eventually(t, "a sample in the embedded voice", func() bool {
		resp, _ := c.get(t, path)
		return resp.StatusCode == http.StatusOK && resp.Header.Get("Cache-Control") == "no-store"
	})
	before := len(stand.Requests())
	if resp, _ := c.get(t, path); resp.StatusCode != http.StatusOK || len(stand.Requests()) != before+1 {
		t.Errorf("the failed sample again = %d, %d requests to the server; want it asked again (%d)",
			resp.StatusCode, len(stand.Requests()), before+1)
	}
}

// pitch estimates a tone's frequency from its rising zero crossings,
// away from its edges.
func pitch(pcm []int16) float64 {
	mid := pcm[len(pcm)/10 : len(pcm)*9/10]
	crossings := 0
	for i := 1; i < len(mid); i++ {
		if mid[i-1] < 0 && mid[i] >= 0 {
			crossings++
		}
	}
	return float64(crossings) / (float64(len(mid)) / audio.SampleRate)
}
