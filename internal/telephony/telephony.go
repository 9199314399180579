// Package telephony defines how Switchboard places calls on a carrier. The
// call reconciler drives every call through a Dialer: the simulated carrier
// (package sim) or SIP trunks (package sip), chosen per call by Router.
package telephony

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// Disposition is what happened on the wire: the Call's own type, so that
// the carriers and the Call's status speak one enum.
type Disposition = switchboardv1.Disposition

// The dispositions, under the short names the carriers use.
const (
	Answered         = switchboardv1.DispositionAnswered
	AnsweringMachine = switchboardv1.DispositionAnsweringMachine
	NoAnswer         = switchboardv1.DispositionNoAnswer
	Busy             = switchboardv1.DispositionBusy
	Rejected         = switchboardv1.DispositionRejected
	Unreachable      = switchboardv1.DispositionUnreachable
	InvalidNumber    = switchboardv1.DispositionInvalidNumber
	CarrierFailure   = switchboardv1.DispositionCarrierFailure
)

// Field is one value the agent's post-call analysis extracts.
type Field struct {
	Name        string
	Type        string // string, number or boolean
	Description string
}

// Request is one call to place.
type Request struct {
	CallID string
	// Namespace and CallName name the Call resource.
	Namespace, CallName string
	From                string // E.164
	To                  string // E.164
	Variables           map[string]any
	Greeting            string
	Fields              []Field
	// Trunk is the SIPTrunk (in Namespace) the call goes out on; empty for
	// the simulated carrier.
	Trunk string
	// Agent is the agent placing the call (its script); nil when it was
	// deleted mid-call.
	Agent *switchboardv1.Agent
	// Order places the call in its trunk's queue: the Call's creation time.
	Order time.Time
	// AnsweredAt is when the call was answered, as the Call's status
	// recorded it; nil when it was not (yet).
	AnsweredAt *time.Time
	// StopAt is when the call was asked to stop (POST .../stop): it ends
	// then, as api_hangup, unless it ended before. Nil: not asked.
	StopAt *time.Time
	// SIPHeaders are the call's custom X- headers (Call spec.sipHeaders),
	// which add to the agent's and win on a clash.
	SIPHeaders map[string]string
}

// Phase is where a placed call is.
type Phase string

const (
	Ringing   Phase = "ringing"
	Connected Phase = "connected"
	Ended     Phase = "ended"
)

// Progress is what the carrier knows of a call as of now.
type Progress struct {
	Phase Phase
	// AnsweredAt is set once the call connected.
	AnsweredAt *time.Time
	// The rest is set once Phase is Ended.
	EndedAt             *time.Time
	Disposition         Disposition
	DisconnectionReason string
	// Duration is the connected time (zero when the call never connected).
	Duration time.Duration
	// Detail says in words why an ended call failed when its reason alone
	// does not (a bot's stream that failed: "the bot answered the upgrade
	// with HTTP 401"); empty otherwise. It goes in a Warning Event.
	Detail string
	// Transfer is the call's transfer to a person, when the agent made one
	// (the last, when it made several).
	Transfer *TransferOutcome
	// NextCheck is when the reconciler should ask again (Phase != Ended).
	NextCheck time.Duration
}

// Turn is one entry of the call's transcript: an agent's line, a callee's
// utterance or keypresses, a gather's decision, or a bot's mark.
type Turn struct {
	Speaker string // "agent" or "callee"
	Text    string
	// Field and Digits are set on a callee's turn that keyed Digits in
	// answer to a gather step for the agent's extracted field Field.
	Field, Digits string
	// Start and End place the turn in the call's recording, as offsets
	// from its start (answer); both zero when the carrier cannot say.
	Start, End time.Duration
	// Confidence is the recognizer's confidence in Text (0 to 1) on a
	// callee's recognized utterance; zero on every other turn.
	Confidence float64
	// Recognizer names what turned the callee's speech into Text, as the
	// transcript shows it ("embedded", "server", or "embedded (server
	// failed: timeout)" when the organization's server fell back); empty
	// on agent lines and keypresses.
	Recognizer string
	// Branch is what a gather step decided on this turn: a choice's value,
	// "noMatch" or "noInput"; Next is the id of the step it went to
	// (empty: the next step in order).
	Branch, Next string
	// Mark is the name of a bot's mark (agents that stream to a bot).
	Mark string
	// Words are a recognized utterance's words placed in the recording,
	// where its recognizer gives them; nil otherwise.
	Words []Word
	// Tool is set on a conversation's tool call: its invocation, or (with
	// Answered) its result. Such a turn is a Note.
	Tool *ToolCall
	// Note marks a turn whose Text is Switchboard's account of what
	// happened ("(no answer)", "(not recognized: timeout)"), not words
	// anyone said: nothing is ever read from it as an answer.
	Note bool
}

// ToolCall is a conversation's call of a tool (Retell's
// tool_call_invocation and tool_call_result).
type ToolCall struct {
	ID, Name string
	// Arguments are the invocation's, as JSON.
	Arguments string
	// Answered marks the result: Result is what the tool answered, and
	// Successful whether it succeeded (nil: not reported).
	Answered   bool
	Result     string
	Successful *bool
}

// Branches of a gather step that took no answer (Turn.Branch): nothing
// came in time, or what came was no choice and no value of the step's
// type.
const (
	BranchNoInput = "noInput"
	BranchNoMatch = "noMatch"
)

// Word is one recognized word and where it was said: offsets from the
// start of the utterance's audio as a recognizer gives them, from the
// start of the recording in a Turn.
type Word struct {
	Text       string
	Start, End time.Duration
}

// Dialer places calls on a carrier.
type Dialer interface {
	// Admit is the carrier's synchronous acceptance of a new call (its
	// "create call" request). It returns quickly and never waits for an
	// answer. A *DispatchError means the call cannot go out now.
	Admit(ctx context.Context, req Request) error

	// Dial places the call; placedAt is when it went out (status.startedAt).
	// It is called again with the same placedAt after a restart, so it must
	// be idempotent per CallID.
	Dial(ctx context.Context, req Request, placedAt time.Time) error

	// Progress reports the call placed at placedAt as of now.
	Progress(ctx context.Context, req Request, placedAt, now time.Time) (Progress, error)

	// Recording returns the WAV audio of an ended, connected call.
	Recording(ctx context.Context, req Request, p Progress) (io.ReadCloser, error)

	// Transcript returns what was said on an ended, connected call.
	Transcript(ctx context.Context, req Request, p Progress) ([]Turn, error)

	// Release tells the carrier the call is fully processed: what it kept
	// for Recording and Transcript can go.
	Release(ctx context.Context, req Request)

	// Hangup ends a placed call now, at req.StopAt: a ringing call is
	// cancelled, an answered one hung up. Progress then reports it ended
	// with DisconnectionReason APIHangup and the disposition observed.
	// It is idempotent, and a no-op on a call that has ended.
	Hangup(ctx context.Context, req Request) error
}

// APIHangup is the disconnection reason of a call stopped through the API
// (or spec.stop).
const APIHangup = "api_hangup"

// WorkerLost is the disconnection reason of a call whose worker (the
// replica carrying it) died: its Lease lapsed while the call was live.
const WorkerLost = "worker_lost"

// ErrNoRecording is Recording's error for a connected call whose audio was
// lost (an operator restart cut it off before it was written).
var ErrNoRecording = errors.New("no recording of this call")

// WaitError is Dial's answer when the call cannot go out yet (its trunk is
// at capacity or paced, or its script is being prepared): the call stays
// queued and is dialed again later.
type WaitError struct {
	Reason string
	// RetryAfter is when to try again at the latest; the carrier may ask
	// for the call sooner (Router.Wake).
	RetryAfter time.Duration
	// Preparing: the call has its place and waits for its audio
	// (text-to-speech), not for capacity.
	Preparing bool
}

func (e *WaitError) Error() string { return "waiting: " + e.Reason }

// AsWaitError returns the WaitError in err's chain, if any.
func AsWaitError(err error) (*WaitError, bool) {
	var we *WaitError
	ok := errors.As(err, &we)
	return we, ok
}

// Dispatch error codes, as the REST API reports them. Both are transient:
// retrying the request is safe.
const (
	CodeDispatchError  = "dispatch_error"
	CodeDispatchFailed = "dispatch_failed"
)

// DispatchError is a failure to hand a call to the carrier.
type DispatchError struct {
	Code   string // CodeDispatchError or CodeDispatchFailed
	Reason string
}

func (e *DispatchError) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Reason) }

// AsDispatchError returns the DispatchError in err's chain, if any.
func AsDispatchError(err error) (*DispatchError, bool) {
	var de *DispatchError
	ok := errors.As(err, &de)
	return de, ok
}
