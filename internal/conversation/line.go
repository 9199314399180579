package conversation

import (
	"context"
	"time"
)

// Line is a call as the loop sees it: what the callee does, and the
// agent's voice. The SIP engine's media is one; the simulated carrier's
// callee is another.
type Line interface {
	// Events delivers what happened on the line, in order: the callee's
	// speech and keys, and the agent's speech starting and ending. It is
	// closed when the line is (the callee hung up).
	Events() <-chan LineEvent
	// Say queues text (a sentence or more) to be spoken after what is
	// already queued, tagged with tag; PlayStarted and PlayEnded events
	// carry the tag. It does not wait for the speech; false when the
	// queue is full (the loop's answers are bounded, so it is not) or the
	// line is gone.
	Say(text string, tag int) bool
	// Cut stops the speech now playing and drops what is queued: a
	// barge-in. The cut speech's PlayEnded says Cut.
	Cut()
	// Press keys digits to the far end (RFC 4733 on SIP).
	Press(ctx context.Context, digits string) error
	// Transfer hands the callee to a person and blocks until the transfer
	// connected or failed (cold by REFER: the far end's final NOTIFY; a
	// bridge: until the bridged call ended). The agent's speech is over
	// when it is called.
	Transfer(ctx context.Context, req TransferRequest) TransferResult
}

// TransferRequest is the agent's ask to hand the callee to a person.
type TransferRequest struct {
	// Number is the person's number (the tool's chosen destination, or a
	// Retell server's transfer_number).
	Number string
	// Summary is the model's summary of the call so far, for a warm
	// transfer's whisper ({{summary}}); may be empty.
	Summary string
}

// TransferResult is how a transfer went.
type TransferResult struct {
	// Connected: the callee reached the person; the agent's part of the
	// call is over, and Reason is the call's disconnection reason
	// (call_transfer, transfer_bridged).
	Connected bool
	Reason    string
	// Result is the outcome's name (transferred, bridged, busy,
	// no_answer, declined, refused, failed, not_allowed), and Detail says
	// why it failed: what the model is told when the callee is back.
	Result, Detail string
}

// EventKind is what a LineEvent reports.
type EventKind int

const (
	// SpeechStarted: the callee started speaking.
	SpeechStarted EventKind = iota + 1
	// Utterance: the callee's speech ended and was recognized (Text may
	// be empty: a cough, noise).
	Utterance
	// Key: the callee pressed Text (one key).
	Key
	// PlayStarted and PlayEnded: the agent's speech tagged Tag started
	// and ended (Cut: by a barge-in).
	PlayStarted
	PlayEnded
)

// LineEvent is one thing that happened on the line.
type LineEvent struct {
	Kind EventKind
	// Text is the utterance recognized, the key pressed, or the sentence
	// played.
	Text string
	// Tag is the speech's (PlayStarted, PlayEnded).
	Tag int
	// Cut: the speech was cut short (PlayEnded); the utterance reached
	// the length bound and the callee is still speaking (Utterance).
	Cut bool
	// At is when it happened; for an Utterance, when the callee's voice
	// ended (before the silence that ended the utterance), so that the
	// endpointing delay counts from there.
	At time.Time
	// Recognized is when the utterance's text was known (Utterance).
	Recognized time.Time
	// Confidence and Recognizer are the utterance's.
	Confidence float64
	Recognizer string
	// Start and End place an utterance on the call's timeline, as offsets
	// from the answer.
	Start, End time.Duration
}
