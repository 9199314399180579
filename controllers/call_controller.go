package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrl "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/analysis"
	"github.com/switchboard-dev/switchboard/internal/callid"
	"github.com/switchboard-dev/switchboard/internal/callpolicy"
	"github.com/switchboard-dev/switchboard/internal/directory"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/numberlists"
	"github.com/switchboard-dev/switchboard/internal/quota"
	"github.com/switchboard-dev/switchboard/internal/recording"
	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/webhook/deliveries"
)

// CallReconciler moves Calls through their lifecycle on a carrier:
// queued -> in_progress -> ended (then recording, then analysis), or
// queued -> failed. Each step is one status patch; every step can be
// repeated safely, so a restart at any point loses nothing and sticks nowhere.
type CallReconciler struct {
	client.Client
	Directory  Agents
	Numbers    *numberlists.Index
	Dialer     telephony.Dialer
	Recordings recording.Store
	// RecordingMaxBytes is the bound of one call's recording
	// (--recording-max-bytes; 0: none): a recording that reached it is
	// said to be cut.
	RecordingMaxBytes int64
	// RecordingQuota refuses the recordings of an organization over its
	// storage quota (quota.RecordingStorage); nil: none.
	RecordingQuota RecordingQuota
	// Analyzer writes the post-call analysis; analysis.Rules when nil.
	Analyzer analysis.Analyzer
	Events   events.EventRecorder
	Clock    clock.PassiveClock
	// MaxConcurrent bounds how many Calls are reconciled at once.
	MaxConcurrent int
	// Live reads a Call the cache has not caught up on.
	Live client.Reader
	// Wake receives Calls the carrier has news of (a SIP call answered or
	// ended, trunk capacity freed); optional.
	Wake <-chan event.GenericEvent
	// History keeps finished calls once they leave the cluster, and when
	// each call was first dialed.
	History CallHistory
	// Webhooks queues the deliveries of the events a call reaches.
	Webhooks CallEvents
	// Retention is how long a finished, archived Call stays in the
	// cluster (kubectl get calls) before it is deleted.
	Retention time.Duration
	// Quota holds Calls that did not come through the REST API to their
	// organization's limits, and events to its endpoint limit (nil: none).
	Quota Admission
	// Worker, when set, is this replica's worker name: the reconciler runs
	// on every replica and takes only the Calls labelled with it
	// (switchboard.dev/worker). Empty: every Call, on the leader.
	Worker string

	writes   ownWrites
	archived archived
	// unsaved holds transcripts the history store could not take when the
	// call ended, until the call is archived (see storeTranscript).
	unsaved sync.Map
}

// +kubebuilder:rbac:groups=switchboard.dev,resources=calls,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=switchboard.dev,resources=calls/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=switchboard.dev,resources=agents,verbs=get;list;watch
// +kubebuilder:rbac:groups=switchboard.dev,resources=numberlists,verbs=get;list;watch
// +kubebuilder:rbac:groups=switchboard.dev,resources=webhookendpoints,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Agents finds the Agent a Call names (directory.Directory).
type Agents interface {
	// CachedAgent reads the cache: enough to configure a dial.
	CachedAgent(ctx context.Context, namespace, id string) (*switchboardv1.Agent, error)
	// AgentConfirmed reads the apiserver on a cache miss: before a Call
	// fails for want of its agent.
	AgentConfirmed(ctx context.Context, namespace, id string) (*switchboardv1.Agent, error)
}

// CallHistory is what the call reconciler keeps in the history store:
// finished calls (archive, then delete), the first dial of each call, so
// that none is dialed twice, and each connected call's transcript.
type CallHistory interface {
	SaveCall(ctx context.Context, c *switchboardv1.Call) error
	CallVersion(ctx context.Context, namespace, id string) (string, error)
	DialedAt(ctx context.Context, namespace, callID string) (at time.Time, ok bool, err error)
	SaveTranscript(ctx context.Context, namespace, callID string, t history.Transcript) error
	// Write stores what one pass stores before the Call's status (its
	// dial, its transcript, the deliveries of its events) in one
	// transaction.
	Write(ctx context.Context, w *history.Writes) error
}

// RecordingQuota says whether an organization may store one more
// recording (quota.RecordingStorage).
type RecordingQuota interface {
	Check(ctx context.Context, ns string) (*quota.Exceeded, error)
}

// Admission holds Calls applied with kubectl to their organization's
// limits (quota.Admission).
type Admission interface {
	AdmitApplied(ctx context.Context, c *switchboardv1.Call) (*quota.Exceeded, error)
}

// CallEvents makes the webhook deliveries of the events a call reaches
// (deliveries.Emitter): Pending before the call's state is stored (the
// reconciler queues them with the pass's other writes), Wake the delivery
// worker once it is.
type CallEvents interface {
	Pending(ctx context.Context, c *switchboardv1.Call) ([]*history.Delivery, []string, error)
	Wake()
}

// passWrites is what one pass stores in the history store before it
// writes the Call's status, in one transaction (history.Writes): the dial,
// the transcript, the deliveries of the events reached.
type passWrites struct {
	history.Writes
	dialed     bool
	transcript *history.Transcript
}

// Reconcile advances one Call by one step.
func (r *CallReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var call switchboardv1.Call
	if err := r.Get(ctx, req.NamespacedName, &call); err != nil {
		if apierrors.IsNotFound(err) {
			r.writes.forget(req.NamespacedName)
			r.archived.forget(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if r.Worker != "" && call.Labels[switchboardv1.WorkerLabel] != r.Worker {
		return r.letGo(ctx, &call)
	}
	if behind, err := r.writes.behind(ctx, r.Live, &call); behind || err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	done := finished(&call)
	if onlyArchiveLeft(&call) {
		return r.archive(ctx, &call)
	}
	before := call.DeepCopy()
	status := newStatusPatcher(r.Client, &call)
	var result reconcile.Result
	var err error
	writes := &passWrites{}
	if !done {
		result, err = r.step(ctx, &call, writes)
	}
	// The deliveries of the state reached are queued before the status
	// that records it, in the same pass, so that no event is lost to a
	// crash in between; a delivery waits until its call's state is stored,
	// and the worker is woken once it is.
	queued, emitErr := r.store(ctx, &call, writes)
	err = errors.Join(err, emitErr)
	call.Status.ObservedGeneration = call.Generation
	if perr := r.patchStatus(ctx, &call, status); perr != nil {
		return reconcile.Result{}, errors.Join(err, perr)
	}
	observeTransition(before, &call)
	if queued {
		r.Webhooks.Wake()
	}
	if !done && finished(&call) {
		// Only now that the analysis is stored may the carrier drop the
		// audio and transcript it would be redone from.
		r.Dialer.Release(ctx, r.request(ctx, &call))
	}
	if err == nil && finished(&call) {
		return r.archive(ctx, &call)
	}
	return result, err
}

// letGo drops a Call that is no longer this worker's: the leader moved it
// because this worker's Lease lapsed (cut off from the apiserver, say),
// and ended it if it was live. What this worker still has of it on the
// wire is hung up; the worker it moved to finishes it.
func (r *CallReconciler) letGo(ctx context.Context, c *switchboardv1.Call) (reconcile.Result, error) {
	r.writes.forget(client.ObjectKeyFromObject(c))
	if c.Status.Phase == switchboardv1.CallInProgress || c.Status.DisconnectionReason == telephony.WorkerLost {
		if err := r.Dialer.Hangup(ctx, r.request(ctx, c)); err != nil {
			logf.FromContext(ctx).V(1).Info("hanging up a call moved to another worker", "error", err.Error())
		}
	}
	return reconcile.Result{}, nil
}

// patchStatus writes the status unless nothing changed, and remembers the
// version written so that a stale cache read of it is not reconciled.
func (r *CallReconciler) patchStatus(ctx context.Context, c *switchboardv1.Call, status *statusPatcher) error {
	wrote, err := status.patch(ctx, c)
	if wrote {
		r.writes.record(c)
	}
	return err
}

// finished: final and nothing left to do after the end.
func finished(c *switchboardv1.Call) bool { return c.Processed() }

func (r *CallReconciler) step(ctx context.Context, c *switchboardv1.Call, w *passWrites) (reconcile.Result, error) {
	if c.Status.CallID == "" {
		c.Status.CallID = callid.Of(c)
	}
	switch c.CurrentPhase() {
	case switchboardv1.CallQueued:
		if c.Spec.Stop {
			return reconcile.Result{}, r.cancel(ctx, c)
		}
		return r.reconcileDial(ctx, c, w)
	case switchboardv1.CallInProgress:
		if c.Spec.Stop {
			if err := r.hangup(ctx, c); err != nil {
				return reconcile.Result{}, err
			}
		}
		return r.reconcileProgress(ctx, c, w)
	case switchboardv1.CallEnded:
		return r.reconcilePostCall(ctx, c, w)
	default: // refused by the REST API: record why, never dial
		failure := c.Refusal()
		if failure == nil {
			failure = c.Status.Failure
		}
		if failure == nil {
			failure = &switchboardv1.CallFailure{ErrorCode: "unknown", Message: "The call failed."}
		}
		r.markFailed(c, failure.ErrorCode, failure.Message)
		return reconcile.Result{}, nil
	}
}

// cancel fails a call that was stopped before it was dialed: it never is.
// The carrier may be preparing it (its script) and is told to give up; a
// carrier that is off has nothing to give up.
func (r *CallReconciler) cancel(ctx context.Context, c *switchboardv1.Call) error {
	err := r.Dialer.Hangup(ctx, r.request(ctx, c))
	if _, off := telephony.AsDispatchError(err); err != nil && !off {
		return fmt.Errorf("canceling: %w", err)
	}
	r.markFailed(c, canceledReason, "The call was stopped before it was dialed.")
	c.Status.DisconnectionReason = canceledReason
	return nil
}

// canceledReason is the disconnection reason (and failure code) of a call
// stopped before it was dialed.
const canceledReason = "canceled"

// hangup asks the carrier to end a placed call that was stopped, at the
// time the stop was asked for (kept in the status, so that a restart ends
// it at the same time). Progress then reports it ended.
func (r *CallReconciler) hangup(ctx context.Context, c *switchboardv1.Call) error {
	if c.Status.StoppedAt == nil {
		c.Status.StoppedAt = ptr(metav1.NewMicroTime(r.stopTime(c)))
		r.Events.Eventf(c, nil, corev1.EventTypeNormal, "Stopping", "Hangup", "Hanging up: the call was stopped")
	}
	if err := r.Dialer.Hangup(ctx, r.request(ctx, c)); err != nil {
		return fmt.Errorf("hanging up: %w", err)
	}
	return nil
}

// stopTime is when the call was asked to stop: the REST API's time of the
// request, so that a reconciler that gets to it late (after the call's
// natural end) still ends it as api_hangup, else now. It is never before
// the call went out (a stop sent while the call was queued that arrived
// after its dial) nor after now (another replica's clock ahead of ours).
func (r *CallReconciler) stopTime(c *switchboardv1.Call) time.Time {
	now := r.Clock.Now()
	requested, ok := c.StopRequestedAt()
	if !ok || !requested.Before(now) {
		return now
	}
	if c.Status.StartedAt != nil && requested.Before(c.Status.StartedAt.Time) {
		return c.Status.StartedAt.Time
	}
	return requested
}

// admit holds a Call Switchboard did not admit (one applied with kubectl;
// the REST API and the dashboard admit theirs as they place them)
// to the limits the API holds its calls to, the first time it is seen:
// size, create rate and active calls. One over a limit fails at once and
// is never dialed; refused says so.
func (r *CallReconciler) admit(ctx context.Context, c *switchboardv1.Call) (refused bool, err error) {
	if c.Spec.Source == switchboardv1.SourceAPI || c.Spec.Source == switchboardv1.SourceDashboard ||
		apimeta.FindStatusCondition(c.Status.Conditions, switchboardv1.ReadyCondition) != nil {
		return false, nil
	}
	var vars, metadata json.RawMessage
	if c.Spec.Variables != nil {
		vars = c.Spec.Variables.Raw
	}
	if c.Spec.Metadata != nil {
		metadata = c.Spec.Metadata.Raw
	}
	if rej := callpolicy.CheckSize(vars, metadata); rej != nil {
		r.markFailed(c, rej.Code, rej.Message)
		return true, nil
	}
	if r.Quota == nil {
		return false, nil
	}
	exceeded, err := r.Quota.AdmitApplied(ctx, c)
	if err != nil || exceeded == nil {
		return false, err
	}
	r.markFailed(c, exceeded.Code, exceeded.Message)
	return true, nil
}

// reconcileDial runs the same policy as the REST API (Calls applied with
// kubectl never met it, and lists may have changed), then dials.
func (r *CallReconciler) reconcileDial(ctx context.Context, c *switchboardv1.Call, w *passWrites) (reconcile.Result, error) {
	if refused, err := r.admit(ctx, c); refused || err != nil {
		return reconcile.Result{}, err
	}
	agent, err := r.Directory.AgentConfirmed(ctx, c.Namespace, c.Spec.AgentID)
	if errors.Is(err, directory.ErrNotFound) || errors.Is(err, directory.ErrAmbiguous) {
		r.markFailed(c, callpolicy.CodeAgentNotFound, fmt.Sprintf("No single agent %s in this namespace.", c.Spec.AgentID))
		return reconcile.Result{}, nil
	} else if err != nil {
		return reconcile.Result{}, err
	}
	vars := variables(c)
	if rej := callpolicy.Check(agent, callpolicy.Request{Namespace: c.Namespace, ToNumber: c.Spec.ToNumber,
		FromNumber: c.Spec.FromNumber, Variables: vars}, r.Numbers); rej != nil {
		r.markFailed(c, rej.Code, rej.Message)
		return reconcile.Result{}, nil
	}
	from := agent.Spec.FromNumber
	placedAt := r.Clock.Now()
	req := telephony.BuildRequest(c, from, vars, agent)
	if at, dialed := r.dialedBefore(ctx, c); dialed {
		// A leader dialed it and stopped before recording it here: the
		// call goes on from that dial (or ends as cut off), never rung twice.
		r.markDialed(c, req, from, at)
		return r.reconcileProgress(ctx, c, w)
	}
	if err := r.Dialer.Dial(ctx, req, placedAt); err != nil {
		if we, ok := telephony.AsWaitError(err); ok {
			reason := switchboardv1.ReasonWaitingForTrunk
			if we.Preparing {
				reason = switchboardv1.ReasonPreparingScript
			}
			r.setReady(c, metav1.ConditionFalse, reason, "Queued: "+we.Reason+".")
			return reconcile.Result{RequeueAfter: we.RetryAfter}, nil
		}
		de, ok := telephony.AsDispatchError(err)
		if !ok {
			return reconcile.Result{}, fmt.Errorf("dialing: %w", err)
		}
		r.markFailed(c, de.Code, "The carrier could not place the call: "+de.Reason)
		return reconcile.Result{}, nil
	}
	w.RecordDial(c.Namespace, callid.Of(c), placedAt)
	w.dialed = true
	r.markDialed(c, req, from, placedAt)
	r.Events.Eventf(c, nil, corev1.EventTypeNormal, "Dialing", "Dial", "Calling %s from %s", c.Spec.ToNumber, from)
	return r.reconcileProgress(ctx, c, w)
}

func (r *CallReconciler) markDialed(c *switchboardv1.Call, req telephony.Request, from string, at time.Time) {
	c.Status.Phase = switchboardv1.CallInProgress
	c.Status.Trunk = req.Trunk
	c.Status.FromNumber = from
	c.Status.StartedAt = ptr(metav1.NewMicroTime(at))
	r.setReady(c, metav1.ConditionFalse, switchboardv1.ReasonInProgress, "The call is ringing or connected.")
}

// dialedBefore reports a dial recorded for a Call that is still queued here:
// one a previous leader made.
func (r *CallReconciler) dialedBefore(ctx context.Context, c *switchboardv1.Call) (time.Time, bool) {
	at, ok, err := r.History.DialedAt(ctx, c.Namespace, callid.Of(c))
	if err != nil {
		logf.FromContext(ctx).Error(err, "reading whether a queued call was dialed; dialing it")
		return time.Time{}, false
	}
	return at, ok
}

func (r *CallReconciler) reconcileProgress(ctx context.Context, c *switchboardv1.Call, w *passWrites) (reconcile.Result, error) {
	req := r.request(ctx, c)
	p, err := r.Dialer.Progress(ctx, req, c.Status.StartedAt.Time, r.Clock.Now())
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("reading call progress: %w", err)
	}
	if p.Phase == telephony.Connected && p.AnsweredAt != nil && c.Status.AnsweredAt == nil && req.Trunk != "" {
		// A live SIP call is lost if the operator restarts: the answer is
		// stored so that it then ends as answered. (The simulated carrier
		// derives everything from startedAt and needs no extra write.)
		c.Status.AnsweredAt = ptr(metav1.NewMicroTime(*p.AnsweredAt))
		r.Events.Eventf(c, nil, corev1.EventTypeNormal, "Answered", "Answer", "The call was answered")
	}
	if p.Phase != telephony.Ended {
		return reconcile.Result{RequeueAfter: max(p.NextCheck, 10*time.Millisecond)}, nil
	}
	if p.AnsweredAt != nil && req.Trunk != "" {
		c.Status.AnsweredAt = ptr(metav1.NewMicroTime(*p.AnsweredAt))
	}
	c.Status.Phase = switchboardv1.CallEnded
	c.Status.Disposition = p.Disposition
	c.Status.EndedAt = ptr(metav1.NewMicroTime(*p.EndedAt))
	c.Status.DurationMS = ptr(p.Duration.Milliseconds())
	c.Status.Duration = p.Duration.Round(time.Second).String()
	c.Status.DisconnectionReason = disconnectionReason(c, p)
	r.recordTransfer(c, p)
	reason := switchboardv1.ReasonAwaitingAnalysis
	if p.Disposition.Connected() {
		reason = switchboardv1.ReasonAwaitingRecording
	}
	r.setReady(c, metav1.ConditionFalse, reason, "The call ended; post-call processing is under way.")
	r.Events.Eventf(c, nil, corev1.EventTypeNormal, "Ended", "Hangup", "Call ended: %s (%s) after %s",
		p.Disposition, p.DisconnectionReason, c.Status.Duration)
	if p.Detail != "" { // a bot's stream, or a conversation's engine, failed: say how
		r.Events.Eventf(c, nil, corev1.EventTypeWarning, failureEvent(p.DisconnectionReason), "Hangup", "%s", p.Detail)
	}
	// The post-call steps usually complete at once; doing them in the same
	// pass saves the apiserver a status write per call. If one fails, the
	// end is written all the same and they are retried.
	return r.reconcilePostCall(ctx, c, w)
}

// recordTransfer keeps the call's transfer in its status (kubectl get
// calls -o wide shows its result and target) and tells an operator on
// call how it went. It is written with the end, in the same status write.
func (r *CallReconciler) recordTransfer(c *switchboardv1.Call, p telephony.Progress) {
	if p.Transfer == nil {
		return
	}
	t := p.Transfer.Status()
	c.Status.Transfer = t
	if t.Result.Succeeded() {
		r.Events.Eventf(c, nil, corev1.EventTypeNormal, "Transferred", "Transfer", "Transferred to %s (%s, %s): %s",
			t.To, t.Mode, t.Method, t.Result)
		return
	}
	r.Events.Eventf(c, nil, corev1.EventTypeWarning, "TransferFailed", "Transfer", "Transfer to %s (%s, %s) %s: %s",
		t.To, t.Mode, t.Method, t.Result, t.Detail)
}

// disconnectionReason is why the carrier says the call ended, unless that
// end came after the stop was asked for: a SIP callee's BYE that beat our
// hangup to the carrier leaves the stop's 202 standing, as api_hangup.
func disconnectionReason(c *switchboardv1.Call, p telephony.Progress) string {
	if c.Status.StoppedAt != nil && !p.EndedAt.Before(c.Status.StoppedAt.Time) {
		return telephony.APIHangup
	}
	return p.DisconnectionReason
}

// reconcilePostCall stores the recording and analyzes the call. Both are
// idempotent, so a failure in between redoes the recording (same key).
func (r *CallReconciler) reconcilePostCall(ctx context.Context, c *switchboardv1.Call, w *passWrites) (reconcile.Result, error) {
	req := r.request(ctx, c)
	p := endedProgress(c)
	if p.Disposition.Connected() && c.Status.Recording == nil {
		if err := r.storeRecording(ctx, c, req, p); err != nil {
			return reconcile.Result{}, err
		}
	}
	var transcript []telephony.Turn
	if p.Disposition.Connected() {
		t, err := r.Dialer.Transcript(ctx, req, p)
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("reading transcript: %w", err)
		}
		transcript = t
		w.transcript = &history.Transcript{StoredAt: r.Clock.Now(), Turns: t}
	}
	analyzer := r.Analyzer
	if analyzer == nil {
		analyzer = analysis.Rules{}
	}
	res, err := analyzer.Analyze(ctx, req, p, transcript)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("analyzing: %w", err)
	}
	if res.Fallback != "" {
		r.Events.Eventf(c, nil, corev1.EventTypeWarning, "AnalysisFallback", "Analyze", "%s", res.Fallback)
	}
	data, err := extractedValues(req.Fields, res.ExtractedData)
	if err != nil {
		return reconcile.Result{}, err
	}
	now := metav1.NewTime(r.Clock.Now())
	c.Status.Analysis = &switchboardv1.CallAnalysis{Summary: res.Summary, ExtractedData: data, AnalyzedAt: &now}
	r.setReady(c, metav1.ConditionTrue, switchboardv1.ReasonCompleted, res.Summary)
	r.Events.Eventf(c, nil, corev1.EventTypeNormal, "Analyzed", "Analyze", "%s", res.Summary)
	return reconcile.Result{}, nil
}

// store writes, in one transaction, what the pass stores before the
// Call's status: the dial (before its status, so that a leader that stops
// in between leaves the record to the next one, and even when the
// reconcile is being cancelled), the transcript (never on the Call: the
// apiserver's write budget), and the deliveries of the events reached,
// which it then notes as emitted. A store that does not answer holds up
// only the events, which wait for a later pass: the dial record is a
// guard, not a step, and the transcript waits in memory until the call is
// archived, which retries until the store is back (lost only if the
// operator restarts meanwhile, as the carrier has let it go). The store
// keeps the first transcript and dial written, so a pass redone after a
// failure or a restart changes neither.
func (r *CallReconciler) store(ctx context.Context, c *switchboardv1.Call, w *passWrites) (queued bool, err error) {
	ds, kinds, err := r.Webhooks.Pending(ctx, c)
	if err == nil {
		err = w.EnqueueDeliveries(ds)
	}
	if err != nil {
		ds, kinds = nil, nil // the events wait; the rest is stored
	}
	if w.transcript != nil {
		if terr := w.SaveTranscript(c.Namespace, callid.Of(c), *w.transcript); terr != nil {
			r.unsaved.Store(client.ObjectKeyFromObject(c), *w.transcript)
		}
	}
	if werr := r.History.Write(context.WithoutCancel(ctx), &w.Writes); werr != nil {
		r.unstored(ctx, c, w, werr)
		if len(kinds) > 0 {
			err = errors.Join(err, fmt.Errorf("queuing %d deliveries: %w", len(ds), werr))
		}
		return false, err
	}
	if len(kinds) > 0 {
		deliveries.Emitted(c, kinds)
	}
	return len(ds) > 0, err
}

// unstored keeps what a pass could not store: the transcript until the
// call is archived; a lost dial record is only said.
func (r *CallReconciler) unstored(ctx context.Context, c *switchboardv1.Call, w *passWrites, cause error) {
	if w.transcript != nil {
		r.unsaved.Store(client.ObjectKeyFromObject(c), *w.transcript)
	}
	if w.dialed {
		logf.FromContext(ctx).Error(cause, "recording a dial; a leader change before its status is written could dial it again")
	}
}

// saveUnsavedTranscript writes the transcript storeTranscript kept, if any.
func (r *CallReconciler) saveUnsavedTranscript(ctx context.Context, c *switchboardv1.Call) error {
	key := client.ObjectKeyFromObject(c)
	t, ok := r.unsaved.Load(key)
	if !ok {
		return nil
	}
	if err := r.History.SaveTranscript(ctx, c.Namespace, callid.Of(c), t.(history.Transcript)); err != nil {
		return fmt.Errorf("storing transcript: %w", err)
	}
	r.unsaved.Delete(key)
	return nil
}

// extractedValues lists the analysis in the agent's field order.
func extractedValues(fields []telephony.Field, data map[string]any) ([]switchboardv1.ExtractedValue, error) {
	out := make([]switchboardv1.ExtractedValue, 0, len(fields))
	for _, f := range fields {
		v := switchboardv1.ExtractedValue{Name: f.Name}
		if data[f.Name] != nil {
			raw, err := json.Marshal(data[f.Name])
			if err != nil {
				return nil, fmt.Errorf("encoding extracted %s: %w", f.Name, err)
			}
			v.Value = &apiextensionsv1.JSON{Raw: raw}
		}
		out = append(out, v)
	}
	return out, nil
}

func (r *CallReconciler) storeRecording(ctx context.Context, c *switchboardv1.Call, req telephony.Request, p telephony.Progress) error {
	if r.RecordingQuota != nil {
		over, err := r.RecordingQuota.Check(ctx, c.Namespace)
		if err != nil {
			return err
		}
		if over != nil {
			recordingsLimited.WithLabelValues(limitOrganizationQuota).Inc()
			r.Events.Eventf(c, nil, corev1.EventTypeWarning, "RecordingNotStored", "Record", "%s", over.Message)
			return nil
		}
	}
	audio, err := r.Dialer.Recording(ctx, req, p)
	if errors.Is(err, telephony.ErrNoRecording) {
		r.Events.Eventf(c, nil, corev1.EventTypeWarning, "RecordingLost", "Record",
			"The call has no recording: %s", c.Status.DisconnectionReason)
		return nil
	} else if err != nil {
		return fmt.Errorf("fetching recording: %w", err)
	}
	defer func() { _ = audio.Close() }()
	key := c.Namespace + "/" + c.Status.CallID + ".wav"
	obj, err := r.Recordings.Put(ctx, key, "audio/wav", audio)
	if err != nil {
		return fmt.Errorf("storing recording: %w", err)
	}
	now := metav1.NewTime(r.Clock.Now())
	c.Status.Recording = &switchboardv1.CallRecording{Key: obj.Key, ContentType: obj.ContentType,
		SizeBytes: obj.SizeBytes, StoredAt: &now}
	r.setReady(c, metav1.ConditionFalse, switchboardv1.ReasonAwaitingAnalysis, "The recording is stored; analysis is under way.")
	r.Events.Eventf(c, nil, corev1.EventTypeNormal, "RecordingStored", "Record", "Recording stored (%d bytes)", obj.SizeBytes)
	if r.reachedBound(obj.SizeBytes) {
		recordingsLimited.WithLabelValues(limitCallSize).Inc()
		r.Events.Eventf(c, nil, corev1.EventTypeWarning, "RecordingTruncated", "Record",
			"The recording reached its bound of %d bytes (--recording-max-bytes): the call went on, unrecorded from there.",
			r.RecordingMaxBytes)
	}
	return nil
}

// reachedBound says a recording of size bytes stopped at
// RecordingMaxBytes: it is within one stereo frame (4 bytes) of it.
func (r *CallReconciler) reachedBound(size int64) bool {
	return r.RecordingMaxBytes > 0 && size+4 > r.RecordingMaxBytes
}

func (r *CallReconciler) markFailed(c *switchboardv1.Call, code, msg string) {
	c.Status.Phase = switchboardv1.CallFailed
	c.Status.Failure = &switchboardv1.CallFailure{ErrorCode: code, Message: msg}
	r.setReady(c, metav1.ConditionFalse, switchboardv1.ReasonFailed, code+": "+msg)
	r.Events.Eventf(c, nil, corev1.EventTypeWarning, "Failed", "Dial", "%s: %s", code, msg)
}

func (r *CallReconciler) setReady(c *switchboardv1.Call, status metav1.ConditionStatus, reason, msg string) {
	apimeta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: switchboardv1.ReadyCondition,
		Status: status, Reason: reason, Message: msg, ObservedGeneration: c.Generation})
}

// request rebuilds what was dialed. The agent may be gone by now; the call
// then carries on without its script.
func (r *CallReconciler) request(ctx context.Context, c *switchboardv1.Call) telephony.Request {
	agent, err := r.Directory.CachedAgent(ctx, c.Namespace, c.Spec.AgentID)
	if err != nil {
		agent = nil
	}
	return telephony.BuildRequest(c, c.Status.FromNumber, variables(c), agent)
}

// endedProgress is the carrier's final word, as persisted in the status.
func endedProgress(c *switchboardv1.Call) telephony.Progress {
	p := telephony.Progress{Phase: telephony.Ended, Disposition: c.Status.Disposition,
		DisconnectionReason: c.Status.DisconnectionReason}
	if c.Status.EndedAt != nil {
		p.EndedAt = &c.Status.EndedAt.Time
	}
	if c.Status.DurationMS != nil {
		p.Duration = time.Duration(*c.Status.DurationMS) * time.Millisecond
	}
	return p
}

func variables(c *switchboardv1.Call) map[string]any {
	vars := map[string]any{}
	if c.Spec.Variables != nil {
		_ = json.Unmarshal(c.Spec.Variables.Raw, &vars) // the schema holds an object
	}
	return vars
}

func ptr[T any](v T) *T { return &v }

// SetupWithManager registers the reconciler. Unlike the other kinds, Calls
// are not filtered with GenerationChangedPredicate: a Call's spec never
// changes, and each status write is what moves it to its next step, read
// back from the cache rather than from a requeue racing the cache. A Call
// that is final and fully processed returns at once.
func (r *CallReconciler) SetupWithManager(mgr manager.Manager) error {
	if r.Live == nil || r.History == nil {
		return errors.New("call reconciler needs a live reader and the history store")
	}
	opts := ctrl.Options{MaxConcurrentReconciles: max(r.MaxConcurrent, 1)}
	var calls []builder.WatchesOption
	if r.Worker != "" {
		// Every replica carries the calls assigned to it.
		opts.NeedLeaderElection = ptr(false)
		calls = append(calls, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetLabels()[switchboardv1.WorkerLabel] == r.Worker
		})))
	}
	b := builder.ControllerManagedBy(mgr).
		Watches(&switchboardv1.Call{}, callEvents(), calls...).
		WithOptions(opts).
		Named("call")
	if r.Wake != nil {
		b = b.WatchesRawSource(source.Channel(r.Wake, &handler.EnqueueRequestForObject{}))
	}
	return b.Complete(r)
}

// failureEvent is the reason of the Warning Event that says how an agent's
// peer failed: the organization's model or Retell server
// (ConversationFailed), or its bot's stream (StreamFailed).
func failureEvent(disconnectionReason string) string {
	if strings.HasPrefix(disconnectionReason, "error_llm") {
		return "ConversationFailed"
	}
	return "StreamFailed"
}
