package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/emiago/diago"
	diagomedia "github.com/emiago/diago/media"
	"github.com/emiago/sipgo"
	sipmsg "github.com/emiago/sipgo/sip"

	"github.com/switchboard-dev/switchboard/internal/conversation"
	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/amd"
	"github.com/switchboard-dev/switchboard/internal/telephony/audio"
	"github.com/switchboard-dev/switchboard/internal/telephony/media"
	"github.com/switchboard-dev/switchboard/internal/telephony/speech"
	"github.com/switchboard-dev/switchboard/internal/telephony/stream"
	"github.com/switchboard-dev/switchboard/internal/understand"
)

// Trunk is the SIP trunk a call goes out on.
type Trunk struct {
	// Address is the trunk's SIP URI, sip:host[:port][;transport=tcp].
	Address string
	// Transport is "udp" or "tcp"; when empty, the transport parameter of
	// Address, else udp.
	Transport string
	// Username and Password answer 401 and 407 digest challenges.
	Username, Password string
	// RingTimeout is how long the call may ring before we CANCEL it; zero
	// leaves it to the far end.
	RingTimeout time.Duration
	// DTMF is how the agent keys digits: "info" sends SIP INFO
	// (application/dtmf-relay); anything else RFC 4733 telephone events.
	DTMF string
	// Destination is the address the INVITE and OPTIONS are sent to, once
	// AddressGuard.Pin checked it; unset, Place and Probe pin it
	// themselves.
	Destination netip.AddrPort
}

// CallSpec is one call to place.
type CallSpec struct {
	// CallID is Switchboard's call ID, sent in the X-Switchboard-Call-ID
	// header (the SIP Call-ID is generated).
	CallID string
	// From and To are E.164 numbers: From becomes the user part of the From
	// header, To the user part of the Request-URI at the trunk's host.
	From, To string
	// MaxDuration bounds the connected time; zero means no bound.
	MaxDuration time.Duration
	// RecordPath is where the stereo 8 kHz 16-bit WAV of the connected call
	// is written (left: us, right: the callee); empty records nothing.
	RecordPath string
	// RecordMaxBytes bounds the recording's file (0: no bound): the call
	// goes on past it, unrecorded (audio.Recorder.Limit).
	RecordMaxBytes int64
	// Script runs in order once the call is up (once the detector said
	// HUMAN or NOTSURE, when AMD is on). After its last step we hang up; an
	// empty script listens until the callee hangs up or MaxDuration.
	Script []Step
	// AMD turns answering-machine detection on with these parameters; nil
	// leaves it off.
	AMD *amd.Params
	// Voicemail says what to do when the detector says MACHINE.
	Voicemail Voicemail
	// Stream, when set, bridges the answered call (after AMD) to the
	// organization's bot instead of running Script.
	Stream *stream.Config
	// Conversation, when set, holds a conversation with the
	// organization's language model (after AMD) instead of running Script.
	Conversation *Conversation
	// OnAnswer, when set, is called once when a 2xx answered the call,
	// before media starts (also for a 2xx we hang up at once: one that
	// crossed our CANCEL, or with unusable SDP). It runs on the call's
	// goroutine: return quickly.
	OnAnswer func(at time.Time)
	// Stop, when closed, hangs the call up (the API's stop): a ringing
	// call is cancelled (Outcome.Stopped), an answered one gets a BYE
	// (HangupByAPI). Nil never stops.
	Stop <-chan struct{}
	// Recognizer turns the callee's utterances into text in gathers that
	// listen to speech; nil leaves those gathers to keys alone.
	Recognizer speech.Recognizer
	// Headers are custom X- headers sent on the INVITE and on transfers
	// (already validated: names X-..., printable values).
	Headers []Header
	// AllowTransfer decides the call's transfers (nil refuses them all).
	AllowTransfer telephony.TransferGuard
	// SecondLeg, when set, is asked before a bridged or warm transfer
	// dials the person: it takes a place in the trunk's limits (calls at
	// once, calls per second) for the second call, released by release
	// once it ended; an error refuses the transfer (failed, with the
	// error's text). Nil dials without asking.
	SecondLeg func(ctx context.Context) (release func(), err error)
	// Zone is the callee's time zone: dates they say ("tomorrow", "next
	// Friday") are read in it. Nil reads them in UTC, never in the zone
	// of the machine the operator runs on.
	Zone *time.Location
}

// Step is one step of a script.
type Step struct {
	// ID names the step for a Gather's Next, Choice.Next and Retry.Next.
	ID string
	// Text is what the step says (say text, or gather prompt text), for the
	// transcript; may be empty.
	Text string
	// Audio is 8 kHz mono 16-bit PCM to play; nil plays nothing.
	Audio []int16
	// Note, when set, follows Text in the transcript as the engine's note
	// (the line was said in the embedded voice, say).
	Note string
	// Gather collects DTMF digits during and after Audio; nil collects
	// none (keys pressed outside a gather are dropped).
	Gather *Gather
	// Hangup ends the call once the step's audio and gather are done.
	Hangup bool
	// Press keys digits (after the step's audio, when it has some).
	Press *PressDigits
	// Transfer hands the callee to a person (after the step's audio).
	Transfer *Transfer
	// BargeIn stops the audio of a step without Gather when the callee
	// starts speaking (a Gather's prompt has its own NoBargeIn).
	BargeIn bool
}

// Gather takes the callee's answer: keys, and with Speech what they say.
// The first key pressed, or the start of speech, stops the step's audio
// (barge-in) unless NoBargeIn. Keys end after NumDigits digits, at
// FinishOnKey, at a Choice's Digits, or once Timeout passed without a key
// after the audio ended and after the last key; speech ends at the end of
// the first utterance in which something was recognized.
//
// Without Choices and Capture (keyed digits) the digits are the answer.
// Otherwise the answer must select a choice or parse as the Capture type:
// no answer within Timeout runs NoInput, one that does not select or
// parse runs NoMatch (each re-prompts up to its Retries, then goes on).
type Gather struct {
	// Field is the key in Result.Digits; empty keeps the answer only in
	// the transcript.
	Field string
	// Speech listens to the callee's speech too (with
	// CallSpec.Recognizer); NoKeys ignores their keys.
	Speech, NoKeys bool
	// Choices are the answers accepted; nil takes a Capture, or digits.
	Choices []Choice
	// Capture is the type of value taken without Choices: one of the
	// Capture constants, or "" for keyed digits as they are.
	Capture string
	// NoInput and NoMatch say what happens without an answer, or with
	// one that is not a choice or a value of the Capture type; nil goes
	// on at once.
	NoInput, NoMatch *Retry
	// Next is the ID of the step after an answer (a choice without its
	// own Next, or a captured value); "" goes on in order.
	Next string
	// NoBargeIn plays the prompt to its end whatever the callee does.
	NoBargeIn bool
	// NumDigits stops the gather after that many digits; 0 waits for
	// FinishOnKey or the timeout.
	NumDigits int
	// FinishOnKey is "" or one of 0-9, * and #: pressing it ends the
	// input, and it is not kept in the digits.
	FinishOnKey string
	// Timeout is how long to wait for the first key after the audio ended,
	// and between keys; 5 s when zero.
	Timeout time.Duration
	// MinConfidence is the recognizer's confidence (0 to 1) below which a
	// spoken answer is no match: the gather asks again rather than take a
	// value the recognizer doubts. 0 takes every answer.
	MinConfidence float64
}

// Capture types of Gather.Capture.
const (
	CaptureNumber = understand.CaptureNumber
	CaptureDigits = understand.CaptureDigits
	CaptureDate   = understand.CaptureDate
	CaptureTime   = understand.CaptureTime
	CaptureYesNo  = understand.CaptureYesNo
	CaptureText   = understand.CaptureText
)

// Choice is one answer a Gather accepts: Value (Result.Digits,
// Event.Branch), the Phrases the callee may say for it (Value counts
// too), the Digits keyed that select it ("" cannot be keyed), and the
// Next step ("" is the Gather's Next). It is understand's, which reads
// the answers.
type Choice = understand.GatherChoice

// Retry is what a Gather does without a usable answer: play Audio (the
// Gather's prompt when nil) and listen again, Retries times, then go to
// Next ("" goes on in order).
type Retry struct {
	Text    string
	Audio   []int16
	Note    string // as Step.Note
	Retries int
	Next    string
}

// Branches of a Gather without a usable answer (Event.Branch).
const (
	BranchNoInput = "noInput"
	BranchNoMatch = understand.BranchNoMatch
)

// Voicemail is what to do when the detector says MACHINE.
type Voicemail struct {
	// LeaveMessage false hangs up as soon as the detector says MACHINE.
	LeaveMessage bool
	// Message is played once the machine's greeting ended (see
	// EngineConfig.GreetingEndSilence), then we hang up. 8 kHz mono 16-bit.
	Message []int16
	// MessageText is the message's text, for the transcript.
	MessageText string
	// MessageNote follows MessageText as Step.Note does Text.
	MessageNote string
}

// Who hung up an answered call.
const (
	HangupByAgent       = "agent"
	HangupByCallee      = "callee"
	HangupByMaxDuration = "max_duration"
	// HangupByVoicemail: we hung up on an answering machine, at once or
	// after leaving the message.
	HangupByVoicemail = "voicemail"
	// HangupByAPI: we hung up because CallSpec.Stop was closed.
	HangupByAPI = "api"
	// HangupByAddressRefused: the answer (or a re-INVITE) asked for media,
	// or the dialog's requests, at an address the Guard refuses; no audio
	// was sent there.
	HangupByAddressRefused = "address_refused"
	// HangupByTransfer: the callee was handed to a person (Result.Transfer
	// says how); our part of the call ended with the transfer.
	HangupByTransfer = "transfer"
)

// Speakers of transcript events.
const (
	SpeakerAgent  = "agent"
	SpeakerCallee = "callee"
)

// Event is one line of the call's transcript: the transcript turn every
// carrier reports (telephony.Turn, whose fields say what each holds) and
// the moment it happened, which the engine orders lines by and places
// those without audio of their own at (placeEvents). For the engine, Text
// is a step's Text when it starts playing, the voicemail's MessageText,
// "pressed 1234#" (every key of one gather, finish key included) or
// "(answering machine greeting)"; Speaker is SpeakerAgent or
// SpeakerCallee.
type Event struct {
	At time.Time
	telephony.Turn
}

// Result is how a placed call ended.
type Result struct {
	// Outcome is what the wire said about the INVITE.
	Outcome Outcome
	// Answered is set when a 2xx established the call.
	Answered bool
	// AnsweredAt and EndedAt are set when the call was answered.
	AnsweredAt, EndedAt time.Time
	// HangupBy is one of the HangupBy constants for an answered call.
	HangupBy string
	// Machine is set when the detector said MACHINE.
	Machine bool
	// AMDStatus is the detector's verdict; "" when AMD was off or the call
	// ended before it decided.
	AMDStatus amd.Status
	// AMDCause is the detector's reason for its verdict.
	AMDCause string
	// Digits holds, per Gather.Field, the answer of each gather that got
	// one: the digits pressed (without the finish key: "" when only the
	// finish key was pressed), or the choice's value or captured value. A
	// gather without an answer has no entry. Nil when nothing was
	// gathered.
	Digits map[string]string
	// Events is the transcript, in order.
	Events []Event
	// Failure says why a streamed call's stream, or a conversation's response
	// engine, failed, when it did.
	Failure string
	// Latencies are a conversation's answers' timelines (the
	// voice-to-voice latency and its parts).
	Latencies []conversation.Latency
	// StreamStats are a streamed call's stream counters at its end.
	StreamStats stream.Stats
	// Transfer is the call's last transfer to a person, when it made one.
	Transfer *telephony.TransferOutcome
}

// EngineConfig configures an Engine.
type EngineConfig struct {
	// BindHost is the IP the SIP listeners and RTP sockets bind to;
	// 127.0.0.1 when empty.
	BindHost string
	// ExternalHost is the address put in Contact, Via and SDP when it is not
	// BindHost (behind NAT); optional.
	ExternalHost string
	// BindPort is the SIP port (UDP and TCP) on BindHost, also announced
	// with ExternalHost; an ephemeral port when zero.
	BindPort int
	// RTPPorts is the UDP range calls' media (RTP on even ports, RTCP on
	// the next) is bound in: two ports a call. Zero: ephemeral ports.
	RTPPorts PortRange
	// UserAgent is the User-Agent header; "switchboard" when empty.
	UserAgent string
	// Logger receives sipgo's and diago's logs; discarded when nil.
	Logger *slog.Logger
	// NoResponseTimeout gives up on an INVITE that drew no response at all
	// (not even 100 Trying), which makes the call unreachable; 32 s (RFC
	// 3261 Timer B) when zero.
	NoResponseTimeout time.Duration
	// GreetingEndSilence is how long an answering machine must stay silent
	// after its last voiced frame for its greeting (and beep) to count as
	// over, before we leave the message; 1 s when zero.
	GreetingEndSilence time.Duration
	// GreetingMaxWait bounds the wait for the greeting to end, from the
	// detector's verdict on: after it we leave the message anyway; 30 s
	// when zero.
	GreetingMaxWait time.Duration
	// VAD tunes the voice activity detection that cuts the callee's speech
	// into utterances and stops the agent's audio when they talk over it.
	VAD media.VADConfig
	// RecognizeTimeout bounds the recognition of one utterance; 10 s when
	// zero.
	RecognizeTimeout time.Duration
	// Guard decides where SIP and RTP may be sent; its zero value allows
	// every address.
	Guard AddressGuard
}

// Engine places calls over SIP trunks. One SIP user agent (sipgo, with
// diago for dialogs and media; UDP and TCP listeners on ephemeral ports of
// BindHost) serves all calls, concurrently.
//
// A call goes out as INVITE sip:<To>@<trunk host:port> with From
// <sip:From@trunk host>, offering PCMU, PCMA and telephone-event.
// Digest challenges (401 and 407) are answered with the trunk's
// credentials. Until any response comes, the ring timeout, the context or
// NoResponseTimeout abandon the INVITE (unreachable); after a provisional
// response, the ring timeout sends CANCEL (no_answer on the 487). A 200
// that crosses the CANCEL is ACKed and BYEd and counts as answered.
//
// Once answered, the engine sends 20 ms G.711 frames (silence between
// prompts) and records both directions on one timeline. With AMD on, it
// first feeds the callee's audio to the detector; on MACHINE it hangs up
// or leaves the voicemail message. Then it runs the script: prompts,
// DTMF gathers (RFC 4733 telephone-events, decoded by the engine) and
// hangups. The call ends after the script, at MaxDuration, when ctx ends,
// or at the callee's BYE.
// In-dialog re-INVITEs are handled by diago, UPDATEs by the engine.
type Engine struct {
	cfg    EngineConfig
	ua     *sipgo.UserAgent
	dg     *diago.Diago
	cancel context.CancelFunc
}

// errRingTimeout is the cause of the INVITE context when the ring timeout
// expired.
var errRingTimeout = errors.New("ring timeout")

// NewEngine starts the user agent. It runs until Close or until ctx ends.
func NewEngine(ctx context.Context, cfg EngineConfig) (*Engine, error) {
	if cfg.BindHost == "" {
		cfg.BindHost = "127.0.0.1"
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "switchboard"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.NoResponseTimeout == 0 {
		cfg.NoResponseTimeout = 64 * sipmsg.T1
	}
	if cfg.GreetingEndSilence == 0 {
		cfg.GreetingEndSilence = time.Second
	}
	if cfg.GreetingMaxWait == 0 {
		cfg.GreetingMaxWait = 30 * time.Second
	}
	ua, err := sipgo.NewUA(sipgo.WithUserAgent(cfg.UserAgent))
	if err != nil {
		return nil, fmt.Errorf("sip user agent: %w", err)
	}
	srv, err := sipgo.NewServer(ua, sipgo.WithServerLogger(cfg.Logger))
	if err != nil {
		_ = ua.Close()
		return nil, fmt.Errorf("sip server: %w", err)
	}
	opts := []diago.DiagoOption{diago.WithLogger(cfg.Logger), diago.WithServer(srv)}
	for _, tr := range []string{"udp", "tcp"} {
		opts = append(opts, diago.WithTransport(diago.Transport{
			ID:           tr,
			Transport:    tr,
			BindHost:     cfg.BindHost,
			BindPort:     cfg.BindPort,
			ExternalHost: cfg.ExternalHost,
		}))
	}
	cfg.RTPPorts.apply()
	dg := diago.NewDiago(ua, opts...)
	srv.OnUpdate(func(req *sipmsg.Request, tx sipmsg.ServerTransaction) { answerUpdate(dg, req, tx) })
	sctx, cancel := context.WithCancel(ctx)
	err = dg.ServeBackground(sctx, func(d *diago.DialogServerSession) {
		// We only place calls.
		_ = d.Respond(sipmsg.StatusForbidden, "Forbidden", nil)
	})
	if err != nil {
		cancel()
		_ = ua.Close()
		return nil, fmt.Errorf("sip listen on %s: %w", cfg.BindHost, err)
	}
	return &Engine{cfg: cfg, ua: ua, dg: dg, cancel: cancel}, nil
}

// PortRange is an inclusive range of UDP ports, First even and an even
// number of ports, so that each call's RTP (even) and RTCP (odd) pair fits.
type PortRange struct{ First, Last int }

// ParsePortRange reads "20000-20399"; "" is the zero range (ephemeral).
func ParsePortRange(s string) (PortRange, error) {
	if s == "" {
		return PortRange{}, nil
	}
	first, last, ok := strings.Cut(s, "-")
	var r PortRange
	var err1, err2 error
	r.First, err1 = strconv.Atoi(first)
	r.Last, err2 = strconv.Atoi(last)
	if !ok || err1 != nil || err2 != nil {
		return PortRange{}, fmt.Errorf("RTP port range %q: want FIRST-LAST, e.g. 20000-20399", s)
	}
	if r.First < 1024 || r.Last > 65535 || r.Last <= r.First || r.First%2 != 0 || (r.Last-r.First+1)%2 != 0 {
		return PortRange{}, fmt.Errorf("RTP port range %q: want an even first port from 1024 and an even number of ports up to 65535", s)
	}
	return r, nil
}

// String is the range as ParsePortRange reads it.
func (r PortRange) String() string {
	if r == (PortRange{}) {
		return ""
	}
	return fmt.Sprintf("%d-%d", r.First, r.Last)
}

// Calls is how many calls the range holds at once.
func (r PortRange) Calls() int {
	if r == (PortRange{}) {
		return 0
	}
	return (r.Last - r.First + 1) / 2
}

// apply sets the range in diago's media package, which holds it for the
// whole process (one engine a process outside tests).
func (r PortRange) apply() {
	if r == (PortRange{}) {
		return
	}
	diagomedia.RTPPortStart, diagomedia.RTPPortEnd = r.First, r.Last+1
}

// answerUpdate answers an UPDATE (RFC 3311), which diago does not handle
// (sipgo would answer 405, and carriers refreshing a session timer with
// UPDATE end the call): 200 to a refresh of one of our calls without SDP,
// 488 (the session stays as it is) to a new offer, and 481 outside our
// calls.
func answerUpdate(dg *diago.Diago, req *sipmsg.Request, tx sipmsg.ServerTransaction) {
	status, reason := sipmsg.StatusCallTransactionDoesNotExists, "Call/Transaction Does Not Exist"
	if id, err := sipmsg.DialogIDFromRequestUAC(req); err == nil {
		if _, err := dg.DialogCacheClient().DialogLoad(context.Background(), id); err == nil {
			status, reason = sipmsg.StatusOK, "OK"
			if len(req.Body()) > 0 {
				status, reason = sipmsg.StatusNotAcceptableHere, "Not Acceptable Here"
			}
		}
	}
	_ = tx.Respond(sipmsg.NewResponseFromRequest(req, status, reason, nil))
}

// Close stops the listeners. Calls in progress fail.
func (e *Engine) Close() error {
	e.cancel()
	return e.ua.Close()
}

// target returns the Request-URI of a call to number on the trunk, and the
// transport.
func (t Trunk) target(number string) (sipmsg.Uri, string, error) {
	var u sipmsg.Uri
	addr := t.Address
	if !strings.HasPrefix(addr, "sip:") {
		addr = "sip:" + addr
	}
	if err := sipmsg.ParseUri(addr, &u); err != nil || u.Host == "" {
		return sipmsg.Uri{}, "", fmt.Errorf("trunk address %q is not a sip:host[:port] URI", t.Address)
	}
	transport := strings.ToLower(t.Transport)
	if transport == "" && u.UriParams != nil {
		transport, _ = u.UriParams.Get("transport")
		transport = strings.ToLower(transport)
	}
	switch transport {
	case "":
		transport = "udp"
	case "udp", "tcp":
	default:
		return sipmsg.Uri{}, "", fmt.Errorf("trunk transport %q: want udp or tcp", transport)
	}
	if number == "" {
		return sipmsg.Uri{}, "", errors.New("no number to call")
	}
	return sipmsg.Uri{
		Scheme:    "sip",
		User:      number,
		Host:      u.Host,
		Port:      u.Port,
		UriParams: sipmsg.NewParams(),
		Headers:   sipmsg.NewParams(),
	}, transport, nil
}

// Place places the call and blocks until it ended. The error reports a
// call that could not be attempted (bad trunk, invalid script or AMD
// parameters), a
// recording that could not be written, or ctx ending; how the far end
// answered is in the Result, not in the error.
func (e *Engine) Place(ctx context.Context, t Trunk, c CallSpec) (Result, error) {
	recipient, transport, err := t.target(c.To)
	if err != nil {
		return Result{}, err
	}
	if err := c.validate(); err != nil {
		return Result{}, err
	}
	t, err = e.cfg.Guard.Pin(ctx, t)
	if err != nil {
		var refused *AddressError
		if errors.As(err, &refused) {
			return Result{}, err
		}
		// As when sipgo's own lookup fails: the INVITE cannot be sent.
		e.cfg.Logger.Debug("trunk host lookup failed", "error", err)
		return Result{Outcome: Outcome{TransportError: true}}, nil
	}

	// Create the recording before dialing: a call answered only to be hung
	// up at once because its recording cannot be written is a ghost call.
	rec, err := audio.NewRecorder(c.RecordPath)
	if err != nil {
		return Result{}, err
	}
	rec.Limit(c.RecordMaxBytes)
	recording := false // converse owns the recording
	defer func() {
		if !recording {
			rec.Discard()
		}
	}()

	d, err := e.dg.NewDialog(recipient, diago.NewDialogOptions{TransportID: transport})
	if err != nil {
		return Result{}, fmt.Errorf("new dialog: %w", err)
	}
	defer func() { _ = d.Close() }()
	d.InviteRequest.SetDestination(t.Destination.String())

	media := newMediaWatch(e.cfg.Guard)
	res, up, err := e.invite(ctx, d, t, c, recipient, media)
	if res.Answered && c.OnAnswer != nil {
		c.OnAnswer(res.AnsweredAt)
	}
	if !up {
		return res, cmp.Or(err, ctx.Err())
	}
	if refused := e.cfg.Guard.remoteTarget(ctx, d.InviteResponse); refused != nil {
		// Nothing is sent there, not even the ACK: the far end gives up
		// on its 200 by itself.
		res.EndedAt, res.HangupBy = time.Now(), HangupByAddressRefused
		return res, refused
	}
	if refused := e.cfg.Guard.media(&d.DialogMedia); refused != nil {
		res.EndedAt, res.HangupBy = time.Now(), HangupByAddressRefused
		return res, errors.Join(refused, e.ackBye(ctx, d))
	}
	if err := d.Ack(ctx); err != nil {
		// The far end will retransmit its 200 and give up; tell it now.
		res.EndedAt = time.Now()
		res.HangupBy = HangupByAgent
		return res, errors.Join(fmt.Errorf("ack: %w", err), e.bye(d))
	}
	recording = true
	rec.Begin(res.AnsweredAt)
	cerr := e.converse(ctx, d, t, c, rec, &res, media)
	return res, cerr
}

// Pin resolves and checks the trunk's address with the engine's Guard
// (AddressGuard.Pin).
func (e *Engine) Pin(ctx context.Context, t Trunk) (Trunk, error) {
	return e.cfg.Guard.Pin(ctx, t)
}

// ackBye acknowledges an answer and hangs it up at once, before any media
// is sent (diago's first RTCP report is due 5 s after the answer).
func (e *Engine) ackBye(ctx context.Context, d *diago.DialogClientSession) error {
	if err := d.Ack(ctx); err != nil {
		return fmt.Errorf("ack: %w", err)
	}
	return e.bye(d)
}

// invite sends the INVITE and waits for its final response, cancelling at
// the ring timeout. It reports whether the call was answered and is up.
func (e *Engine) invite(ctx context.Context, d *diago.DialogClientSession, t Trunk, c CallSpec, recipient sipmsg.Uri,
	media *mediaWatch) (Result, bool, error) {
	// CANCEL needs a provisional response to cancel (RFC 3261 9.1): until
	// one came, the ring timeout and ctx give up on the INVITE instead (the
	// far end was unreachable), rather than wait for one until Timer B.
	// inviteCtx is not derived from ctx for that: its cause must be ours.
	inviteCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancel(nil)
	var responded atomic.Bool
	giveUp := func(cause error) func() {
		return func() {
			if !responded.Load() {
				cancel(sipgo.WaitAnswerForceCancelErr)
			}
			cancel(cause)
		}
	}
	stop := context.AfterFunc(ctx, giveUp(context.Canceled))
	defer stop()
	wasStopped, unwatch := onStop(c.Stop, giveUp(errStopped))
	defer unwatch()
	if t.RingTimeout > 0 {
		ring := time.AfterFunc(t.RingTimeout, giveUp(errRingTimeout))
		defer ring.Stop()
	}
	silent := time.AfterFunc(e.cfg.NoResponseTimeout, giveUp(sipgo.WaitAnswerForceCancelErr))
	defer silent.Stop()

	headers := []sipmsg.Header{&sipmsg.FromHeader{
		Address: sipmsg.Uri{Scheme: "sip", User: c.From, Host: recipient.Host},
		Params:  sipmsg.NewParams(),
	}}
	if c.CallID != "" {
		headers = append(headers, sipmsg.NewHeader("X-Switchboard-Call-ID", c.CallID))
	}
	for _, h := range c.Headers {
		headers = append(headers, sipmsg.NewHeader(h.Name, h.Value))
	}
	err := d.Invite(inviteCtx, diago.InviteClientOptions{
		Username: t.Username,
		Password: t.Password,
		Headers:  headers,
		OnResponse: func(*sipmsg.Response) error {
			responded.Store(true)
			return nil
		},
		OnMediaUpdate: media.update,
	})
	ringTimeout := errors.Is(context.Cause(inviteCtx), errRingTimeout)
	final, outcome := finalResponse(d)
	res := Result{Outcome: outcome}
	res.Outcome.RingTimeout = ringTimeout
	res.Outcome.Stopped = wasStopped()
	if err == nil {
		res.Answered, res.AnsweredAt = true, time.Now()
		return res, true, nil
	}
	if final != nil && final.IsSuccess() {
		now := time.Now()
		res.Answered, res.AnsweredAt, res.EndedAt, res.HangupBy = true, now, now, HangupByAgent
		if inviteCtx.Err() == nil {
			// diago rejected the answer's SDP, then ACKed and BYEd it.
			return res, false, fmt.Errorf("answered with unusable SDP: %w", err)
		}
		// The 200 crossed our CANCEL: the call is up, and we must ACK and
		// BYE it. It counts as answered and ended at once.
		if res.Outcome.Stopped {
			res.HangupBy = HangupByAPI
		}
		ackCtx, cancelAck := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancelAck()
		if d.DialogClientSession.Ack(ackCtx) == nil {
			_ = e.bye(d)
		}
		return res, false, nil
	}
	if final == nil && !ringTimeout {
		e.cfg.Logger.Debug("INVITE failed without a final response", "error", err)
		res.Outcome.TransportError = true
	}
	return res, false, nil
}

// finalResponse is the INVITE's final response (nil when only provisional
// ones came) and the outcome it says.
func finalResponse(d *diago.DialogClientSession) (*sipmsg.Response, Outcome) {
	final := d.InviteResponse
	if final == nil || final.IsProvisional() {
		return nil, Outcome{}
	}
	o := Outcome{StatusCode: final.StatusCode}
	for _, h := range final.GetHeaders("Reason") {
		o.ReasonHeaders = append(o.ReasonHeaders, h.Value())
	}
	return final, o
}

// bye hangs up an established call.
func (e *Engine) bye(d *diago.DialogClientSession) error {
	ctx, cancel := context.WithTimeout(context.Background(), 64*sipmsg.T1)
	defer cancel()
	return d.Hangup(ctx)
}

// errStopped is the cause of an INVITE or a call ended by CallSpec.Stop.
var errStopped = errors.New("stopped through the API")

// onStop runs f once stop is closed; stopped reports whether it was.
// Call unwatch once done.
func onStop(stop <-chan struct{}, f func()) (stopped func() bool, unwatch func()) {
	ctx, release := stopContext(stop)
	var was atomic.Bool // the INVITE's cause may be giveUp's force-cancel instead
	after := context.AfterFunc(ctx, func() {
		was.Store(true)
		f()
	})
	return was.Load, func() {
		after()
		release()
	}
}

// stopContext is done once stop is closed (never, for nil). Call release
// once done with it.
func stopContext(stop <-chan struct{}) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	if stop == nil {
		return ctx, cancel
	}
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
