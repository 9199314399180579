package controllers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/directory"
	"github.com/switchboard-dev/switchboard/internal/egress"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts"
)

// DefaultVoiceProbeInterval is how often an Agent's voice server is
// probed while the Agent stays unchanged.
const DefaultVoiceProbeInterval = 60 * time.Second

// AgentReconciler resolves each Agent's agent_id and reports whether it can
// be used: its namespace must be an organization (or no API key can place
// its calls), and two Agents of one namespace must not share an id. It
// also probes the Agent's voice server, if it has one
// (VoiceServerReachable).
type AgentReconciler struct {
	client.Client
	Organizations *OrganizationCheck
	// VoicePolicy guards the voice servers' URLs, as the calls' voices do
	// (the model policy: --dev, --allow-private-model-hosts).
	VoicePolicy egress.URLPolicy
	// VoiceProbeInterval defaults to DefaultVoiceProbeInterval;
	// VoiceProbeTimeout to tts.DefaultProbeTimeout.
	VoiceProbeInterval time.Duration
	VoiceProbeTimeout  time.Duration
	// Clock defaults to the real clock.
	Clock clock.PassiveClock

	once      sync.Once
	transport http.RoundTripper // guarded by VoicePolicy, shared by the probes
	// voiceProbes remembers each Agent's last probe (types.NamespacedName ->
	// voiceProbe), so that only a changed Agent, or the interval, brings
	// another one.
	voiceProbes sync.Map
}

// voiceProbe is what an Agent's voice server looked like when probed.
type voiceProbe struct {
	generation int64
	url        string
	at         time.Time
}

// +kubebuilder:rbac:groups=switchboard.dev,resources=agents,verbs=get;list;watch
// +kubebuilder:rbac:groups=switchboard.dev,resources=agents/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=switchboard.dev,resources=siptrunks,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile sets status.agentID and the Ready condition.
func (r *AgentReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var agent switchboardv1.Agent
	if err := r.Get(ctx, req.NamespacedName, &agent); err != nil {
		if apierrors.IsNotFound(err) {
			r.voiceProbes.Delete(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	status := newStatusPatcher(r.Client, &agent)
	id := directory.NormalizeAgentID(agent.ResolvedID())
	agent.Status.AgentID = id
	cond, err := r.readiness(ctx, &agent, id)
	if err != nil {
		return reconcile.Result{}, err
	}
	was := readyReasonOf(agent.Status.Conditions)
	apimeta.SetStatusCondition(&agent.Status.Conditions, cond)
	recheck, err := r.checkVoiceServer(ctx, &agent)
	if err != nil {
		return reconcile.Result{}, err
	}
	agent.Status.ObservedGeneration = agent.Generation
	if _, err = status.patch(ctx, &agent); err != nil {
		return reconcile.Result{}, err
	}
	r.Organizations.warn(&agent, was, &cond)
	if cond.Reason == switchboardv1.ReasonSecretAccessDenied {
		// No watch tells of the RoleBinding that ends it.
		recheck = minWait(recheck, accessRecheckInterval)
	}
	return reconcile.Result{RequeueAfter: recheck}, nil
}

// checkVoiceServer sets the VoiceServerReachable condition: removed
// without a server; else from a probe when the Agent changed or the last
// probe is VoiceProbeInterval old, and kept as it is in between. It
// returns when to probe next (0: never). A server that is unreachable
// leaves the Agent Ready: its lines are said in the embedded voice.
func (r *AgentReconciler) checkVoiceServer(ctx context.Context, agent *switchboardv1.Agent) (time.Duration, error) {
	key := types.NamespacedName{Namespace: agent.Namespace, Name: agent.Name}
	if agent.Spec.Voice == nil || agent.Spec.Voice.Server == nil {
		r.voiceProbes.Delete(key)
		apimeta.RemoveStatusCondition(&agent.Status.Conditions, switchboardv1.VoiceServerReachableCondition)
		return 0, nil
	}
	srvURL := agent.Spec.Voice.Server.URL
	interval := cmp.Or(r.VoiceProbeInterval, DefaultVoiceProbeInterval)
	now := r.clock().Now()
	if v, ok := r.voiceProbes.Load(key); ok {
		last := v.(voiceProbe)
		known := apimeta.FindStatusCondition(agent.Status.Conditions, switchboardv1.VoiceServerReachableCondition) != nil
		if wait := interval - now.Sub(last.at); known && wait > 0 &&
			last.generation == agent.Generation && last.url == srvURL {
			return wait, nil
		}
	}
	r.once.Do(func() { r.transport = egress.GuardedTransport(r.VoicePolicy) })
	cond := metav1.Condition{Type: switchboardv1.VoiceServerReachableCondition, Status: metav1.ConditionTrue,
		Reason: switchboardv1.ReasonVoiceServerReachable, ObservedGeneration: agent.Generation,
		Message: "The voice server answers: the agent speaks in its voice."}
	err := tts.Probe(ctx, r.VoicePolicy, r.transport, srvURL, r.VoiceProbeTimeout)
	var perr *tts.ProbeError
	switch {
	case errors.As(err, &perr):
		cond.Status, cond.Reason = metav1.ConditionFalse, switchboardv1.ReasonVoiceServerUnreachable
		cond.Message = fmt.Sprintf("The voice server at %s is unreachable: %s. The agent speaks in the embedded voice until it answers.",
			hostOf(srvURL), perr.Error())
	case err != nil:
		return 0, err // the reconcile's ctx ended
	}
	r.voiceProbes.Store(key, voiceProbe{generation: agent.Generation, url: srvURL, at: now})
	apimeta.SetStatusCondition(&agent.Status.Conditions, cond)
	return interval, nil
}

// hostOf is the host of a URL, or "its URL" when it has none: neither its
// path nor query, which may hold a key, is shown.
func hostOf(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		return u.Host
	}
	return "its URL"
}

// minWait is the sooner of two requeue delays, 0 meaning none.
func minWait(a, b time.Duration) time.Duration {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

func (r *AgentReconciler) clock() clock.PassiveClock {
	if r.Clock == nil {
		return clock.RealClock{}
	}
	return r.Clock
}

func (r *AgentReconciler) readiness(ctx context.Context, agent *switchboardv1.Agent, id string) (metav1.Condition, error) {
	cond := metav1.Condition{Type: switchboardv1.ReadyCondition, Status: metav1.ConditionTrue,
		Reason: switchboardv1.ReasonReconciled, Message: "The agent can place calls.", ObservedGeneration: agent.Generation}
	if reason, msg, err := r.Organizations.problem(ctx, agent.Namespace); err != nil || reason != "" {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, reason, msg
		return cond, err
	}
	var same switchboardv1.AgentList
	if err := r.List(ctx, &same, client.InNamespace(agent.Namespace),
		client.MatchingFields{directory.AgentIDField: id}); err != nil {
		return cond, err
	}
	var others []string
	for _, other := range same.Items {
		if other.Name != agent.Name {
			others = append(others, other.Name)
		}
	}
	if len(others) > 0 {
		// Sorted, so the message is stable and rewriting it settles.
		slices.Sort(others)
		cond.Status, cond.Reason = metav1.ConditionFalse, switchboardv1.ReasonDuplicateAgentID
		cond.Message = fmt.Sprintf("Agents %s also resolve to agent_id %s; calls to it are refused until only one does (change spec.id).",
			strings.Join(others, ", "), id)
		return cond, nil
	}
	if missing, err := r.trunkMissing(ctx, agent); err != nil || missing {
		cond.Status, cond.Reason = metav1.ConditionFalse, switchboardv1.ReasonTrunkNotFound
		cond.Message = fmt.Sprintf("SIP trunk %q does not exist in this namespace: calls are refused with dispatch_failed.",
			agent.Spec.TrunkRef.Name)
		return cond, err
	}
	switch {
	case !agent.Spec.IsActive():
		cond.Reason, cond.Message = switchboardv1.ReasonInactive, "The agent is inactive: calls are refused with agent_inactive."
	case !agent.Spec.IsOutbound():
		cond.Message = "The agent cannot place outbound calls: calls are refused with agent_not_outbound."
	}
	return cond, nil
}

// trunkMissing reports whether the agent names a SIPTrunk that does not
// exist.
func (r *AgentReconciler) trunkMissing(ctx context.Context, agent *switchboardv1.Agent) (bool, error) {
	if agent.Spec.TrunkRef == nil {
		return false, nil
	}
	var trunk switchboardv1.SIPTrunk
	err := r.Get(ctx, types.NamespacedName{Namespace: agent.Namespace, Name: agent.Spec.TrunkRef.Name}, &trunk)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	return false, err
}

// SetupWithManager registers the reconciler. A change to one Agent can
// end or start a duplicate id of another, so the namespace's Agents sharing
// its id are reconciled too; a SIPTrunk appearing or going away changes
// the readiness of the Agents naming it, and a namespace becoming an
// organization or ceasing to be one that of all its Agents. Voice server
// probes take up to VoiceProbeTimeout, hence a few reconciles at once, so
// that one dead server does not hold up other Agents.
func (r *AgentReconciler) SetupWithManager(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		For(&switchboardv1.Agent{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&switchboardv1.Agent{}, handler.EnqueueRequestsFromMapFunc(r.sameID),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&switchboardv1.SIPTrunk{}, handler.EnqueueRequestsFromMapFunc(r.namingTrunk),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(allInNamespace(r.Client,
			func() client.ObjectList { return &switchboardv1.AgentList{} })),
			builder.WithPredicates(organizationChanged)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Named("agent").
		Complete(r)
}

// namingTrunk lists the Agents whose trunkRef names the trunk o.
func (r *AgentReconciler) namingTrunk(ctx context.Context, o client.Object) []reconcile.Request {
	var agents switchboardv1.AgentList
	if err := r.List(ctx, &agents, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, a := range agents.Items {
		if a.Spec.TrunkRef != nil && a.Spec.TrunkRef.Name == o.GetName() {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: a.Namespace, Name: a.Name}})
		}
	}
	return reqs
}

func (r *AgentReconciler) sameID(ctx context.Context, o client.Object) []reconcile.Request {
	agent := o.(*switchboardv1.Agent)
	var same switchboardv1.AgentList
	if err := r.List(ctx, &same, client.InNamespace(agent.Namespace),
		client.MatchingFields{directory.AgentIDField: directory.NormalizeAgentID(agent.ResolvedID())}); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, a := range same.Items {
		if a.Name != agent.Name {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: a.Namespace, Name: a.Name}})
		}
	}
	return reqs
}
