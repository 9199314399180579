// Package sim is Switchboard's simulated carrier: a sandbox that behaves like
// a carrier's test credentials, so calls can be exercised end to end without
// a SIP trunk.
//
// # Number plan
//
// The outcome is chosen by the last four digits of the destination (To):
//
//	0001  ended, busy
//	0002  ended, no_answer
//	0003  ended, answering_machine
//	0004  ended, rejected
//	0005  ended, unreachable
//	0006  ended, invalid_number
//	0007  ended, carrier_failure
//	0008  Admit and Dial fail with dispatch_error
//	0009  Admit and Dial fail with dispatch_failed
//	other ended, answered (0010 to 0012: see Scripted agents and Conversations)
//
// # Timeline
//
// A call rings for Timings.Ring. Non-connected outcomes end when the ringing
// ends. An answered call then talks for Timings.Talk; an answering machine
// records a message for Timings.Voicemail. The simulator keeps no state:
// Progress is a pure function of the destination, the timings, placedAt and
// now, so a restarted operator picks a call up exactly where it was.
//
// # What the simulated callee says
//
// On an answered call of an agent without a script (see Scripted agents
// for one with a script) the agent greets the callee with the agent's greeting
// (or "Hello, this is an automated call."), then asks for each extracted-data
// field in turn, using the field's description or else its name. The callee
// answers in the varied ways people do, the wording chosen by the last two
// digits of To modulo 4 (Wording):
//
//	     number field                 boolean field           string field
//	0    Four.                        Yes.                    My <field name> is <value>.
//	1    There will be four of us.    Yeah, sure.             It's <value>.
//	2    Um, four people.             That's right.           Um, <value>.
//	3    4.                           Yep, that's correct.    <value>.
//
// where value is the call variable of the same name when it is a string,
// and "simulated" otherwise. The agent then says goodbye. The simulator
// stays media-free: no speech is synthesized or recognized, and its
// transcript goes through the same analysis as a real call's.
//
// # Scripted agents
//
// An agent with a script has it run as the SIP engine runs it (script.go):
// its greeting when set, then each step in order or where a gather's
// answer leads (a choice's next, the gather's next, noInput's or
// noMatch's next once their retries are used up), {{name}} placeholders
// filled; a play step is the turn "(plays <configmap>/<key>)"; the call
// hangs up at a hangup step or after the last one, with no goodbye of the
// simulator's. Each gather's prompt is followed by the simulated callee's
// answer, which goes through the SIP engine's own reading of answers
// (understand.Gather), so the turns carry the same Field, Digits, Branch
// and Next, and a re-prompt (noInput's or noMatch's prompt, else the
// gather's) is said as its retries allow. The callee speaks when the
// gather listens to speech (Recognizer "simulated", confidence 1) and
// keys otherwise:
//
//	gather              spoken answer (wording 0 / 1 / 2 / 3)                               keyed
//	choices             the first choice's first phrase (else its value):                    the first choice's digits
//	                    "<Phrase>." / "Um, <phrase>." / "<Phrase>, please." / "I'd say <phrase>."
//	number              the number field's answers above (four)                              4
//	yes_no              the boolean field's answers above (yes)                              1
//	digits              "One two three four." / "It's one two three four." / ... / "1234."   1234
//	date                "Tomorrow." / "Tomorrow, please." / "Um, tomorrow." / "How about tomorrow?"
//	time                "Seven pm." / "At seven in the evening." / "Um, seven pm." / "19:00."
//	text                the string field's answers above, for the gather's field
//	keyed digits only                                                                        number field 4, boolean 1, else 1234
//
// Keyed digits are left-padded with zeros to numDigits, and the finish key
// ends them unless numDigits or a choice's digits completed them. Keys
// cannot give a date, a time or text, nor a choice without digits: the
// callee keys 1, which the gather takes as no match. Should a wording of a
// choice also name another choice, the bare phrase is said. Dates are read
// from the moment the call was answered, in the callee's time zone.
//
// The callee's answers to gathers also follow these endings of To (any
// other number answers every gather at once):
//
//	0010  silent at every gather: noInput each time ("(no answer)")
//	0011  nonsense the first time each gather asks ("Purple monkey
//	      dishwasher.", or the key *), noMatch, then a valid answer
//	0012  nonsense at every attempt: noMatch each time
//
// A text capture takes any words, nonsense included. These numbers are
// answered calls like any other; an agent without a script is not affected.
// A script that goes round (a branch back that the callee's answers take
// every time) is cut after MaxScriptSteps steps and the call ends as a
// real one does at maxDurationSeconds, with disconnection_reason
// max_duration.
//
// On an answering machine the machine says "You have reached the voicemail
// of <To>. Please leave a message after the tone." and the agent leaves a
// short message; no field is answered.
//
// The recording is a 16-bit mono 8 kHz WAV as long as the connected time:
// each turn of the transcript has an equal slot of it and is a tone of its
// speaker's pitch for the first four fifths of the slot, and the
// transcript gives each turn those offsets (a conversation's turns keep
// their real offsets, see Conversations).
//
// # Conversations
//
// An agent with spec.conversation, on a carrier with conversations
// enabled (EnableConversations), talks to its language model as on a SIP
// trunk: the conversation loop (package conversation) runs from the
// answer on a simulated line, and the call ends when it does (see
// conversations for the reasons). The agent's speech plays in 40 ms a
// word (150 ms at least); the simulated callee speaks once the agent has
// been silent for 300 ms after saying something (or after 1 s at the
// start, when the agent waits for it to speak first: "Hello?"), its
// utterance lasting as long by the same measure (recognizer "simulated",
// confidence 1). It answers the agent's words since its last line:
//
//	a field asked     the field whose keywords they say most (its name's and description's
//	                  words of three letters or more, common words such as "what" or "your"
//	                  aside): the field's answer above (number four, boolean yes, string
//	                  the call variable of the same name), in the call's wording
//	yes/no question   the last sentence ending in "?" starts (after "and", "so" and such)
//	                  with is, are, do, does, did, can, could, would, will, should, have...:
//	                  the boolean answer (yes)
//	anything else     "Okay." / "Alright." / "I see." / "Okay, thanks." (by wording)
//
// Once the agent says "goodbye" or "bye" the callee says nothing more;
// after six lines without the agent ending the call it says "Thanks,
// that's all. Goodbye." and hangs up (user_hangup). The endings of To
// apply as for scripts: 0010 never speaks (the agent's reminders, then
// inactivity), 0011 first says "Purple monkey dishwasher." and then
// follows the plan, 0012 always says it. The transcript is the loop's,
// each turn at its real offset from the answer (an agent's line from its
// first sound to its last), and the recording renders those turns as
// tones at those offsets, as long as the call.
//
// # Transfers
//
// A script's pressDigits step is the note "pressed <digits>". A transfer
// (a script's transfer step, a conversation's transfer_call or
// transfer_number) asks the guard first (GuardTransfers): a refusal is
// not_allowed. Then the person's number decides by its last four digits
// (transfer.go): 0001 busy, 0002 no_answer, 0003 the trunk refuses REFER
// so a cold refer transfer bridges, 0004 declined (warm) or refused
// (cold), 0005 failed; any other answers and speaks a line (at its own
// pitch in the recording), transferred by refer, bridged otherwise. A
// connected transfer ends the call (call_transfer, transfer_bridged) with
// Progress.Transfer; a failed one gives the agent the call back.
package sim

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony"
)

// Timings sets how long each stage of a simulated call lasts.
type Timings struct {
	// Ring is the time from placement until the call is answered, or until a
	// non-connected outcome ends it.
	Ring time.Duration
	// Talk is the length of an answered conversation.
	Talk time.Duration
	// Voicemail is the length of the message left on an answering machine.
	Voicemail time.Duration
}

// DefaultTimings are short enough for demos and tests, long enough to watch
// a call go through ringing and connected.
func DefaultTimings() Timings {
	return Timings{Ring: time.Second, Talk: 4 * time.Second, Voicemail: 2 * time.Second}
}

// BindFlags binds the timings to fs, each defaulting to its value in t
// (DefaultTimings for the binary).
func (t *Timings) BindFlags(fs *flag.FlagSet) {
	fs.DurationVar(&t.Ring, "sim-ring", t.Ring, "Simulated carrier: ringing time.")
	fs.DurationVar(&t.Talk, "sim-talk", t.Talk, "Simulated carrier: length of an answered call.")
	fs.DurationVar(&t.Voicemail, "sim-voicemail", t.Voicemail, "Simulated carrier: length of a voicemail message.")
}

// Validate refuses negative timings (0 is a real value: at once).
func (t Timings) Validate() error {
	if t.Ring < 0 || t.Talk < 0 || t.Voicemail < 0 {
		return fmt.Errorf("--sim-ring, --sim-talk and --sim-voicemail must not be negative, got %s, %s and %s", t.Ring, t.Talk, t.Voicemail)
	}
	return nil
}

// Carrier is the simulated carrier. It is safe for concurrent use because it
// holds nothing but its timings.
type Carrier struct {
	t Timings
	// maxRecordingBytes bounds each call's recording (0: none).
	maxRecordingBytes int64
	// streams holds the live sessions of streamed calls (stream.go);
	// nil until EnableStreams.
	streams *streams
	// convs holds the live sessions of conversations (conversation.go);
	// nil until EnableConversations.
	convs *conversations
	// guard decides transfers (transfer.go); nil: the agent's
	// transferDestinations.
	guard func(req telephony.Request) telephony.TransferGuard
}

var _ telephony.Dialer = (*Carrier)(nil)

// New returns a simulated carrier; negative timings count as zero.
func New(t Timings) *Carrier {
	return &Carrier{t: Timings{
		Ring:      max(t.Ring, 0),
		Talk:      max(t.Talk, 0),
		Voicemail: max(t.Voicemail, 0),
	}}
}

// LimitRecordings bounds each call's recording, its header included, to
// maxBytes (0: no bound), as --recording-max-bytes does on a trunk,
// streamed calls' included. Call it before the first call, after
// EnableStreams.
func (c *Carrier) LimitRecordings(maxBytes int64) {
	c.maxRecordingBytes = maxBytes
	if c.streams != nil {
		c.streams.maxBytes = maxBytes
	}
}

// errNoDestination is permanent, unlike a DispatchError: retrying cannot help.
var errNoDestination = errors.New("sim: request has no To number")

// outcomes maps the last four digits of To to a disposition.
var outcomes = map[string]telephony.Disposition{
	"0001": telephony.Busy,
	"0002": telephony.NoAnswer,
	"0003": telephony.AnsweringMachine,
	"0004": telephony.Rejected,
	"0005": telephony.Unreachable,
	"0006": telephony.InvalidNumber,
	"0007": telephony.CarrierFailure,
}

// dispatchCodes maps the last four digits of To to a dispatch failure.
var dispatchCodes = map[string]string{
	"0008": telephony.CodeDispatchError,
	"0009": telephony.CodeDispatchFailed,
}

// connectedReasons are the disconnection reasons of the connected calls
// the simulated carrier plays: the agent hangs up, or leaves a voicemail.
var connectedReasons = map[telephony.Disposition]string{
	telephony.Answered:         "agent_hangup",
	telephony.AnsweringMachine: "voicemail",
}

func suffix(to string) string {
	if len(to) < 4 {
		return to
	}
	return to[len(to)-4:]
}

// check returns the error the carrier gives for req, if any.
func check(req telephony.Request) error {
	if req.To == "" {
		return errNoDestination
	}
	if code, ok := dispatchCodes[suffix(req.To)]; ok {
		return &telephony.DispatchError{
			Code:   code,
			Reason: fmt.Sprintf("simulated carrier refused the call to %s", req.To),
		}
	}
	return nil
}

// disposition is how the call to `to` ends.
func disposition(to string) telephony.Disposition {
	if d, ok := outcomes[suffix(to)]; ok {
		return d
	}
	return telephony.Answered
}

// Admit accepts every call except the dispatch-failure numbers.
func (c *Carrier) Admit(_ context.Context, req telephony.Request) error {
	return check(req)
}

// Dial has nothing to start, since Progress derives everything from
// placedAt; it only repeats Admit's verdict, which keeps it idempotent.
func (c *Carrier) Dial(_ context.Context, req telephony.Request, _ time.Time) error {
	return check(req)
}

// Release drops a streamed call's or a conversation's session; other
// calls keep no state.
func (c *Carrier) Release(_ context.Context, req telephony.Request) {
	if c.streams != nil {
		c.streams.release(req.CallID)
	}
	if c.convs != nil {
		c.convs.release(req.CallID)
	}
}

// Hangup has nothing to stop: Progress ends the call at req.StopAt.
func (c *Carrier) Hangup(context.Context, telephony.Request) error { return nil }

// Progress reports the call as of now, computed from placedAt alone (and
// req.StopAt, when it was stopped). Calls to the dispatch-failure numbers
// never went out, so they report Admit's error.
func (c *Carrier) Progress(ctx context.Context, req telephony.Request, placedAt, now time.Time) (telephony.Progress, error) {
	if err := check(req); err != nil {
		return telephony.Progress{}, err
	}
	if p, ok := c.streamProgress(req, placedAt, now); ok {
		return p, nil
	}
	if p, ok := c.conversationProgress(req, placedAt, now); ok {
		return p, nil
	}
	allow := c.allowTransfer(ctx, req)
	p := c.unstopped(req, placedAt, now, allow)
	if req.StopAt == nil || req.StopAt.After(now) {
		return p, nil
	}
	natural := c.unstopped(req, placedAt, *req.StopAt, allow)
	if natural.Phase == telephony.Ended {
		return natural, nil // it ended before it was stopped
	}
	return stopped(natural, *req.StopAt, disposition(req.To)), nil
}

// unstopped is the call as of now had nobody stopped it; allow is its
// transfer guard.
func (c *Carrier) unstopped(req telephony.Request, placedAt, now time.Time, allow func(string) error) telephony.Progress {
	d := disposition(req.To)
	answeredAt := placedAt.Add(c.t.Ring)
	if now.Before(answeredAt) {
		return telephony.Progress{Phase: telephony.Ringing, NextCheck: answeredAt.Sub(now)}
	}
	if !d.Connected() {
		return ended(d, answeredAt, 0, nil)
	}
	talk := c.talk(d)
	endedAt := answeredAt.Add(talk)
	if now.Before(endedAt) {
		return telephony.Progress{Phase: telephony.Connected, AnsweredAt: &answeredAt, NextCheck: endedAt.Sub(now)}
	}
	p := ended(d, endedAt, talk, &answeredAt)
	if d == telephony.Answered && scripted(req) {
		res := runScript(req, answeredAt, allow)
		if res.cut {
			p.DisconnectionReason = maxDuration
		}
		scriptTransfer(&p, res, answeredAt)
	}
	return p
}

// scriptTransfer puts the script's last transfer in p, timed by where its
// turns are in the recording: a connected one ends the call with its
// reason, a bridged one's second leg lasting to the call's end.
func scriptTransfer(p *telephony.Progress, res scriptResult, answeredAt time.Time) {
	if res.transfer == nil {
		return
	}
	out := *res.transfer
	placed := place(res.turns, recordingLength(*p))
	out.RequestedAt = answeredAt.Add(placed[res.transferAt].Start)
	if out.Result.Succeeded() {
		out.ConnectedAt = answeredAt.Add(placed[max(res.personAt, res.transferAt)].Start)
		if out.Result == switchboardv1.TransferBridged {
			out.SecondLeg = p.EndedAt.Sub(out.ConnectedAt)
		}
		p.DisconnectionReason = out.DisconnectionReason()
	}
	p.Transfer = &out
}

// maxDuration is the disconnection reason of a call whose script went
// round until MaxScriptSteps (a real call's at the agent's
// maxDurationSeconds).
const maxDuration = "max_duration"

// stopped ends at stopAt a call that was p then: as it was answered (d:
// a person or a machine) if it had connected, as not answered if it was
// ringing.
func stopped(p telephony.Progress, stopAt time.Time, d telephony.Disposition) telephony.Progress {
	out := telephony.Progress{Phase: telephony.Ended, EndedAt: &stopAt, Disposition: telephony.NoAnswer,
		DisconnectionReason: telephony.APIHangup}
	if p.Phase == telephony.Connected {
		out.AnsweredAt, out.Duration = p.AnsweredAt, stopAt.Sub(*p.AnsweredAt)
		out.Disposition = d
	}
	return out
}

// talk is how long a connected call of disposition d lasts.
func (c *Carrier) talk(d telephony.Disposition) time.Duration {
	if d == telephony.AnsweringMachine {
		return c.t.Voicemail
	}
	return c.t.Talk
}

func ended(d telephony.Disposition, endedAt time.Time, talk time.Duration, answeredAt *time.Time) telephony.Progress {
	reason := d.UnconnectedReason()
	if d.Connected() {
		reason = connectedReasons[d]
	}
	return telephony.Progress{
		Phase:               telephony.Ended,
		AnsweredAt:          answeredAt,
		EndedAt:             &endedAt,
		Disposition:         d,
		DisconnectionReason: reason,
		Duration:            talk,
	}
}

// endedConnected rejects calls that have no audio (yet).
func endedConnected(p telephony.Progress) error {
	if p.Phase != telephony.Ended {
		return fmt.Errorf("sim: call has not ended (phase %q)", p.Phase)
	}
	if !p.Disposition.Connected() {
		return fmt.Errorf("sim: call never connected (disposition %q)", p.Disposition)
	}
	return nil
}
