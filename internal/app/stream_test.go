package app_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	. "github.com/onsi/gomega"
	"github.com/zaf/g711"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony/audio"
)

// streamingOrg is an organization whose agent streams to the bot at url.
func streamingOrg(t *testing.T, url string) *org {
	t.Helper()
	ns := controlPlane.NewOrganization(t, "org-")
	o := &org{ns: ns, key: createKey(t, ns, "")}
	o.agent = createAgent(t, ns, "bot", func(s *switchboardv1.AgentSpec) {
		s.Greeting = ""
		s.Stream = &switchboardv1.StreamSpec{URL: url}
	})
	o.agentID = o.agent.ResolvedID()
	return o
}

// wsURL is the ws:// address of a test server.
func wsURL(srv *httptest.Server) string { return "ws" + strings.TrimPrefix(srv.URL, "http") + "/media" }

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
			"payload": base64.StdEncoding.EncodeToString(mulaw(pcm))}})
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
	o := streamingOrg(t, wsURL(bot))
	id := o.createCall(t, "+14155551234", nil)
	call := o.waitAnalyzed(t, id)
	g.Expect(call).To(HaveKeyWithValue("disconnection_reason", "user_hangup"))
	url, _ := call["recording_url"].(string)
	g.Expect(url).NotTo(BeEmpty())

	resp, err := http.Get(url) //nolint:gosec,noctx // the recording link the API gave
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	left, right, err := audio.DecodeStereo(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(toneTime(left, botHz)).To(BeNumerically(">=", 300*time.Millisecond), "the bot's tone on the agent's channel")
	g.Expect(toneTime(right, botHz)).To(BeZero(), "the bot's tone on the callee's channel")
	g.Expect(toneTime(right, 660)).To(BeNumerically(">", 0), "the simulated callee on its channel")

	r := do(t, "GET", "/v1/calls/"+id+"/transcript", o.key, nil)
	g.Expect(r.status).To(Equal(http.StatusOK), string(r.raw))
	g.Expect(r.body["transcript"]).To(HavePrefix("Agent: (streaming to the bot: stream MZ"))
	g.Expect(r.body["transcript"]).To(ContainSubstring("User: (simulated speech: a 660 Hz tone)"))
	g.Expect(r.body["transcript"]).NotTo(ContainSubstring("Goodbye"), "a scripted line in a streamed call")
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
	o := streamingOrg(t, wsURL(bot))
	rc := newReceiver(t, nil)
	_, secret := applyEndpoint(t, o.ns, rc.url(), nil)
	rc.trust(secret)

	id := o.createCall(t, "+14155551234", nil)
	call := o.waitAnalyzed(t, id)
	g.Expect(call).To(HaveKeyWithValue("disconnection_reason", "stream_connect_failed"))
	g.Expect(call).To(HaveKeyWithValue("status", "ended"))
	// Nothing was heard (the simulated callee speaks only to a bot): no
	// recording, as the spec has it for calls without one.
	g.Expect(call).To(HaveKeyWithValue("recording_url", BeNil()))
	g.Expect(do(t, "GET", "/v1/calls/"+id+"/recording", o.key, nil).status).To(Equal(http.StatusNotFound))

	const why = "the bot answered the upgrade with HTTP 401"
	var note string
	g.Eventually(func() string {
		var list eventsv1.EventList
		g.Expect(k8s.List(context.Background(), &list, client.InNamespace(o.ns))).To(Succeed())
		for _, e := range list.Items {
			if e.Reason == "StreamFailed" && e.Type == "Warning" && e.Regarding.Kind == "Call" {
				note = e.Note
			}
		}
		return note
	}, 10*time.Second, 100*time.Millisecond).Should(ContainSubstring(why))
	g.Expect(note).To(HavePrefix("stream_connect_failed: "))
	var calls switchboardv1.CallList // the organization's one call
	g.Expect(k8s.List(context.Background(), &calls, client.InNamespace(o.ns))).To(Succeed())
	g.Expect(calls.Items).To(HaveLen(1))
	describe := controlPlane.Kubectl(t).MustRun(t, "describe", "call", "-n", o.ns, calls.Items[0].Name).Stdout
	g.Expect(describe).To(MatchRegexp(`Warning\s+StreamFailed\s+.*` + why))

	g.Eventually(func() []string { return events(rc.forCall(id)) }, 20*time.Second, 20*time.Millisecond).
		Should(ContainElement("call.ended"))
	for _, d := range rc.forCall(id) {
		if d.event == "call.ended" {
			expectSigned(g, d)
			g.Expect(d.call()).To(HaveKeyWithValue("disconnection_reason", "stream_connect_failed"))
		}
	}
}

func mulaw(pcm []int16) []byte {
	out := make([]byte, len(pcm))
	for i, v := range pcm {
		out[i] = g711.EncodeUlawFrame(v)
	}
	return out
}

// toneTime is how much of pcm, in 20 ms frames, carries most of its
// energy at hz (Goertzel's algorithm).
func toneTime(pcm []int16, hz float64) time.Duration {
	const frame = audio.SampleRate / 50
	coeff := 2 * math.Cos(2*math.Pi*hz/audio.SampleRate)
	n := 0
	for i := 0; i+frame <= len(pcm); i += frame {
		var s1, s2, energy float64
		for _, v := range pcm[i : i+frame] {
			s1, s2 = float64(v)+coeff*s1-s2, s1
			energy += float64(v) * float64(v)
		}
		if power := 2 * (s1*s1 + s2*s2 - coeff*s1*s2) / frame; energy > 0 && power > energy/2 {
			n++
		}
	}
	return time.Duration(n) * 20 * time.Millisecond
}
