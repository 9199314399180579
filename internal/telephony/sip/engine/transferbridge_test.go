package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/conversation"
	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/siptest"
)

// personNumber is who the bridge tests transfer to: the PBX routes it to
// the person's peer, every other number to the callee's.
const personNumber = "+14155550199"

// startBridgePBX runs kamailio as the trunk's proxy (digest user alice,
// password secret) relaying calls to personNumber to person and the
// others to callee (both host:port), record-routing.
func startBridgePBX(t testing.TB, callee, person string) *siptest.Kamailio {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "kamailio_pbx_bridge.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.NewReplacer("[person_user]", personNumber, "[person]", person).Replace(string(b))
	path := filepath.Join(t.TempDir(), "kamailio_pbx_bridge.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return siptest.StartKamailio(t, path, siptest.KamailioConfig{User: "alice", Password: "secret", Relay: callee})
}

// pbxTrunk is the trunk through the PBX.
func pbxTrunk(k *siptest.Kamailio) Trunk {
	return Trunk{Address: "sip:" + k.Addr, Username: "alice", Password: "secret"}
}

// recordRouted is sipp's scenario name with the proxy's Record-Route sent
// back, so that our BYE takes the proxy's path.
func recordRouted(t *testing.T, name string) []string {
	t.Helper()
	return editedScenario(t, name, "[last_CSeq:]\n      Contact:", "[last_CSeq:]\n      [last_Record-Route:]\n      Contact:")
}

// legLimits counts the second calls a transfer takes and releases in the
// trunk's limits.
type legLimits struct{ taken, released atomic.Int32 }

func (l *legLimits) take(context.Context) (func(), error) {
	l.taken.Add(1)
	return func() { l.released.Add(1) }, nil
}

func allowAll(context.Context, string) error { return nil }

// bridgeScript transfers to the person, goes on at "back" when that
// failed, and hangs up there.
func bridgeScript(t Transfer) []Step {
	t.To, t.Next = personNumber, "back"
	return []Step{
		{Text: "Let me put you through.", Transfer: &t},
		{Text: "never said"},
		{ID: "back", Text: "I could not reach them.", Audio: tone(200 * time.Millisecond), Hangup: true},
	}
}

// assertBackWithAgent checks a failed transfer's outcome and that the
// script went on at its next step, the hold line said first.
func assertBackWithAgent(t *testing.T, res Result, want switchboardv1.TransferResult, status int) {
	t.Helper()
	if res.Transfer == nil || res.Transfer.Result != want || res.Transfer.SIPStatus != status {
		t.Fatalf("transfer %+v: want %s with %d", res.Transfer, want, status)
	}
	if res.Transfer.To != personNumber || res.Transfer.Method != switchboardv1.TransferByBridge || res.Transfer.Detail == "" {
		t.Errorf("transfer %+v: want to %s by bridge, with a detail", res.Transfer, personNumber)
	}
	if res.HangupBy != HangupByAgent {
		t.Errorf("hung up by %q, want the agent after the script's next step", res.HangupBy)
	}
	var lines []string
	for _, e := range res.Events {
		if e.Speaker == SpeakerAgent && !e.Note {
			lines = append(lines, e.Text)
		}
	}
	if got := strings.Join(lines, " | "); got != "Let me put you through. | Please hold. | I could not reach them." {
		t.Errorf("agent lines %q: want the hold line, then the step after the failed transfer", got)
	}
}

// A bridged transfer to a busy person, and to one whose phone rings past
// the ring timeout (CANCEL): the callee hears the hold line, then the
// agent again at the script's next step, with the outcome in the result;
// the second call's place in the trunk's limits is given back, and its
// INVITE carries the call's headers (checked by the busy person).
func TestBridgeTransferFails(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	for _, tc := range []struct {
		name   string
		person []string
		want   switchboardv1.TransferResult
		status int
	}{
		{"busy", busyCheckingHeaders(t), switchboardv1.TransferBusy, 486},
		{"no answer", ringBehindProxy(t), switchboardv1.TransferNoAnswer, 487},
	} {
		t.Run(tc.name, func(t *testing.T) {
			callee := startSipp(t, "udp", recordRouted(t, "uas.xml")...)
			person := startSipp(t, "udp", tc.person...)
			k := startBridgePBX(t, callee.addr, person.addr)
			var limits legLimits
			res := place(t, e, pbxTrunk(k), CallSpec{CallID: "call-42", Headers: []Header{{Name: "X-Ticket", Value: "T-7"}},
				AllowTransfer: allowAll, SecondLeg: limits.take, Script: bridgeScript(Transfer{Method: switchboardv1.TransferByBridge, RingTimeout: time.Second,
					Hold: tone(300 * time.Millisecond), HoldText: "Please hold."})})
			person.wait(t)
			callee.wait(t)
			assertBackWithAgent(t, res, tc.want, tc.status)
			if limits.taken.Load() != 1 || limits.released.Load() != 1 {
				t.Errorf("second calls taken %d, released %d: want 1 and 1", limits.taken.Load(), limits.released.Load())
			}
		})
	}
}

// The person (baresip, playing a loud tone) accepts a warm transfer by
// pressing 1 after the whisper; the callee (sipp, talking) is then
// bridged to them until the person hangs up at the end of their audio:
// the call ends as bridged, and its recording holds the person on the
// left (louder than the hold line) and the callee on the right after the
// bridge.
func TestWarmTransferAcceptedByKey(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	callee := startSipp(t, "udp", recordRouted(t, "callee_talks.xml")...)
	person := siptest.StartBaresip(t, personNumber, tone(4*time.Second))
	k := startBridgePBX(t, callee.addr, person.Addr)
	rec := filepath.Join(t.TempDir(), "call.wav")
	go pressWhenAnswered(t, person, "1")
	var limits legLimits
	res := place(t, e, pbxTrunk(k), CallSpec{AllowTransfer: allowAll, SecondLeg: limits.take, RecordPath: rec,
		MaxDuration: 20 * time.Second, Script: bridgeScript(Transfer{Mode: switchboardv1.TransferWarm,
			Hold: quietTone(300 * time.Millisecond), HoldText: "Please hold.",
			Whisper: tone(300 * time.Millisecond), WhisperText: "A caller about billing.", AcceptTimeout: 10 * time.Second})})
	callee.wait(t)
	out := res.Transfer
	if out == nil || out.Result != switchboardv1.TransferBridged || out.Method != switchboardv1.TransferByBridge ||
		out.ConnectedAt.IsZero() || out.SecondLeg <= 0 {
		t.Fatalf("transfer %+v: want bridged, connected, with the second leg's length", out)
	}
	if res.HangupBy != HangupByTransfer {
		t.Errorf("hung up by %q, want the transfer", res.HangupBy)
	}
	if !hasLine(res, "A caller about billing.") {
		t.Errorf("transcript %+v: want the whisper's text", res.Events)
	}
	left, right := readRecording(t, rec)
	from := int(out.ConnectedAt.Sub(res.AnsweredAt).Seconds()*sampleRate) + 2*bridgePrebuffer
	to := min(from+sampleRate, len(left))
	if to-from < sampleRate/2 {
		t.Fatalf("recording of %d samples ends before a second of the bridge (from %d)", len(left), from)
	}
	t.Logf("after the bridge: left mean %.0f, right mean %.0f", meanAbs(left[from:to]), meanAbs(right[from:to]))
	if l := meanAbs(left[from:to]); l < 3000 {
		t.Errorf("left channel after the bridge: mean %.0f, want the person's tone (~5100)", l)
	}
	if r := meanAbs(right[from:to]); r < 50 {
		t.Errorf("right channel after the bridge: mean %.0f, want the callee's voice", r)
	}
	if limits.taken.Load() != 1 || limits.released.Load() != 1 {
		t.Errorf("second calls taken %d, released %d: want 1 and 1", limits.taken.Load(), limits.released.Load())
	}
}

// A person who never presses the key: declined once the accept timeout
// passed after the whisper; they are hung up and the callee is back with
// the agent at the script's next step.
func TestWarmTransferNotAccepted(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	callee := startSipp(t, "udp", recordRouted(t, "uas.xml")...)
	person := siptest.StartBaresip(t, personNumber, tone(10*time.Second))
	k := startBridgePBX(t, callee.addr, person.Addr)
	res := place(t, e, pbxTrunk(k), CallSpec{AllowTransfer: allowAll,
		Script: bridgeScript(Transfer{Mode: switchboardv1.TransferWarm, Hold: tone(300 * time.Millisecond),
			HoldText: "Please hold.", Whisper: tone(300 * time.Millisecond), AcceptTimeout: time.Second})})
	callee.wait(t)
	person.WaitCallEnded(t)
	assertBackWithAgent(t, res, switchboardv1.TransferDeclined, 200)
}

// pressWhenAnswered has baresip key digits once its call is established
// (ctrl_tcp's sndcode, baresip 1.0's command for it).
func pressWhenAnswered(t *testing.T, b *siptest.Baresip, digits string) {
	for !strings.Contains(b.Output(), "Call established") {
		select {
		case <-t.Context().Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
	for _, d := range digits {
		if err := b.Command("sndcode", string(d)); err != nil {
			t.Errorf("sndcode %c: %v", d, err)
		}
	}
}

// quietTone is tone at a quarter of its amplitude.
func quietTone(d time.Duration) []int16 {
	pcm := tone(d)
	for i := range pcm {
		pcm[i] /= 4
	}
	return pcm
}

// hasLine reports whether the transcript has an agent line text.
func hasLine(res Result, text string) bool {
	for _, e := range res.Events {
		if e.Speaker == SpeakerAgent && e.Text == text {
			return true
		}
	}
	return false
}

// ringBehindProxy is ring_forever.xml behind a proxy: the proxy's CANCEL
// carries only its own Via, so the 487 takes the INVITE's two.
func ringBehindProxy(t *testing.T) []string {
	t.Helper()
	return editedScenario(t, "ring_forever.xml",
		`<recv request="INVITE"/>`, `<recv request="INVITE">
    <action>
      <ereg regexp=".*" search_in="hdr" header="Via:" assign_to="via1"/>
      <ereg regexp=".*" search_in="hdr" header="Via:" occurrence="2" assign_to="via2"/>
    </action>
  </recv>`,
		"SIP/2.0 487 Request Terminated\n      [last_Via:]", "SIP/2.0 487 Request Terminated\n      Via: [$via1]\n      Via: [$via2]")
}

// What a person says accepts a warm transfer when it has "yes" or
// "accept" as a word.
func TestSaysAccept(t *testing.T) {
	for text, want := range map[string]bool{
		"Yes.":                  true,
		"yes, put them through": true,
		"I accept":              true,
		"no":                    false,
		"yesterday":             false,
		"":                      false,
	} {
		if got := saysAccept(text); got != want {
			t.Errorf("saysAccept(%q) = %v, want %v", text, got, want)
		}
	}
}

// fixedVoice says every line as the same audio, and notes the lines.
type fixedVoice struct{ said []string }

func (v *fixedVoice) Speak(_ context.Context, text string) ([]int16, error) {
	v.said = append(v.said, text)
	return tone(100 * time.Millisecond), nil
}

// A conversation's warm transfer whose whisper holds {{summary}}: the
// model's summary fills it and the line's voice says it, before the
// transfer is made; a whisper without it is left as the policy rendered
// it.
func TestConversationWhisperSummary(t *testing.T) {
	for _, tc := range []struct {
		name, whisper, want string
		spoken              bool
	}{
		{"summary", "Transferred call: {{summary}} Press 1 to accept.",
			"Transferred call: Wants a refund for order 12. Press 1 to accept.", true},
		{"no summary", "Press 1 to accept.", "Press 1 to accept.", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &fixedVoice{}
			var got Transfer
			l := &sipLine{voice: v, options: &Transfer{Mode: switchboardv1.TransferWarm, WhisperText: tc.whisper},
				transfer: func(_ context.Context, tr Transfer) telephony.TransferOutcome {
					got = tr
					return telephony.TransferOutcome{Result: switchboardv1.TransferDeclined}
				}}
			res := l.Transfer(t.Context(), conversation.TransferRequest{Number: personNumber,
				Summary: "Wants a refund for order 12."})
			if res.Connected || res.Result != string(switchboardv1.TransferDeclined) {
				t.Errorf("result %+v: want the transfer's declined", res)
			}
			if got.To != personNumber || got.WhisperText != tc.want {
				t.Errorf("transfer to %q whispering %q: want %q", got.To, got.WhisperText, tc.want)
			}
			if spoken := len(got.Whisper) > 0; spoken != tc.spoken || (tc.spoken && v.said[0] != tc.want) {
				t.Errorf("whisper spoken %v (%q): want %v", spoken, v.said, tc.spoken)
			}
		})
	}
}

// A callee who hangs up while bridged to the person (cold, by bridge):
// the person is hung up too, and the call's end is the transfer's.
func TestBridgeTransferCalleeHangsUp(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	callee := startSipp(t, "udp", editedScenario(t, "callee_bye.xml",
		"[last_CSeq:]\n      Contact:", "[last_CSeq:]\n      [last_Record-Route:]\n      Contact:",
		"CSeq: 1 BYE\n", "CSeq: 1 BYE\n      [routes]\n", "[talk_ms]", "2000")...)
	person := siptest.StartBaresip(t, personNumber, tone(20*time.Second))
	k := startBridgePBX(t, callee.addr, person.Addr)
	res := place(t, e, pbxTrunk(k), CallSpec{AllowTransfer: allowAll, MaxDuration: 20 * time.Second,
		Script: bridgeScript(Transfer{Method: switchboardv1.TransferByBridge, Hold: tone(300 * time.Millisecond),
			HoldText: "Please hold."})})
	callee.wait(t)
	person.WaitCallEnded(t)
	if res.Transfer == nil || res.Transfer.Result != switchboardv1.TransferBridged || res.Transfer.SecondLeg <= 0 {
		t.Fatalf("transfer %+v: want bridged, with the second leg's length", res.Transfer)
	}
	if res.HangupBy != HangupByTransfer {
		t.Errorf("hung up by %q, want the transfer", res.HangupBy)
	}
}

// busyCheckingHeaders is reject.xml answering 486 to an INVITE that
// carries the call's headers (sipp fails the call when one is missing).
func busyCheckingHeaders(t *testing.T) []string {
	t.Helper()
	args := scenario(t, "reject.xml", "status", "486", "reason", "Busy Here")
	return siptest.EditedScenario(t, args[1], `<recv request="INVITE"/>`, `<recv request="INVITE">
    <action>
      <ereg regexp="^ *T-7$" search_in="hdr" header="X-Ticket:" check_it="true" assign_to="ticket"/>
      <ereg regexp="^ *call-42$" search_in="hdr" header="X-Switchboard-Call-ID:" check_it="true" assign_to="call"/>
    </action>
  </recv>
  <Reference variables="ticket,call"/>`)
}
