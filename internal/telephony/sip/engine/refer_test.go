package engine

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/siptest"
)

// person is the transfer target of these tests: testdata/kamailio_pbx.cfg
// relays INVITEs for +1999555... to its [target].
const person = "+19995550199"

// startPBX runs kamailio with testdata/kamailio_pbx.cfg: the callee's
// number goes to relay, the person's to target.
func startPBX(t testing.TB, relay, target string) *siptest.Kamailio {
	t.Helper()
	return siptest.StartKamailio(t, filepath.Join("testdata", "kamailio_pbx.cfg"),
		siptest.KamailioConfig{Relay: relay, Target: target})
}

// transferScript says a line and transfers to person; when that fails it
// goes to the "sorry" step, skipping the one between.
func transferScript(ring time.Duration) []Step {
	return []Step{
		{Text: "Connecting you now.", Audio: tone(300 * time.Millisecond),
			Transfer: &Transfer{To: person, RingTimeout: ring, Next: "sorry"}},
		{Text: "You should not hear this.", Hangup: true},
		{ID: "sorry", Text: "Sorry, nobody could take your call.", Audio: tone(300 * time.Millisecond)},
	}
}

// transferCall is a call running transferScript with a custom header and
// a guard that allows every number.
func transferCall(ring time.Duration) CallSpec {
	return CallSpec{Script: transferScript(ring), Headers: []Header{{Name: "X-Campaign", Value: "spring"}},
		AllowTransfer: func(context.Context, string) error { return nil }, MaxDuration: 30 * time.Second}
}

// assertNotes checks the transcript's lines and notes, in order.
func assertNotes(t *testing.T, res Result, want ...string) {
	t.Helper()
	var got []string
	for _, e := range res.Events {
		got = append(got, e.Text)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("transcript:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// assertPlayed checks that the line text was played to the callee: its
// transcript line has the audio's length.
func assertPlayed(t *testing.T, res Result, text string) {
	t.Helper()
	for _, e := range res.Events {
		if e.Text == text && !e.Note && e.End-e.Start >= 280*time.Millisecond {
			return
		}
	}
	t.Errorf("%q was not played: %+v", text, res.Events)
}

// A cold transfer by REFER through a PBX, the callee's side (sipp) taking
// the REFER and reporting the person's call with NOTIFYs: the final
// NOTIFY decides, and a failed transfer gives the callee back to the
// script's next step at once.
func TestTransferByRefer(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	connect := "(transferring to " + person + " by REFER)"
	t.Run("transferred", func(t *testing.T) {
		callee := startSipp(t, "udp", scenario(t, "refer_notify.xml", "final", "200 OK", "ring_ms", "200")...)
		pbx := startPBX(t, callee.addr, "")
		res := place(t, e, Trunk{Address: "sip:" + pbx.Addr}, transferCall(5*time.Second))
		callee.wait(t)
		tr := assertTransfer(t, res, switchboardv1.TransferTransferred, switchboardv1.TransferByRefer, 200)
		if tr != nil && (tr.ConnectedAt.IsZero() || tr.ConnectedAt.Before(tr.RequestedAt)) {
			t.Errorf("connected at %v, requested at %v: want connected after requested", tr.ConnectedAt, tr.RequestedAt)
		}
		if res.HangupBy != HangupByTransfer || res.DisconnectionReason() != switchboardv1.ReasonCallTransfer {
			t.Errorf("hung up by %q, reason %q: want transfer, call_transfer", res.HangupBy, res.DisconnectionReason())
		}
		assertNotes(t, res, "Connecting you now.", connect, "(transferred to "+person+")")
	})
	t.Run("NOTIFYs before the 202", func(t *testing.T) {
		callee := startSipp(t, "udp", scenario(t, "refer_notify_first.xml", "final", "200 OK", "ring_ms", "100")...)
		pbx := startPBX(t, callee.addr, "")
		res := place(t, e, Trunk{Address: "sip:" + pbx.Addr}, transferCall(5*time.Second))
		callee.wait(t)
		assertTransfer(t, res, switchboardv1.TransferTransferred, switchboardv1.TransferByRefer, 200)
		if res.DisconnectionReason() != switchboardv1.ReasonCallTransfer {
			t.Errorf("reason %q, want call_transfer", res.DisconnectionReason())
		}
		assertNotes(t, res, "Connecting you now.", connect, "(transferred to "+person+")")
	})
	t.Run("busy", func(t *testing.T) {
		callee := startSipp(t, "udp", scenario(t, "refer_notify.xml", "final", "486 Busy Here", "ring_ms", "200")...)
		pbx := startPBX(t, callee.addr, "")
		res := place(t, e, Trunk{Address: "sip:" + pbx.Addr}, transferCall(5*time.Second))
		callee.wait(t)
		assertTransfer(t, res, switchboardv1.TransferBusy, switchboardv1.TransferByRefer, 486)
		assertWentOn(t, res)
		assertNotes(t, res, "Connecting you now.", connect, "(transfer to "+person+" failed: busy, 486)",
			"Sorry, nobody could take your call.")
	})
	t.Run("no final NOTIFY", func(t *testing.T) {
		callee := startSipp(t, "udp", scenario(t, "refer_no_notify.xml")...)
		pbx := startPBX(t, callee.addr, "")
		res := place(t, e, Trunk{Address: "sip:" + pbx.Addr}, transferCall(time.Second))
		callee.wait(t)
		tr := assertTransfer(t, res, switchboardv1.TransferNoAnswer, switchboardv1.TransferByRefer, 0)
		if tr != nil && !strings.Contains(tr.Detail, "no final NOTIFY") {
			t.Errorf("detail %q: want it to say no final NOTIFY came", tr.Detail)
		}
		assertWentOn(t, res)
		if n := len(res.Events); n != 4 || !strings.HasPrefix(res.Events[2].Text, "(transfer to "+person+" failed: no_answer, no final NOTIFY") {
			t.Errorf("transcript %+v: want the no_answer note before the next step", res.Events)
		}
	})
	t.Run("not allowed", func(t *testing.T) {
		// Nothing goes on the wire: the guard refuses, the script goes on.
		callee := startSipp(t, "udp", scenario(t, "uas.xml")...)
		c := transferCall(5 * time.Second)
		c.AllowTransfer = nil
		res := place(t, e, Trunk{Address: "sip:" + callee.addr}, c)
		callee.wait(t)
		assertTransfer(t, res, switchboardv1.TransferNotAllowed, switchboardv1.TransferByRefer, 0)
		assertWentOn(t, res)
		assertNotes(t, res, "Connecting you now.", "(transfer to "+person+" refused: not_allowed, "+errNoTransfers.Error()+")",
			"Sorry, nobody could take your call.")
	})
	t.Run("REFER forbidden", func(t *testing.T) {
		// A refusal of this transfer, not of transfers: no bridge.
		callee := startSipp(t, "udp", scenario(t, "refer_refused.xml", "status", "403 Forbidden")...)
		pbx := startPBX(t, callee.addr, "")
		res := place(t, e, Trunk{Address: "sip:" + pbx.Addr}, transferCall(5*time.Second))
		callee.wait(t)
		assertTransfer(t, res, switchboardv1.TransferRefused, switchboardv1.TransferByRefer, 403)
		assertWentOn(t, res)
		assertNotes(t, res, "Connecting you now.", connect, "(transfer to "+person+" failed: refused, 403)",
			"Sorry, nobody could take your call.")
	})
	t.Run("REFER refused", func(t *testing.T) {
		// The person's line is busy: once the bridge dials it, it fails
		// at once.
		target := startSipp(t, "udp", scenario(t, "reject.xml", "status", "486", "reason", "Busy Here")...)
		callee := startSipp(t, "udp", scenario(t, "refer_refused.xml", "status", "405 Method Not Allowed")...)
		pbx := startPBX(t, callee.addr, target.addr)
		res := place(t, e, Trunk{Address: "sip:" + pbx.Addr}, transferCall(5*time.Second))
		callee.wait(t)
		tr := res.Transfer
		if tr == nil || tr.Method != switchboardv1.TransferByBridge || tr.Result.Succeeded() {
			t.Fatalf("transfer %+v: want a failed fallback to a bridge", tr)
		}
		assertWentOn(t, res)
		if n := len(res.Events); n < 4 || res.Events[2].Text != "(REFER refused with 405; transferring to "+person+" by bridge)" ||
			res.Events[n-1].Text != "Sorry, nobody could take your call." {
			t.Errorf("transcript %+v: want the REFER's refusal, the bridge's outcome, then the next step", res.Events)
		}
	})
}

// assertTransfer checks the call's transfer outcome and returns it.
func assertTransfer(t *testing.T, res Result, want switchboardv1.TransferResult, method switchboardv1.TransferMethod,
	status int) *telephony.TransferOutcome {
	t.Helper()
	tr := res.Transfer
	if tr == nil {
		t.Errorf("no transfer in %+v", res)
		return nil
	}
	if tr.Result != want || tr.Method != method || tr.SIPStatus != status || tr.To != person ||
		tr.Mode != switchboardv1.TransferCold {
		t.Errorf("transfer %+v: want %s by %s to %s, SIP status %d", tr, want, method, person, status)
	}
	return tr
}

// assertWentOn checks that a failed transfer left the call to the script:
// its next step played, then the agent hung up.
func assertWentOn(t *testing.T, res Result) {
	t.Helper()
	assertPlayed(t, res, "Sorry, nobody could take your call.")
	if res.HangupBy != HangupByAgent || res.DisconnectionReason() != "agent_hangup" {
		t.Errorf("hung up by %q, reason %q: want the agent, after its script", res.HangupBy, res.DisconnectionReason())
	}
}

// baresip as the callee takes the REFER itself: it calls the person
// (sipp, through the PBX), reports NOTIFY 100 and 200, and the agent
// leaves the call.
func TestTransferByReferBaresip(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	target := startSipp(t, "udp", editedScenario(t, "uas.xml",
		"[last_CSeq:]\n      Contact:", "[last_CSeq:]\n      [last_Record-Route:]\n      Contact:")...)
	callee := startBaresip(t, tone(4*time.Second))
	pbx := startPBX(t, callee.addr, target.addr)
	res := place(t, e, Trunk{Address: "sip:" + pbx.Addr}, transferCall(5*time.Second))
	// The person's call goes on without us: baresip hangs it up when its
	// voice ends.
	target.wait(t)
	assertTransfer(t, res, switchboardv1.TransferTransferred, switchboardv1.TransferByRefer, 200)
	if res.HangupBy != HangupByTransfer || res.DisconnectionReason() != switchboardv1.ReasonCallTransfer {
		t.Errorf("hung up by %q, reason %q: want transfer, call_transfer", res.HangupBy, res.DisconnectionReason())
	}
	if !strings.Contains(callee.Output(), "Call established: sip:"+person) {
		t.Errorf("baresip did not reach the person:\n%s", callee.Output())
	}
	assertNotes(t, res, "Connecting you now.", "(transferring to "+person+" by REFER)", "(transferred to "+person+")")
}

// The final NOTIFY's status decides the outcome (refer.go's table).
func TestNotifyResult(t *testing.T) {
	for status, want := range map[int]switchboardv1.TransferResult{
		200: switchboardv1.TransferTransferred, 202: switchboardv1.TransferTransferred,
		486: switchboardv1.TransferBusy, 600: switchboardv1.TransferBusy,
		408: switchboardv1.TransferNoAnswer, 480: switchboardv1.TransferNoAnswer, 487: switchboardv1.TransferNoAnswer,
		603: switchboardv1.TransferDeclined,
		403: switchboardv1.TransferRefused, 404: switchboardv1.TransferRefused, 604: switchboardv1.TransferRefused,
		500: switchboardv1.TransferFailed, 503: switchboardv1.TransferFailed, 488: switchboardv1.TransferFailed,
	} {
		if got := notifyResult(status); got != want {
			t.Errorf("NOTIFY %d: %s, want %s", status, got, want)
		}
	}
}

// The transcript's note of each outcome.
func TestOutcomeNote(t *testing.T) {
	for _, tc := range []struct {
		out  telephony.TransferOutcome
		want string
	}{
		{telephony.TransferOutcome{To: person, Result: switchboardv1.TransferTransferred, SIPStatus: 200},
			"(transferred to " + person + ")"},
		{telephony.TransferOutcome{To: person, Result: switchboardv1.TransferBridged}, "(bridged to " + person + ")"},
		{telephony.TransferOutcome{To: person, Result: switchboardv1.TransferBusy, SIPStatus: 486, Detail: "x"},
			"(transfer to " + person + " failed: busy, 486)"},
		{telephony.TransferOutcome{To: person, Result: switchboardv1.TransferNoAnswer, Detail: "no final NOTIFY came"},
			"(transfer to " + person + " failed: no_answer, no final NOTIFY came)"},
		{telephony.TransferOutcome{To: person, Result: switchboardv1.TransferNotAllowed, Detail: "blocked"},
			"(transfer to " + person + " refused: not_allowed, blocked)"},
	} {
		if got := outcomeNote(tc.out); got != tc.want {
			t.Errorf("note %q, want %q", got, tc.want)
		}
	}
}

// A call that ended through a successful transfer reports the transfer's
// reason; a failed transfer, or a limit that cut a bridged call, does not.
func TestTransferDisconnectionReason(t *testing.T) {
	ok := &telephony.TransferOutcome{Result: switchboardv1.TransferTransferred}
	bridged := &telephony.TransferOutcome{Result: switchboardv1.TransferBridged}
	busy := &telephony.TransferOutcome{Result: switchboardv1.TransferBusy}
	for _, tc := range []struct {
		hangupBy string
		transfer *telephony.TransferOutcome
		want     string
	}{
		{HangupByTransfer, ok, switchboardv1.ReasonCallTransfer},
		{HangupByCallee, ok, switchboardv1.ReasonCallTransfer}, // their BYE crossed ours
		{HangupByTransfer, bridged, switchboardv1.ReasonTransferBridged},
		{HangupByCallee, bridged, switchboardv1.ReasonTransferBridged},
		{HangupByMaxDuration, bridged, "max_duration"},
		{HangupByAPI, bridged, telephony.APIHangup},
		{HangupByAgent, busy, "agent_hangup"},
		{HangupByCallee, busy, "user_hangup"},
		{HangupByCallee, nil, "user_hangup"},
	} {
		res := Result{Answered: true, HangupBy: tc.hangupBy, Transfer: tc.transfer}
		if got := res.DisconnectionReason(); got != tc.want {
			t.Errorf("hung up by %s after %+v: %q, want %q", tc.hangupBy, tc.transfer, got, tc.want)
		}
	}
}

// A transfer whose failure goes to a step the script does not have is
// refused before dialing (it would restart the script).
func TestPlaceRejectsUnknownTransferNext(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	_, err := e.Place(t.Context(), Trunk{Address: "sip:127.0.0.1:5060"}, CallSpec{To: "+14155550123",
		Script: []Step{{Transfer: &Transfer{To: person, Next: "nowhere"}}}})
	if err == nil || !strings.Contains(err.Error(), `"nowhere"`) {
		t.Errorf("Place: %v, want the unknown step refused", err)
	}
}
