package engine

import (
	"fmt"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/telephony"
)

func q850(cause int) []string { return []string{fmt.Sprintf("Q.850;cause=%d", cause)} }

func TestDispositionReasonCause(t *testing.T) {
	tests := []struct {
		cause int
		want  telephony.Disposition
	}{
		{17, telephony.Busy},
		{18, telephony.NoAnswer},
		{19, telephony.NoAnswer},
		{21, telephony.Rejected},
		{1, telephony.InvalidNumber},
		{28, telephony.InvalidNumber},
		{20, telephony.Unreachable},
		{27, telephony.Unreachable},
		{34, telephony.CarrierFailure},
		{38, telephony.CarrierFailure},
		{41, telephony.CarrierFailure},
		{42, telephony.CarrierFailure},
	}
	// Each cause wins over every kind of status, including one that maps to
	// another disposition, an unmapped one, none at all and a ring timeout.
	others := []Outcome{
		{StatusCode: 486},
		{StatusCode: 404},
		{StatusCode: 603},
		{StatusCode: 480},
		{StatusCode: 500},
		{StatusCode: 403},
		{StatusCode: 487, RingTimeout: true},
		{RingTimeout: true},
		{},
		{StatusCode: 503, TransportError: true},
	}
	for _, tt := range tests {
		for _, o := range others {
			o.ReasonHeaders = q850(tt.cause)
			t.Run(fmt.Sprintf("cause %d over %+v", tt.cause, o), func(t *testing.T) {
				if got := Disposition(o); got != tt.want {
					t.Errorf("Disposition(%+v) = %s, want %s", o, got, tt.want)
				}
			})
		}
	}
}

func TestDispositionStatus(t *testing.T) {
	tests := []struct {
		name string
		o    Outcome
		want telephony.Disposition
	}{
		{"200 OK", Outcome{StatusCode: 200}, telephony.Answered},
		{"202", Outcome{StatusCode: 202}, telephony.Answered},
		{"486 Busy Here", Outcome{StatusCode: 486}, telephony.Busy},
		{"600 Busy Everywhere", Outcome{StatusCode: 600}, telephony.Busy},
		{"603 Decline", Outcome{StatusCode: 603}, telephony.Rejected},
		{"480 Temporarily Unavailable", Outcome{StatusCode: 480}, telephony.NoAnswer},
		{"408 Request Timeout", Outcome{StatusCode: 408}, telephony.NoAnswer},
		{"487 after our CANCEL at ring timeout", Outcome{StatusCode: 487, RingTimeout: true}, telephony.NoAnswer},
		{"ring timeout, 487 never came", Outcome{RingTimeout: true}, telephony.NoAnswer},
		{"ring timeout, then transport failure", Outcome{RingTimeout: true, TransportError: true}, telephony.NoAnswer},
		{"ring timeout, stack made up a 408", Outcome{StatusCode: 408, RingTimeout: true, TransportError: true}, telephony.NoAnswer},
		{"ring timeout, only a 180", Outcome{StatusCode: 180, RingTimeout: true}, telephony.NoAnswer},
		{"486 crossed our CANCEL", Outcome{StatusCode: 486, RingTimeout: true}, telephony.Busy},
		{"603 crossed our CANCEL", Outcome{StatusCode: 603, RingTimeout: true}, telephony.Rejected},
		{"500 crossed our CANCEL", Outcome{StatusCode: 500, RingTimeout: true}, telephony.CarrierFailure},
		{"200 crossed our CANCEL", Outcome{StatusCode: 200, RingTimeout: true}, telephony.Answered},
		{"487 without our CANCEL", Outcome{StatusCode: 487}, telephony.CarrierFailure},
		{"404 Not Found", Outcome{StatusCode: 404}, telephony.InvalidNumber},
		{"484 Address Incomplete", Outcome{StatusCode: 484}, telephony.InvalidNumber},
		{"485 Ambiguous", Outcome{StatusCode: 485}, telephony.InvalidNumber},
		{"604 Does Not Exist Anywhere", Outcome{StatusCode: 604}, telephony.InvalidNumber},
		{"500", Outcome{StatusCode: 500}, telephony.CarrierFailure},
		{"502", Outcome{StatusCode: 502}, telephony.CarrierFailure},
		{"503", Outcome{StatusCode: 503}, telephony.CarrierFailure},
		{"504", Outcome{StatusCode: 504}, telephony.CarrierFailure},
		{"599", Outcome{StatusCode: 599}, telephony.CarrierFailure},
		{"302 not followed", Outcome{StatusCode: 302}, telephony.CarrierFailure},
		{"400", Outcome{StatusCode: 400}, telephony.CarrierFailure},
		{"401", Outcome{StatusCode: 401}, telephony.CarrierFailure},
		{"403", Outcome{StatusCode: 403}, telephony.CarrierFailure},
		{"407", Outcome{StatusCode: 407}, telephony.CarrierFailure},
		{"410", Outcome{StatusCode: 410}, telephony.CarrierFailure},
		{"488", Outcome{StatusCode: 488}, telephony.CarrierFailure},
		{"606", Outcome{StatusCode: 606}, telephony.CarrierFailure},
		{"699", Outcome{StatusCode: 699}, telephony.CarrierFailure},
		{"out of range 700", Outcome{StatusCode: 700}, telephony.CarrierFailure},
		{"no response", Outcome{}, telephony.Unreachable},
		{"only provisional 180", Outcome{StatusCode: 180}, telephony.Unreachable},
		{"only 100 Trying", Outcome{StatusCode: 100}, telephony.Unreachable},
		{"negative status", Outcome{StatusCode: -1}, telephony.Unreachable},
		{"transport failure", Outcome{TransportError: true}, telephony.Unreachable},
		{"transport failure, stack made up a 503", Outcome{StatusCode: 503, TransportError: true}, telephony.Unreachable},
		{"transport failure, stack made up a 408", Outcome{StatusCode: 408, TransportError: true}, telephony.Unreachable},
		{"transport failure with a 200", Outcome{StatusCode: 200, TransportError: true}, telephony.Unreachable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Disposition(tt.o); got != tt.want {
				t.Errorf("Disposition(%+v) = %s, want %s", tt.o, got, tt.want)
			}
		})
	}
}

func TestDispositionReasonFallsThrough(t *testing.T) {
	tests := []struct {
		name    string
		o       Outcome
		want    telephony.Disposition
		comment string
	}{
		{"unknown cause 16", Outcome{StatusCode: 486, ReasonHeaders: q850(16)}, telephony.Busy, "normal clearing"},
		{"unknown cause 31", Outcome{StatusCode: 404, ReasonHeaders: q850(31)}, telephony.InvalidNumber, "normal, unspecified"},
		{"unknown cause 22", Outcome{StatusCode: 410, ReasonHeaders: q850(22)}, telephony.CarrierFailure, "number changed"},
		{"unknown cause 127", Outcome{ReasonHeaders: q850(127)}, telephony.Unreachable, "interworking"},
		{"unknown cause 0", Outcome{StatusCode: 480, ReasonHeaders: q850(0)}, telephony.NoAnswer, ""},
		{"unknown cause with ring timeout", Outcome{StatusCode: 487, RingTimeout: true, ReasonHeaders: q850(16)}, telephony.NoAnswer, ""},
		{"SIP reason ignored", Outcome{StatusCode: 603, ReasonHeaders: []string{`SIP;cause=486;text="Busy Here"`}}, telephony.Rejected, ""},
		{"cause out of range", Outcome{StatusCode: 603, ReasonHeaders: q850(217)}, telephony.Rejected, ""},
		{"malformed cause", Outcome{StatusCode: 500, ReasonHeaders: []string{"Q.850;cause=busy"}}, telephony.CarrierFailure, ""},
		{"Q.850 without cause", Outcome{StatusCode: 486, ReasonHeaders: []string{`Q.850;text="User busy"`}}, telephony.Busy, ""},
		{"empty headers", Outcome{StatusCode: 486, ReasonHeaders: []string{"", " "}}, telephony.Busy, ""},
		{"header name included", Outcome{StatusCode: 486, ReasonHeaders: []string{"Reason: Q.850;cause=21"}}, telephony.Busy, "values only"},
		// A 2xx connected, whatever the Reason says.
		{"2xx wins over a cause", Outcome{StatusCode: 200, ReasonHeaders: q850(17)}, telephony.Answered, ""},
		{"2xx with elsewhere", Outcome{StatusCode: 200, ReasonHeaders: []string{`SIP;cause=200;text="Call completed elsewhere"`}}, telephony.Answered, ""},
		// A provisional status never connects; the cause still decides.
		{"cause with a 183", Outcome{StatusCode: 183, ReasonHeaders: q850(17)}, telephony.Busy, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Disposition(tt.o); got != tt.want {
				t.Errorf("Disposition(%+v) = %s, want %s (%s)", tt.o, got, tt.want, tt.comment)
			}
		})
	}
}

func TestParseReasonCause(t *testing.T) {
	tests := []struct {
		name    string
		headers []string
		cause   int
		ok      bool
	}{
		{"nil", nil, 0, false},
		{"empty", []string{""}, 0, false},
		{"plain", []string{`Q.850;cause=17;text="User busy"`}, 17, true},
		{"no text", []string{"Q.850;cause=16"}, 16, true},
		{"lower case protocol", []string{"q.850;cause=17"}, 17, true},
		{"upper case param", []string{"Q.850;CAUSE=17"}, 17, true},
		{"mixed case param", []string{"Q.850;Cause=21"}, 21, true},
		{"spaces everywhere", []string{`  Q.850 ; cause = 17 ; text = "User busy" `}, 17, true},
		{"tabs and folding", []string{"Q.850\t;\tcause=\t18\r\n "}, 18, true},
		{"text first", []string{`Q.850;text="User busy";cause=17`}, 17, true},
		{"extension params", []string{`Q.850;location=LN;cause=17;foo`}, 17, true},
		{"leading zeros", []string{"Q.850;cause=017"}, 17, true},
		{"zero", []string{"Q.850;cause=0"}, 0, true},
		{"127", []string{"Q.850;cause=127"}, 127, true},
		{"SIP then Q.850 in one header", []string{`SIP;cause=200;text="Call completed elsewhere", Q.850;cause=26`}, 26, true},
		{"Q.850 then SIP in one header", []string{`Q.850;cause=19;text="No answer",SIP;cause=480`}, 19, true},
		{"SIP header then Q.850 header", []string{`SIP;cause=486;text="Busy Here"`, `Q.850;cause=17`}, 17, true},
		{"only SIP", []string{`SIP;cause=486;text="Busy Here"`}, 0, false},
		{"other protocol", []string{`preemption;cause=1`}, 0, false},
		{"Q.8500 is not Q.850", []string{`Q.8500;cause=17`}, 0, false},
		{"first Q.850 wins", []string{"Q.850;cause=17", "Q.850;cause=21"}, 17, true},
		{"comma in quoted text", []string{`Q.850;cause=16;text="Hello, Q.850;cause=17", Q.850;cause=21`}, 16, true},
		{"semicolon in quoted text", []string{`SIP;text="a;cause=1";cause=200, Q.850;text="x;cause=1";cause=18`}, 18, true},
		{"escaped quote in text", []string{`Q.850;text="say \"hi\", Q.850;cause=1";cause=34`}, 34, true},
		{"unterminated quote keeps the cause", []string{`Q.850;cause=41;text="Temporary failure`}, 41, true},
		{"unterminated quote swallows the rest", []string{`SIP;text="oops, Q.850;cause=17`}, 0, false},
		// Malformed Q.850 reasons are skipped, so a later good one counts.
		{"malformed then good", []string{"Q.850;cause=", "Q.850;cause=17"}, 17, true},
		{"missing value", []string{"Q.850;cause"}, 0, false},
		{"empty value", []string{"Q.850;cause="}, 0, false},
		{"non-numeric", []string{"Q.850;cause=busy"}, 0, false},
		{"sign", []string{"Q.850;cause=+17"}, 0, false},
		{"negative", []string{"Q.850;cause=-17"}, 0, false},
		{"decimal", []string{"Q.850;cause=17.0"}, 0, false},
		{"hex", []string{"Q.850;cause=0x11"}, 0, false},
		{"quoted cause", []string{`Q.850;cause="17"`}, 0, false},
		{"space inside number", []string{"Q.850;cause=1 7"}, 0, false},
		{"out of range", []string{"Q.850;cause=128"}, 0, false},
		{"overflow", []string{"Q.850;cause=99999999999999999999999"}, 0, false},
		{"repeated cause", []string{"Q.850;cause=17;cause=21"}, 0, false},
		{"repeated cause, one bad", []string{"Q.850;cause=17;cause=x"}, 0, false},
		{"no cause", []string{`Q.850;text="User busy"`}, 0, false},
		{"protocol missing", []string{";cause=17"}, 0, false},
		{"protocol only", []string{"Q.850"}, 0, false},
		{"garbage", []string{`;;,,"=;`}, 0, false},
		{"causes param is not cause", []string{"Q.850;causes=17"}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cause, ok := ParseReasonCause(tt.headers)
			if cause != tt.cause || ok != tt.ok {
				t.Errorf("ParseReasonCause(%q) = %d, %v; want %d, %v", tt.headers, cause, ok, tt.cause, tt.ok)
			}
		})
	}
}

func TestSplitUnquoted(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", []string{""}},
		{"a", []string{"a"}},
		{"a,b", []string{"a", "b"}},
		{"a,", []string{"a", ""}},
		{`"a,b",c`, []string{`"a,b"`, "c"}},
		{`"a\",b",c`, []string{`"a\",b"`, "c"}},
		{`a\,b`, []string{`a\`, "b"}}, // backslash escapes only inside quotes
		{`"a,b`, []string{`"a,b`}},
	}
	for _, tt := range tests {
		got := splitUnquoted(tt.in, ',')
		if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tt.want) {
			t.Errorf("splitUnquoted(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestDisconnectionReason(t *testing.T) {
	tests := []struct {
		o    Outcome
		want string
	}{
		{Outcome{StatusCode: 200}, ""},
		{Outcome{StatusCode: 486}, "dial_busy"},
		{Outcome{StatusCode: 487, RingTimeout: true}, "no_answer"},
		{Outcome{StatusCode: 603}, "dial_rejected"},
		{Outcome{TransportError: true}, "dial_failed"},
		{Outcome{StatusCode: 404}, "invalid_destination"},
		{Outcome{StatusCode: 503}, "carrier_error"},
		{Outcome{StatusCode: 503, ReasonHeaders: q850(17)}, "dial_busy"},
	}
	for _, tt := range tests {
		if got := DisconnectionReason(tt.o); got != tt.want {
			t.Errorf("DisconnectionReason(%+v) = %q, want %q", tt.o, got, tt.want)
		}
	}
}

// A call's disposition and reason: who hung up decides for an answered
// call, the INVITE's outcome for one that never was.
func TestResultDispositionAndReason(t *testing.T) {
	for _, tt := range []struct {
		name   string
		res    Result
		want   telephony.Disposition
		reason string
	}{
		{"callee hung up", Result{Answered: true, HangupBy: HangupByCallee, Outcome: Outcome{StatusCode: 200}},
			telephony.Answered, "user_hangup"},
		{"machine", Result{Answered: true, Machine: true, HangupBy: HangupByVoicemail, Outcome: Outcome{StatusCode: 200}},
			telephony.AnsweringMachine, "voicemail"},
		{"stopped while answered", Result{Answered: true, HangupBy: HangupByAPI, Outcome: Outcome{StatusCode: 200}},
			telephony.Answered, telephony.APIHangup},
		{"busy", Result{Outcome: Outcome{StatusCode: 486}}, telephony.Busy, "dial_busy"},
		{"stopped while ringing", Result{Outcome: Outcome{StatusCode: 487, Stopped: true}},
			telephony.NoAnswer, telephony.APIHangup},
	} {
		if got, reason := tt.res.Disposition(), tt.res.DisconnectionReason(); got != tt.want || reason != tt.reason {
			t.Errorf("%s: %s, %q; want %s, %q", tt.name, got, reason, tt.want, tt.reason)
		}
	}
}
