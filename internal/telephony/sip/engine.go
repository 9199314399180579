package sip

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/emiago/diago"
	"github.com/emiago/sipgo"
	sipmsg "github.com/emiago/sipgo/sip"

	"github.com/switchboard-dev/switchboard/internal/telephony"
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
	// Prompt is the path of an 8 kHz mono 16-bit WAV played once answered;
	// optional.
	Prompt string
	// RecordPath is where the stereo 8 kHz 16-bit WAV of the connected call
	// is written (left: us, right: the callee); empty records nothing.
	RecordPath string
}

// Who hung up an answered call.
const (
	HangupByAgent       = "agent"
	HangupByCallee      = "callee"
	HangupByMaxDuration = "max_duration"
)

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
}

// Disposition is the REST API's disposition of the call (never
// AnsweringMachine: that takes the detector).
func (r Result) Disposition() telephony.Disposition { return Disposition(r.Outcome) }

// EngineConfig configures an Engine.
type EngineConfig struct {
	// BindHost is the IP the SIP listeners and RTP sockets bind to;
	// 127.0.0.1 when empty.
	BindHost string
	// ExternalHost is the address put in Contact, Via and SDP when it is not
	// BindHost (behind NAT); optional.
	ExternalHost string
	// UserAgent is the User-Agent header; "switchboard" when empty.
	UserAgent string
	// Logger receives sipgo's and diago's logs; discarded when nil.
	Logger *slog.Logger
	// NoResponseTimeout gives up on an INVITE that drew no response at all
	// (not even 100 Trying), which makes the call unreachable; 32 s (RFC
	// 3261 Timer B) when zero.
	NoResponseTimeout time.Duration
	// SilenceHangup is how long the line must stay silent after the prompt
	// before we hang up; 1 s when zero.
	SilenceHangup time.Duration
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
// Once answered, the engine sends the prompt and then silence as 20 ms
// G.711 frames, records both directions on one timeline, and hangs up
// when SilenceHangup passed after the prompt ended and after the callee
// last spoke (a 20 ms frame with a mean absolute amplitude of 256 or
// more), at MaxDuration, or when ctx ends; or it reports the callee's BYE.
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
	if cfg.SilenceHangup == 0 {
		cfg.SilenceHangup = time.Second
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
			ExternalHost: cfg.ExternalHost,
		}))
	}
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
// call that could not be attempted (bad trunk, unreadable prompt), a
// recording that could not be written, or ctx ending; how the far end
// answered is in the Result, not in the error.
func (e *Engine) Place(ctx context.Context, t Trunk, c CallSpec) (Result, error) {
	recipient, transport, err := t.target(c.To)
	if err != nil {
		return Result{}, err
	}
	var prompt []int16
	if c.Prompt != "" {
		if prompt, err = loadPrompt(c.Prompt); err != nil {
			return Result{}, err
		}
	}

	// Create the recording before dialing: a call answered only to be hung
	// up at once because its recording cannot be written is a ghost call.
	rec, err := newRecorder(c.RecordPath)
	if err != nil {
		return Result{}, err
	}
	recording := false // converse owns the recording
	defer func() {
		if !recording {
			rec.discard()
		}
	}()

	d, err := e.dg.NewDialog(recipient, diago.NewDialogOptions{TransportID: transport})
	if err != nil {
		return Result{}, fmt.Errorf("new dialog: %w", err)
	}
	defer func() { _ = d.Close() }()

	res, up, err := e.invite(ctx, d, t, c, recipient)
	if !up {
		return res, cmp.Or(err, ctx.Err())
	}
	res.Answered = true
	res.AnsweredAt = time.Now()
	if err := d.Ack(ctx); err != nil {
		// The far end will retransmit its 200 and give up; tell it now.
		res.EndedAt = time.Now()
		res.HangupBy = HangupByAgent
		return res, errors.Join(fmt.Errorf("ack: %w", err), e.bye(d))
	}
	recording = true
	rec.start = res.AnsweredAt
	cerr := e.converse(ctx, d, prompt, rec, c.MaxDuration, &res)
	return res, cerr
}

// invite sends the INVITE and waits for its final response, cancelling at
// the ring timeout. It reports whether the call was answered and is up.
func (e *Engine) invite(ctx context.Context, d *diago.DialogClientSession, t Trunk, c CallSpec, recipient sipmsg.Uri) (Result, bool, error) {
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
	err := d.Invite(inviteCtx, diago.InviteClientOptions{
		Username: t.Username,
		Password: t.Password,
		Headers:  headers,
		OnResponse: func(*sipmsg.Response) error {
			responded.Store(true)
			return nil
		},
	})
	ringTimeout := errors.Is(context.Cause(inviteCtx), errRingTimeout)
	var res Result
	final := d.InviteResponse
	if final != nil && final.IsProvisional() {
		final = nil
	}
	if final != nil {
		res.Outcome.StatusCode = final.StatusCode
		for _, h := range final.GetHeaders("Reason") {
			res.Outcome.ReasonHeaders = append(res.Outcome.ReasonHeaders, h.Value())
		}
	}
	res.Outcome.RingTimeout = ringTimeout
	if err == nil {
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

// bye hangs up an established call.
func (e *Engine) bye(d *diago.DialogClientSession) error {
	ctx, cancel := context.WithTimeout(context.Background(), 64*sipmsg.T1)
	defer cancel()
	return d.Hangup(ctx)
}
