package sip_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/coder/websocket"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
	"github.com/switchboard-dev/switchboard/internal/telephony/audio"
)

// On the simulated carrier, a streamed call's recording is the real
// streams: the tone the bot plays is on the agent's (left) channel, the
// simulated callee on the right; its transcript invents no word of the
// bot's.
func TestSimulatedStreamedCallRecordsTheBot(t *testing.T) {
	const botHz = 1000
	g := NewWithT(t)
	bot := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer func() { _ = c.CloseNow() }()
		pcm := make([]int16, audio.SampleRate*2/5) // 400 ms: the suite's calls talk 800 ms
		for i := range pcm {
			pcm[i] = int16(8000 * math.Sin(2*math.Pi*botHz*float64(i)/audio.SampleRate))
		}
		msg, _ := json.Marshal(map[string]any{"event": "media", "media": map[string]any{
			"payload": base64.StdEncoding.EncodeToString(Mulaw(pcm))}})
		if c.Write(r.Context(), websocket.MessageText, msg) != nil {
			return
		}
		for {
			if _, _, err := c.Read(r.Context()); err != nil {
				return
			}
		}
	}))
	defer bot.Close()
	o := StreamingOrg(t, WsURL(bot))
	id := o.CreateCall(t, "+14155551234", nil)
	call := o.WaitAnalyzed(t, id)
	g.Expect(call).To(HaveKeyWithValue("disconnection_reason", "user_hangup"))
	url, _ := call["recording_url"].(string)
	g.Expect(url).NotTo(BeEmpty())

	resp, err := http.Get(url) //nolint:gosec,noctx // the recording link the API gave
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	left, right, err := audio.DecodeStereo(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ToneTime(left, botHz)).To(BeNumerically(">=", 300*time.Millisecond), "the bot's tone on the agent's channel")
	g.Expect(ToneTime(right, botHz)).To(BeZero(), "the bot's tone on the callee's channel")
	g.Expect(ToneTime(right, 660)).To(BeNumerically(">", 0), "the simulated callee on its channel")

	r := Do(t, "GET", "/v1/calls/"+id+"/transcript", o.Key, nil)
	g.Expect(r.Status).To(Equal(http.StatusOK), string(r.Raw))
	g.Expect(r.Body["transcript"]).To(HavePrefix("Agent: (streaming to the bot: stream MZ"))
	g.Expect(r.Body["transcript"]).To(ContainSubstring("User: (simulated speech: a 660 Hz tone)"))
	g.Expect(r.Body["transcript"]).NotTo(ContainSubstring("Goodbye"), "a scripted line in a streamed call")
}

// A bot that refuses the upgrade ends the call stream_connect_failed, and
// every place an operator or a backend looks says so: the Call's Warning
// Event StreamFailed (kubectl describe), GET /v1/calls/{id}, and the
// call.ended webhook.
func TestStreamFailedIsVisibleEverywhere(t *testing.T) {
	g := NewWithT(t)
	bot := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "who are you?", http.StatusUnauthorized)
	}))
	defer bot.Close()
	o := StreamingOrg(t, WsURL(bot))
	rc := NewReceiver(t, nil)
	_, secret := ApplyEndpoint(t, o.Ns, rc.URL(), nil)
	rc.Trust(secret)

	id := o.CreateCall(t, "+14155551234", nil)
	call := o.WaitAnalyzed(t, id)
	g.Expect(call).To(HaveKeyWithValue("disconnection_reason", "stream_connect_failed"))
	g.Expect(call).To(HaveKeyWithValue("status", "ended"))
	// Nothing was heard (the simulated callee speaks only to a bot): no
	// recording, as the spec has it for calls without one.
	g.Expect(call).To(HaveKeyWithValue("recording_url", BeNil()))
	g.Expect(Do(t, "GET", "/v1/calls/"+id+"/recording", o.Key, nil).Status).To(Equal(http.StatusNotFound))

	const why = "the bot answered the upgrade with HTTP 401"
	var note string
	g.Eventually(func() string {
		var list eventsv1.EventList
		g.Expect(K8s.List(context.Background(), &list, client.InNamespace(o.Ns))).To(Succeed())
		for _, e := range list.Items {
			if e.Reason == "StreamFailed" && e.Type == "Warning" && e.Regarding.Kind == "Call" {
				note = e.Note
			}
		}
		return note
	}, 10*time.Second, 100*time.Millisecond).Should(ContainSubstring(why))
	g.Expect(note).To(HavePrefix("stream_connect_failed: "))
	var calls switchboardv1.CallList // the organization's one call
	g.Expect(K8s.List(context.Background(), &calls, client.InNamespace(o.Ns))).To(Succeed())
	g.Expect(calls.Items).To(HaveLen(1))
	describe := ControlPlane.Kubectl(t).MustRun(t, "describe", "call", "-n", o.Ns, calls.Items[0].Name).Stdout
	g.Expect(describe).To(MatchRegexp(`Warning\s+StreamFailed\s+.*` + why))

	g.Eventually(func() []string { return Events(rc.ForCall(id)) }, 20*time.Second, 20*time.Millisecond).
		Should(ContainElement("call.ended"))
	for _, d := range rc.ForCall(id) {
		if d.Event == "call.ended" {
			ExpectSigned(g, d)
			g.Expect(d.Call()).To(HaveKeyWithValue("disconnection_reason", "stream_connect_failed"))
		}
	}
}
