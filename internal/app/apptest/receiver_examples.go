package apptest

// The example receivers of hack/receivers, run as real processes the way
// a customer runs them, receiving real deliveries from the running operator.

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/switchboard-dev/switchboard/internal/signing"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// CheckReceiverExample starts an example receiver (argv) for a new
// WebhookEndpoint and checks that it rejects forged requests, logs each
// event of a real call once, and that Switchboard records every delivery
// as succeeded on the first attempt.
func CheckReceiverExample(t *testing.T, argv ...string) {
	g := NewWithT(t)
	o := NewOrg(t)
	// The receiver needs the endpoint's secret to start, and the endpoint
	// needs the receiver's URL: reserve a port first.
	port := testsupport.FreePort(t, "tcp")
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	_, secret := ApplyEndpoint(t, o.Ns, base+"/webhooks/switchboard", nil)
	out := StartReceiver(t, port, secret, argv...)

	// Forged, tampered and replayed requests are refused, and not logged.
	post := func(secret, id string, at time.Time, signed, sent string) int {
		t.Helper()
		return PostSigned(t, base+"/webhooks/switchboard", secret, id, at, []byte(signed), []byte(sent))
	}
	forged := `{"event":"call.ended","call":{"call_id":"call_forged","status":"ended"}}`
	otherSecret, err := signing.NewSecret()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(post(otherSecret, "dlv_wrong_secret", time.Now(), forged, forged)).
		To(Equal(http.StatusUnauthorized), "wrong secret")
	g.Expect(post(secret, "dlv_tampered", time.Now(), forged,
		strings.Replace(forged, "ended", "failed", 1))).To(Equal(http.StatusUnauthorized), "tampered body")
	g.Expect(post(secret, "dlv_replayed", time.Now().Add(-10*time.Minute), forged, forged)).
		To(Equal(http.StatusUnauthorized), "timestamp out of tolerance")
	g.Expect(post(secret, "", time.Now(), forged, forged)).To(Equal(http.StatusUnauthorized), "no webhook-id")

	// A real call: three events, each logged once, with the call's fields.
	id := o.CreateCall(t, "+14155551234", nil)
	g.Eventually(func() []string { return EventsLogged(out.String(), id) }, 20*time.Second, 50*time.Millisecond).
		Should(ConsistOf("call.started", "call.ended", "call.analyzed"), "receiver output:\n%s", out)
	lines := LinesLogged(out.String(), id)
	g.Expect(lines["call.started"].Status).NotTo(BeEmpty())
	g.Expect(lines["call.ended"].Status).To(Equal("ended"))
	g.Expect(lines["call.ended"].Disposition).To(Equal("answered"))
	g.Expect(lines["call.analyzed"].Status).To(Equal("ended"))

	// Switchboard's side: each event delivered on the first attempt, answered
	// 204, under the webhook-id the receiver logged.
	g.Eventually(func() []string {
		var got []string
		for _, d := range DeliveriesOf(t, o.Ns, CallName(id)) {
			got = append(got, fmt.Sprintf("%s=%s code=%d attempts=%d logged=%t", d.Spec.Event, d.Status.Phase,
				d.Status.LastStatusCode, d.Status.AttemptCount, lines[d.Spec.Event].WebhookID == d.Spec.DeliveryID))
		}
		return got
	}, 10*time.Second, 50*time.Millisecond).Should(ConsistOf(
		"call.started=succeeded code=204 attempts=1 logged=true",
		"call.ended=succeeded code=204 attempts=1 logged=true",
		"call.analyzed=succeeded code=204 attempts=1 logged=true"))

	// At least once: a redelivery (same webhook-id) is acknowledged but not
	// processed again. The receiver logs before it answers, but its output
	// reaches the test through a pipe: a later event, once logged, shows
	// that everything before it has been read.
	again := `{"event":"call.ended","call":{"call_id":"call_redelivered","status":"ended","disposition":"answered"}}`
	for range 2 {
		g.Expect(post(secret, "dlv_redelivered", time.Now(), again, again)).To(Equal(http.StatusNoContent))
	}
	after := `{"event":"call.ended","call":{"call_id":"call_after","status":"ended","disposition":"answered"}}`
	g.Expect(post(secret, "dlv_after", time.Now(), after, after)).To(Equal(http.StatusNoContent))
	g.Eventually(func() []string { return EventsLogged(out.String(), "call_after") }, 5*time.Second, 20*time.Millisecond).
		Should(Equal([]string{"call.ended"}))
	g.Expect(EventsLogged(out.String(), "call_redelivered")).To(Equal([]string{"call.ended"}))
	g.Expect(out.String()).NotTo(ContainSubstring("call_forged"))
}

// StartReceiver runs argv with the example's environment, waits until it
// accepts connections on port, and returns its standard output, where the
// examples log. The process is killed when the test ends.
func StartReceiver(t *testing.T, port int, secret string, argv ...string) *testsupport.Buffer {
	t.Helper()
	out, errOut := &testsupport.Buffer{}, &testsupport.Buffer{}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "SWITCHBOARD_WEBHOOK_SECRET="+secret, fmt.Sprintf("PORT=%d", port))
	cmd.Stdout, cmd.Stderr = out, errOut
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %v: %v", argv, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("receiver %v stdout:\n%s\nstderr:\n%s", argv, out, errOut)
		}
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(30 * time.Second); ; {
		select {
		case <-exited:
			t.Fatalf("receiver %v exited before listening on %s", argv, addr)
		default:
		}
		if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			_ = conn.Close()
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("receiver %v never listened on %s", argv, addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// PostSigned posts sent, with the webhook-* headers Switchboard would send
// for signed under secret, and returns the status code.
func PostSigned(t *testing.T, url, secret, id string, at time.Time, signed, sent []byte) int {
	t.Helper()
	signature, err := signing.Sign([]string{secret}, id, at, signed)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, bytes.NewReader(sent))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", fmt.Sprint(at.Unix()))
	req.Header.Set("webhook-signature", signature)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// LoggedLine is one event line of an example receiver.
type LoggedLine struct {
	Event, CallID, Status, Disposition, WebhookID string
}

// Both examples log "<event> call_id=... status=... disposition=...
// webhook-id=..." (the Go one as slog's msg=<event>, after time and level).
var LogLine = regexp.MustCompile(`(call\.[a-z]+) call_id=(\S*) status=(\S*) disposition=(\S*) webhook-id=(\S*)`)

func ParseLog(output, callID string) []LoggedLine {
	var out []LoggedLine
	for _, m := range LogLine.FindAllStringSubmatch(output, -1) {
		if m[2] == callID {
			out = append(out, LoggedLine{Event: m[1], CallID: m[2], Status: m[3], Disposition: m[4], WebhookID: m[5]})
		}
	}
	return out
}

// EventsLogged lists the events logged for a call, in order.
func EventsLogged(output, callID string) []string {
	var events []string
	for _, l := range ParseLog(output, callID) {
		events = append(events, l.Event)
	}
	return events
}

// LinesLogged maps each event logged for a call to its line.
func LinesLogged(output, callID string) map[string]LoggedLine {
	lines := map[string]LoggedLine{}
	for _, l := range ParseLog(output, callID) {
		lines[l.Event] = l
	}
	return lines
}
