// Package engine places one outbound SIP call end to end: the INVITE and
// its dialog (signalling), RTP and the recording (media), the agent's
// script with DTMF gathers and answering-machine detection, and OPTIONS
// probes of trunks. Package sip drives it for the call reconciler.
//
// Signalling, media and the script runner stay one package: the runner
// plays and listens through the call's media frame by frame, and the media
// answers for the dialog's lifetime, so splitting them would export their
// internals for no reader's benefit.
//
// # Dispositions
//
// Disposition maps how an outbound INVITE ended to the REST API's
// disposition. The Q.850 cause of a Reason header (RFC 3326), when it is one
// of these, wins over the SIP status:
//
//	Q.850 cause      disposition
//	17               busy
//	18, 19           no_answer
//	21               rejected
//	1, 28            invalid_number
//	20, 27           unreachable
//	34, 38, 41, 42   carrier_failure
//	any other        (the SIP status decides)
//
// Otherwise the final SIP status decides:
//
//	SIP final status                            disposition
//	2xx                                         answered
//	486, 600                                    busy
//	603                                         rejected
//	480, 408                                    no_answer
//	487 after our CANCEL at the ring timeout    no_answer
//	404, 484, 485, 604                          invalid_number
//	5xx and any other failure                   carrier_failure
//	no final response, or a transport failure   unreachable
//
// A 2xx is answered whatever its Reason header says; the answering-machine
// detector (package amd), not this table, turns it into answering_machine.
// A final response other than 487 that crosses our CANCEL is what ended the
// call, so it decides; a ring timeout with no final response at all (the
// 487 never came) is no_answer.
package engine

import (
	"strings"

	"github.com/switchboard-dev/switchboard/internal/conversation"
	"github.com/switchboard-dev/switchboard/internal/telephony"
)

// Outcome is what the wire said about an outbound INVITE that ended.
type Outcome struct {
	// StatusCode is the final response to the INVITE; 0 when none arrived.
	// Provisional (1xx) codes count as no final response.
	StatusCode int
	// ReasonHeaders are the values (without the "Reason:" name) of the
	// Reason headers of that final response, one string per header line.
	ReasonHeaders []string
	// RingTimeout is set when we sent CANCEL because the ring timeout
	// expired.
	RingTimeout bool
	// Stopped is set when we sent CANCEL (or gave up on the INVITE)
	// because the call was stopped through the API.
	Stopped bool
	// TransportError is set when no final response came from the far end
	// because the INVITE could not be sent, the connection failed or the
	// transaction timed out. StatusCode is then ignored: a SIP stack's
	// locally generated 408 or 503 (RFC 3261 §8.1.3.1) is not what the
	// far end said.
	TransportError bool
}

// causes maps the Q.850 causes that decide on their own.
var causes = map[int]telephony.Disposition{
	1:  telephony.InvalidNumber,  // unallocated (unassigned) number
	17: telephony.Busy,           // user busy
	18: telephony.NoAnswer,       // no user responding
	19: telephony.NoAnswer,       // no answer from user (user alerted)
	20: telephony.Unreachable,    // subscriber absent
	21: telephony.Rejected,       // call rejected
	27: telephony.Unreachable,    // destination out of order
	28: telephony.InvalidNumber,  // invalid number format
	34: telephony.CarrierFailure, // no circuit/channel available
	38: telephony.CarrierFailure, // network out of order
	41: telephony.CarrierFailure, // temporary failure
	42: telephony.CarrierFailure, // switching equipment congestion
}

// statuses maps the final failure statuses that are not carrier_failure.
var statuses = map[int]telephony.Disposition{
	404: telephony.InvalidNumber, // Not Found
	408: telephony.NoAnswer,      // Request Timeout
	480: telephony.NoAnswer,      // Temporarily Unavailable
	484: telephony.InvalidNumber, // Address Incomplete
	485: telephony.InvalidNumber, // Ambiguous
	486: telephony.Busy,          // Busy Here
	600: telephony.Busy,          // Busy Everywhere
	603: telephony.Rejected,      // Decline
	604: telephony.InvalidNumber, // Does Not Exist Anywhere
}

// requestTerminated is the final response to an INVITE we cancelled.
const requestTerminated = 487

// Disposition maps an ended INVITE to the API's disposition, following the
// tables of the package documentation. It never returns AnsweringMachine.
func Disposition(o Outcome) telephony.Disposition {
	status := o.StatusCode
	if o.TransportError || status < 200 {
		status = 0 // nothing final came from the far end
	}
	if status >= 200 && status < 300 {
		return telephony.Answered
	}
	if cause, ok := ParseReasonCause(o.ReasonHeaders); ok {
		if d, ok := causes[cause]; ok {
			return d
		}
	}
	if (o.RingTimeout || o.Stopped) && (status == 0 || status == requestTerminated) {
		return telephony.NoAnswer
	}
	if status == 0 {
		return telephony.Unreachable
	}
	if d, ok := statuses[status]; ok {
		return d
	}
	return telephony.CarrierFailure
}

// DisconnectionReason is the REST API's disconnection_reason of an outcome
// that never connected, and "" for an answered one, whose reason depends on
// who hangs up and on answering-machine detection.
func DisconnectionReason(o Outcome) string {
	d := Disposition(o)
	if o.Stopped && d == telephony.NoAnswer {
		return telephony.APIHangup
	}
	return d.UnconnectedReason()
}

// hangupReasons are the disconnection reasons of answered calls, by who
// hung up.
var hangupReasons = map[string]string{
	HangupByCallee:      "user_hangup",
	HangupByAgent:       "agent_hangup",
	HangupByMaxDuration: "max_duration",
	HangupByVoicemail:   "voicemail",
	HangupByAPI:         telephony.APIHangup,
	// A streamed call's bot failed: the reasons are their own names.
	HangupByStreamConnectFailed: HangupByStreamConnectFailed,
	HangupByStreamDisconnected:  HangupByStreamDisconnected,
	// A conversation's engine failed, or the callee stayed silent: the
	// reasons are their own (Retell's names).
	conversation.ReasonLLM:              conversation.ReasonLLM,
	conversation.ReasonWebSocketOpen:    conversation.ReasonWebSocketOpen,
	conversation.ReasonWebSocketLost:    conversation.ReasonWebSocketLost,
	conversation.ReasonWebSocketRuntime: conversation.ReasonWebSocketRuntime,
	conversation.ReasonWebSocketCorrupt: conversation.ReasonWebSocketCorrupt,
	conversation.ReasonInactivity:       conversation.ReasonInactivity,
	// The far end asked for media where the operator's policy sends none.
	HangupByAddressRefused: HangupByAddressRefused,
	// The trunk requires SRTP and the callee answered without it.
	HangupBySRTPRequired: HangupBySRTPRequired,
}

// Disposition is the REST API's disposition of the call: AnsweringMachine
// when the detector said MACHINE, Answered for any other answered call,
// else what the INVITE's outcome says.
func (r Result) Disposition() telephony.Disposition {
	switch {
	case r.Machine:
		return telephony.AnsweringMachine
	case r.Answered:
		return telephony.Answered
	}
	return Disposition(r.Outcome)
}

// DisconnectionReason is the REST API's disconnection_reason of the call:
// the transfer's (call_transfer, transfer_bridged) when the call ended
// through a successful transfer, else who hung up an answered call, else
// what the INVITE's outcome says.
func (r Result) DisconnectionReason() string {
	if r.endedByTransfer() {
		return r.Transfer.DisconnectionReason()
	}
	if r.Answered {
		return hangupReasons[r.HangupBy]
	}
	return DisconnectionReason(r.Outcome)
}

// endedByTransfer reports whether the call ended through a successful
// transfer: we left it (HangupByTransfer), or, once it succeeded, the
// callee hung up (after the final NOTIFY, before our BYE; or a bridged
// call's callee) or the agent did (a conversation ending after its
// transfer). A call cut by its limits, the API or the address guard ended
// for those reasons instead.
func (r Result) endedByTransfer() bool {
	if !r.Answered || r.Transfer == nil || !r.Transfer.Result.Succeeded() {
		return false
	}
	switch r.HangupBy {
	case HangupByTransfer, HangupByCallee, HangupByAgent:
		return true
	}
	return false
}

// ParseReasonCause returns the first Q.850 cause found in Reason header
// values (RFC 3326) such as
//
//	Q.850;cause=17;text="User busy"
//
// A value may hold several comma-separated reasons, and headers several
// values. Protocol and parameter names are case-insensitive and may be
// surrounded by spaces; commas and semicolons inside quoted text are text.
// Other protocols (SIP;cause=200) are ignored, and so is a Q.850 reason
// without a cause, with a repeated cause, or whose cause is not a number
// from 0 to 127.
func ParseReasonCause(headers []string) (cause int, ok bool) {
	for _, h := range headers {
		for _, reason := range splitUnquoted(h, ',') {
			if c, ok := q850Cause(reason); ok {
				return c, true
			}
		}
	}
	return 0, false
}

// q850Cause parses one reason-value: protocol *(";" param).
func q850Cause(reason string) (int, bool) {
	parts := splitUnquoted(reason, ';')
	if !strings.EqualFold(strings.TrimSpace(parts[0]), "Q.850") {
		return 0, false
	}
	cause, found := 0, false
	for _, p := range parts[1:] {
		name, value, _ := strings.Cut(p, "=")
		if !strings.EqualFold(strings.TrimSpace(name), "cause") {
			continue
		}
		c, ok := parseCause(strings.TrimSpace(value))
		if !ok || found {
			return 0, false
		}
		cause, found = c, true
	}
	return cause, found
}

// parseCause parses 1*DIGIT in the Q.850 range 0 to 127.
func parseCause(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
		if n > 127 {
			return 0, false
		}
	}
	return n, true
}

// splitUnquoted splits s at every sep outside a quoted string, where a
// backslash escapes the next character. It always returns at least one
// part.
func splitUnquoted(s string, sep byte) []string {
	var parts []string
	start, quoted, escaped := 0, false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case escaped:
			escaped = false
		case quoted && c == '\\':
			escaped = true
		case c == '"':
			quoted = !quoted
		case !quoted && c == sep:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}
