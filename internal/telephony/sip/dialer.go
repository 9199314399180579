// Package sip places the calls of Agents bound to SIPTrunks: it is the
// telephony.Dialer of real telephony, on top of the SIP call engine
// (package engine). It also turns SIPTrunk resources into what the engine
// dials (Resolve), for the Dialer and the SIPTrunk reconciler alike.
//
// A SIP call is a live session in this process. Dial starts it (once the
// trunk's queue lets it go) and Progress reads it; the engine's news (the
// callee answered, the call ended) wakes the call's reconciler at once.
//
// The script is rendered (text-to-speech, ConfigMap audio) on the call's own
// goroutine, never in the reconciler's: the shared workers must not wait
// for a synthesizer. While it renders, Dial answers a WaitError (the call
// stays queued, PreparingScript); once it is ready the call is woken, and
// the Dial that then answers nil lets it go out.
// The session stays in memory, and its recording in the spool directory,
// until the reconciler has stored the recording and the analysis
// (Release).
//
// If the operator restarts during a call, the session is gone and the call
// with it (the far end sees the media stop). Progress then ends the call
// with disconnection_reason operator_restart: answered when the Call's
// status recorded an answer (its recording, if the spool survived, is kept
// up to the cut), carrier_failure otherwise.
package sip

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"

	"github.com/switchboard-dev/switchboard/internal/phone"
	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/audio"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/engine"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/gate"
	"github.com/switchboard-dev/switchboard/internal/telephony/speech"
)

// Placer places one call and blocks until it ended: the SIP engine. Pin
// resolves and checks the trunk's address first (an *engine.AddressError
// when the operator's policy refuses it).
type Placer interface {
	Pin(ctx context.Context, t engine.Trunk) (engine.Trunk, error)
	Place(ctx context.Context, t engine.Trunk, c engine.CallSpec) (engine.Result, error)
}

// TrunkSource resolves a SIPTrunk. A configuration problem (no such trunk,
// missing credentials) is a *telephony.DispatchError.
type TrunkSource interface {
	Trunk(ctx context.Context, namespace, name string) (engine.Trunk, gate.Limits, error)
}

// Backlog lists the queued calls of a trunk (from the informer cache).
type Backlog func(ctx context.Context, namespace, trunk string) ([]gate.Waiter, error)

// Config configures a Dialer.
type Config struct {
	Engine  Placer
	Trunks  TrunkSource
	Script  *ScriptRenderer
	Backlog Backlog
	// SpoolDir holds recordings until they are stored.
	SpoolDir string
	// RecordingMaxBytes bounds each call's recording (0: no bound).
	RecordingMaxBytes int64
	// WakeCall asks for a call to be reconciled now.
	WakeCall func(call types.NamespacedName)
	// TrunkChanged reports that a trunk's usage changed (at most every
	// TrunkChangedEvery per trunk); optional.
	TrunkChanged      func(trunk types.NamespacedName)
	TrunkChangedEvery time.Duration
	Log               logr.Logger
	// Recognizer chooses the recognizer of a call's speech (package
	// speech: the embedded one, or the organization's server); nil, or a
	// nil answer, leaves gathers that listen to keys alone.
	Recognizer func(req telephony.Request) speech.Recognizer
	// Transfers gives each call the guard of its transfers
	// (callpolicy.Transfers: the agent's transferDestinations and the
	// number lists); nil refuses every transfer.
	Transfers func(req telephony.Request) telephony.TransferGuard
}

// restartReason is the disconnection reason of a call cut off by an
// operator restart.
const restartReason = "operator_restart"

// recheck is how often a live call is looked at if no news came.
const recheck = 30 * time.Second

// renderGrace is how long Dial waits for a script to render before it lets
// the reconciler go and wakes the call later: most scripts are cached or
// short, and are placed without the extra status write of a wait.
const renderGrace = 100 * time.Millisecond

// unclaimed is how long a rendered call waits for the reconciler to dial
// it. A call deleted or stopped meanwhile never is; its session then goes,
// and a later Dial starts over.
const unclaimed = time.Minute

// Dialer places calls over SIP trunks.
type Dialer struct {
	cfg      Config
	ctx      context.Context
	gate     *gate.Gate
	notifier *gate.Throttle

	mu       sync.Mutex
	sessions map[string]*session // by call id
	calls    sync.WaitGroup      // the calls' goroutines
}

var _ telephony.Dialer = (*Dialer)(nil)

// New returns a Dialer whose calls run until ctx ends (the process stops).
func New(ctx context.Context, cfg Config) (*Dialer, error) {
	if err := os.MkdirAll(cfg.SpoolDir, 0o700); err != nil {
		return nil, fmt.Errorf("recording spool: %w", err)
	}
	d := &Dialer{cfg: cfg, ctx: ctx, sessions: map[string]*session{}}
	d.notifier = gate.NewThrottle(cfg.TrunkChangedEvery, cfg.TrunkChanged)
	d.gate = gate.New(func(call types.NamespacedName) { cfg.WakeCall(call) }, time.Now)
	return d, nil
}

// session is one call placed by this process.
type session struct {
	callID      string
	call, trunk types.NamespacedName
	recordPath  string

	// rendered is closed once the script is ready, or failed (renderErr,
	// a *telephony.DispatchError).
	rendered  chan struct{}
	renderErr error
	// answered is closed (under mu) by the Dial that answers for the
	// rendered call: nil (the reconciler has it as placed, so it may go
	// out) or the script's failure. abandoned is set instead when that
	// Dial did not come in time.
	answered  chan struct{}
	abandoned bool

	mu         sync.Mutex
	answeredAt *time.Time
	ended      bool
	endedAt    time.Time
	result     engine.Result
	err        error
	script     []engine.Step
	// stop is closed, once, to hang the call up.
	stop     chan struct{}
	stopOnce sync.Once
}

func (d *Dialer) session(callID string) *session {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sessions[callID]
}

// Usage reports a trunk's calls in flight and waiting.
func (d *Dialer) Usage(namespace, name string) (active, queued int) {
	return d.gate.Usage(types.NamespacedName{Namespace: namespace, Name: name})
}

// Admit checks that the call's trunk exists and is configured; it takes no
// capacity (the call may then wait in the queue).
func (d *Dialer) Admit(ctx context.Context, req telephony.Request) error {
	_, _, err := d.cfg.Trunks.Trunk(ctx, req.Namespace, req.Trunk)
	return err
}

// Dial starts the call when its trunk's queue lets it go and its script is
// rendered, or answers a *telephony.WaitError. It is idempotent per call.
func (d *Dialer) Dial(ctx context.Context, req telephony.Request, _ time.Time) error {
	if s := d.session(req.CallID); s != nil {
		return d.goAhead(s, 0)
	}
	trunk, limits, err := d.cfg.Trunks.Trunk(ctx, req.Namespace, req.Trunk)
	if err != nil {
		return err
	}
	call := types.NamespacedName{Namespace: req.Namespace, Name: req.CallName}
	trunkKey := types.NamespacedName{Namespace: req.Namespace, Name: req.Trunk}
	var backlog []gate.Waiter
	if !limits.Unbounded() {
		if backlog, err = d.cfg.Backlog(ctx, req.Namespace, req.Trunk); err != nil {
			return err
		}
	}
	if wait := d.gate.Admit(trunkKey, limits, gate.Waiter{Call: call, Order: req.Order}, backlog); wait != nil {
		d.notifier.Touch(trunkKey)
		return wait
	}
	// The script is rendered once the call may go (text-to-speech for
	// each waiting retry would be wasted work).
	s := &session{callID: req.CallID, call: call, trunk: trunkKey, recordPath: d.spoolPath(req.CallID),
		rendered: make(chan struct{}), answered: make(chan struct{}), stop: make(chan struct{})}
	d.mu.Lock()
	d.sessions[req.CallID] = s
	d.mu.Unlock()
	d.notifier.Touch(trunkKey)
	d.calls.Go(func() { d.run(s, trunk, req) })
	return d.goAhead(s, renderGrace)
}

// goAhead answers Dial for a started session, once its script is rendered
// (waiting at most grace for it): nil lets the call go out, the script's
// failure fails it, and a WaitError keeps it queued while text-to-speech
// runs (the call is woken when it is done).
func (d *Dialer) goAhead(s *session, grace time.Duration) error {
	select {
	case <-s.rendered:
	default:
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-s.rendered:
		case <-t.C:
			return &telephony.WaitError{Reason: "preparing the agent's script", RetryAfter: recheck, Preparing: true}
		}
	}
	s.mu.Lock()
	abandoned := s.abandoned
	if !abandoned && !closed(s.answered) {
		close(s.answered)
	}
	s.mu.Unlock()
	switch {
	case abandoned: // the session is gone: the next Dial starts over
		return &telephony.WaitError{Reason: "preparing the agent's script", RetryAfter: time.Millisecond, Preparing: true}
	case s.renderErr != nil:
		d.drop(s)
		return s.renderErr
	}
	return nil
}

func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// drop forgets a session that does not go out and frees its trunk slot.
func (d *Dialer) drop(s *session) {
	d.mu.Lock()
	if d.sessions[s.callID] == s {
		delete(d.sessions, s.callID)
	}
	d.mu.Unlock()
	d.gate.Release(s.trunk, s.call)
	d.notifier.Touch(s.trunk)
}

// Wait returns once every call has hung up and closed its recording, after
// the Dialer's context ended (a shutdown hangs up every call).
func (d *Dialer) Wait() { d.calls.Wait() }

func (d *Dialer) spoolPath(callID string) string {
	return filepath.Join(d.cfg.SpoolDir, filepath.Base(callID)+".wav")
}

// run checks the trunk's address and renders the call's script, waits for
// the reconciler's answer, then places the call. Rendering is bounded by
// the renderer's timeout.
func (d *Dialer) run(s *session, trunk engine.Trunk, req telephony.Request) {
	trunk, err := d.pin(trunk, req.Trunk)
	var spec engine.CallSpec
	if err == nil {
		spec, err = d.cfg.Script.Render(d.ctx, req)
	}
	if err != nil {
		s.renderErr = err
		d.gate.Release(s.trunk, s.call) // it will not go out: let the next one
		d.notifier.Touch(s.trunk)
	} else {
		spec.CallID, spec.From, spec.To = req.CallID, req.From, req.To
		spec.RecordPath, spec.RecordMaxBytes, spec.Stop = s.recordPath, d.cfg.RecordingMaxBytes, s.stop
		spec.Recognizer = d.recognizer(req)
		spec.Zone = phone.CalleeZone(req.To)
		d.transfers(&spec, s, req)
		s.mu.Lock()
		s.script = spec.Script
		s.mu.Unlock()
	}
	close(s.rendered)
	if d.claimed(s) && err == nil {
		d.place(s, trunk, spec)
	}
}

// pin resolves and checks the trunk's address before anything is sent
// (the engine sends to the address checked here). A refused address fails
// the call, naming the address and the policy; a name that does not
// resolve leaves the engine to find it unreachable, as any dead trunk is.
func (d *Dialer) pin(trunk engine.Trunk, name string) (engine.Trunk, error) {
	pinned, err := d.cfg.Engine.Pin(d.ctx, trunk)
	var refused *engine.AddressError
	if errors.As(err, &refused) {
		return trunk, &telephony.DispatchError{Code: telephony.CodeDispatchFailed,
			Reason: fmt.Sprintf("SIP trunk %q: %s", name, TrunkAddressRefused(refused))}
	}
	var insecure *engine.TLSError
	if errors.As(err, &insecure) {
		// Never a clear fallback: the call fails, with the TLS error's words.
		return trunk, &telephony.DispatchError{Code: telephony.CodeDispatchFailed,
			Reason: fmt.Sprintf("SIP trunk %q: %s", name, insecure.Error())}
	}
	if err != nil {
		return trunk, nil
	}
	return pinned, nil
}

// TrunkAddressRefused words a refused trunk address for the organization:
// what was refused and the policy, never what a connection did.
func TrunkAddressRefused(err *engine.AddressError) string {
	return err.Error() + "; trunks must be publicly reachable, or in a private network the operator allows (--sip-private-networks)"
}

// recognizer is the one place that chooses the recognizer of a call's
// speech input (gathers that listen): Config.Recognizer's choice for the
// call's agent and organization, or none, when gathers take keys only.
func (d *Dialer) recognizer(req telephony.Request) speech.Recognizer {
	if d.cfg.Recognizer == nil {
		return nil
	}
	return d.cfg.Recognizer(req)
}

// transfers gives the call its transfer guard and a place in the trunk's
// limits for a transfer's second call, which counts as a call while it
// lasts.
func (d *Dialer) transfers(spec *engine.CallSpec, s *session, req telephony.Request) {
	if d.cfg.Transfers != nil {
		spec.AllowTransfer = d.cfg.Transfers(req)
	}
	spec.SecondLeg = func(ctx context.Context) (func(), error) {
		release, err := d.gate.SecondLeg(ctx, s.trunk, s.call)
		if err != nil {
			return nil, err
		}
		d.notifier.Touch(s.trunk)
		return func() {
			release()
			d.notifier.Touch(s.trunk)
		}, nil
	}
}

// claimed waits for the Dial that answers for the rendered call, waking the
// call if it was told to wait. It reports false, having dropped the
// session, when that Dial does not come: the call was stopped or deleted
// meanwhile, or the process is stopping.
func (d *Dialer) claimed(s *session) bool {
	if closed(s.answered) {
		return true
	}
	d.cfg.WakeCall(s.call)
	t := time.NewTimer(unclaimed)
	defer t.Stop()
	select {
	case <-s.answered:
		return true
	case <-s.stop:
	case <-t.C:
	case <-d.ctx.Done():
		return false
	}
	s.mu.Lock()
	answered := closed(s.answered) // dialed and stopped at once: the engine hangs up at once
	s.abandoned = !answered
	s.mu.Unlock()
	if !answered {
		d.drop(s)
	}
	return answered
}

// place places the call and records how it ended.
func (d *Dialer) place(s *session, trunk engine.Trunk, spec engine.CallSpec) {
	spec.OnAnswer = func(at time.Time) {
		s.mu.Lock()
		s.answeredAt = &at
		s.mu.Unlock()
		d.cfg.WakeCall(s.call)
	}
	res, err := d.cfg.Engine.Place(d.ctx, trunk, spec)
	if d.ctx.Err() != nil {
		// The process is stopping: the call was cut off, and the next
		// process reports it as such (operator_restart).
		return
	}
	if err != nil {
		d.cfg.Log.Error(err, "SIP call", "call", s.call, "trunk", s.trunk)
	}
	s.mu.Lock()
	s.ended, s.endedAt, s.result, s.err = true, time.Now(), res, err
	s.mu.Unlock()
	d.gate.Release(s.trunk, s.call)
	d.notifier.Touch(s.trunk)
	d.cfg.WakeCall(s.call)
}

// Hangup cancels or hangs up the live call. A call this process no longer
// has was cut off by a restart and is reported as such.
func (d *Dialer) Hangup(_ context.Context, req telephony.Request) error {
	if s := d.session(req.CallID); s != nil {
		s.stopOnce.Do(func() { close(s.stop) })
	}
	return nil
}

// Progress reports the live session, or a call cut off by a restart.
func (d *Dialer) Progress(_ context.Context, req telephony.Request, _, now time.Time) (telephony.Progress, error) {
	s := d.session(req.CallID)
	if s == nil {
		return d.lost(req, now), nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		if s.answeredAt != nil {
			return telephony.Progress{Phase: telephony.Connected, AnsweredAt: s.answeredAt, NextCheck: recheck}, nil
		}
		return telephony.Progress{Phase: telephony.Ringing, NextCheck: recheck}, nil
	}
	return endedProgress(s.result, s.endedAt), nil
}

func endedProgress(res engine.Result, endedAt time.Time) telephony.Progress {
	p := telephony.Progress{Phase: telephony.Ended, EndedAt: &endedAt, Disposition: res.Disposition(),
		DisconnectionReason: res.DisconnectionReason(), Detail: res.Failure, Transfer: res.Transfer}
	if res.Answered && res.Transfer != nil {
		// A transfer that connected ended the agent's part of the call:
		// the call ends as transferred, however the legs hung up after.
		if reason := res.Transfer.DisconnectionReason(); reason != "" {
			p.DisconnectionReason = reason
		}
	}
	if res.Answered {
		answeredAt, end := res.AnsweredAt, res.EndedAt
		p.AnsweredAt, p.EndedAt, p.Duration = &answeredAt, &end, end.Sub(answeredAt)
	}
	return p
}

// lost is the end of a call this process never placed or no longer has:
// an operator restart cut it off. The spool file's last write, when it
// survived, tells when the audio stopped.
func (d *Dialer) lost(req telephony.Request, now time.Time) telephony.Progress {
	p := telephony.Progress{Phase: telephony.Ended, EndedAt: &now, Disposition: telephony.CarrierFailure,
		DisconnectionReason: restartReason}
	if req.AnsweredAt == nil {
		return p
	}
	end := now
	if fi, err := os.Stat(d.spoolPath(req.CallID)); err == nil && fi.ModTime().After(*req.AnsweredAt) {
		end = fi.ModTime()
	}
	p.Disposition, p.AnsweredAt, p.EndedAt, p.Duration = telephony.Answered, req.AnsweredAt, &end, end.Sub(*req.AnsweredAt)
	return p
}

// Recording opens the call's stereo WAV. A call cut off by a restart has
// the audio written until then, if the spool survived.
func (d *Dialer) Recording(_ context.Context, req telephony.Request, _ telephony.Progress) (io.ReadCloser, error) {
	path := d.spoolPath(req.CallID)
	if d.session(req.CallID) == nil {
		if err := audio.Repair(path); err != nil {
			d.cfg.Log.Info("the recording of a call cut off by a restart is lost", "call", req.CallID, "error", err.Error())
			return nil, telephony.ErrNoRecording
		}
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, telephony.ErrNoRecording
	}
	return f, err
}

// Transcript lists what the agent said and the callee keyed.
func (d *Dialer) Transcript(_ context.Context, req telephony.Request, _ telephony.Progress) ([]telephony.Turn, error) {
	s := d.session(req.CallID)
	if s == nil {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return transcript(s.result), nil
}

// Release drops the session and its spooled recording.
func (d *Dialer) Release(_ context.Context, req telephony.Request) {
	d.mu.Lock()
	delete(d.sessions, req.CallID)
	d.mu.Unlock()
	if err := os.Remove(d.spoolPath(req.CallID)); err != nil && !errors.Is(err, os.ErrNotExist) {
		d.cfg.Log.Error(err, "removing spooled recording", "call", req.CallID)
	}
}
