package controllers

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/organizations"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/engine"
)

// DefaultProbeInterval is how often a SIPTrunk is sent OPTIONS.
const DefaultProbeInterval = 60 * time.Second

// trunkSecretField indexes SIPTrunks by the name of their credentials
// Secret, so that a Secret change finds the trunks using it.
const trunkSecretField = ".spec.credentialsSecretRef.name" //nolint:gosec // a field path, not a credential

// TrunkUsage tells how many calls use a trunk now.
type TrunkUsage interface {
	Usage(namespace, name string) (active, queued int)
}

// TrunkProber sends a trunk OPTIONS; *engine.Engine is one.
type TrunkProber interface {
	Probe(context.Context, engine.Trunk) engine.ProbeResult
}

// SIPTrunkReconciler reports whether each SIPTrunk works (Ready, from an
// OPTIONS probe with the trunk's credentials) and how busy it is.
type SIPTrunkReconciler struct {
	client.Client
	// Secrets reads credentials Secrets; the manager's cache holds no
	// Secrets, so this is a live reader.
	Secrets client.Reader
	// SecretChanges tells of the Secrets of organization namespaces, so
	// that a trunk whose credentials change is probed again at once.
	SecretChanges SecretSubscriber
	Prober        TrunkProber
	// Usage reports calls on each trunk; nil reports none.
	Usage  TrunkUsage
	Events events.EventRecorder
	// Clock defaults to the real clock.
	Clock clock.PassiveClock
	// ProbeInterval defaults to DefaultProbeInterval.
	ProbeInterval time.Duration
	// UsageChanged, if set, names trunks whose usage changed, to copy it
	// into their status (without probing them).
	UsageChanged <-chan event.GenericEvent
	// Registrations keeps the trunks with spec.registration registered;
	// nil leaves the Registered condition unset.
	Registrations TrunkRegistrations
	// RegistrationChanged names trunks whose registration state changed,
	// to copy it into their status.
	RegistrationChanged <-chan event.GenericEvent

	// probes remembers each trunk's last probe (types.NamespacedName ->
	// lastProbe), so that only a changed trunk or Secret, or the interval,
	// brings another one.
	probes sync.Map
}

// lastProbe is what a trunk looked like when it was last probed.
type lastProbe struct {
	generation int64
	// config is a digest of the resolved trunk, credentials included: a
	// changed Secret changes it.
	config [sha256.Size]byte
	at     time.Time
}

// +kubebuilder:rbac:groups=switchboard.dev,resources=siptrunks,verbs=get;list;watch
// +kubebuilder:rbac:groups=switchboard.dev,resources=siptrunks/status,verbs=get;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// Credentials Secrets are read in organization namespaces only, with the
// rights of config/rbac/organization_role.yaml.

// SecretSubscriber passes on Secret events; *organizations.Secrets is one.
type SecretSubscriber interface {
	Subscribe(organizations.Handler) (unsubscribe func())
}

// Reconcile probes the trunk when due and updates its status.
func (r *SIPTrunkReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var trunk switchboardv1.SIPTrunk
	if err := r.Get(ctx, req.NamespacedName, &trunk); err != nil {
		if apierrors.IsNotFound(err) {
			r.probes.Delete(req.NamespacedName)
			trunkReady.DeleteLabelValues(req.Namespace, req.Name)
			if r.Registrations != nil {
				// Deleted: its loop removes the binding.
				r.Registrations.Stop(req.NamespacedName)
			}
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if trunk.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	// The whole status: a diff would leave out activeCalls and queuedCalls
	// while they stay 0, and `kubectl get` would show a new trunk's as blanks.
	status := newWholeStatusPatcher(r.Client, &trunk)
	before := trunk.Status.DeepCopy()
	result, err := r.reconcileHealth(ctx, &trunk)
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := r.reconcileRegistration(ctx, &trunk); err != nil {
		return reconcile.Result{}, err
	}
	r.reportUsage(&trunk)
	trunk.Status.Transport = sip.EffectiveTransport(&trunk)
	trunk.Status.ObservedGeneration = trunk.Generation
	r.announce(&trunk, before)
	r.announceRegistered(&trunk, before)
	reportReady(&trunk)
	_, err = status.patch(ctx, &trunk)
	return result, err
}

// reconcileHealth resolves the trunk and probes it when due. A
// configuration error is reported and waits for the trunk or its Secret to
// change (both are watched) rather than being retried.
func (r *SIPTrunkReconciler) reconcileHealth(ctx context.Context, trunk *switchboardv1.SIPTrunk) (reconcile.Result, error) {
	key := types.NamespacedName{Namespace: trunk.Namespace, Name: trunk.Name}
	resolved, err := sip.Resolve(ctx, r.Secrets, trunk)
	var cerr *sip.ConfigError
	if errors.As(err, &cerr) {
		r.probes.Delete(key)
		setTrunkReady(trunk, metav1.ConditionFalse, cerr.Reason, cerr.Message)
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	current := lastProbe{generation: trunk.Generation, config: digest(resolved)}
	if wait := r.untilDue(key, current); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	current.at = r.clock().Now()
	res := r.Prober.Probe(ctx, resolved)
	if res.Cause != nil {
		// The system's error, for the operator: the condition says only
		// that the trunk did not answer.
		logf.FromContext(ctx).V(1).Info("SIP trunk probe failed", "error", res.Cause.Error())
	}
	r.probes.Store(key, current)
	trunk.Status.LastProbeAt = &metav1.Time{Time: current.at}
	status, reason, msg := probeCondition(res)
	setTrunkReady(trunk, status, reason, msg)
	return reconcile.Result{RequeueAfter: r.interval()}, nil
}

// untilDue is how long until the trunk needs probing: zero when it was
// never probed, or its spec or credentials changed since.
func (r *SIPTrunkReconciler) untilDue(key types.NamespacedName, current lastProbe) time.Duration {
	v, ok := r.probes.Load(key)
	if !ok {
		return 0
	}
	last := v.(lastProbe)
	if last.generation != current.generation || last.config != current.config {
		return 0
	}
	return r.interval() - r.clock().Since(last.at)
}

// probeCondition words a probe's result as the Ready condition.
func probeCondition(res engine.ProbeResult) (metav1.ConditionStatus, string, string) {
	switch {
	case res.Healthy():
		return metav1.ConditionTrue, switchboardv1.ReasonReachable,
			fmt.Sprintf("The trunk answered OPTIONS with %d %s.", res.StatusCode, res.Reason)
	case res.Refused:
		var refused *engine.AddressError
		if errors.As(res.Err, &refused) {
			return metav1.ConditionFalse, switchboardv1.ReasonAddressRefused, sip.TrunkAddressRefused(refused)
		}
		return metav1.ConditionFalse, switchboardv1.ReasonAddressRefused, errMessage(res)
	case res.TLS != nil && res.TLS.Kind == engine.TLSCertificateInvalid:
		return metav1.ConditionFalse, switchboardv1.ReasonCertificateInvalid, errMessage(res)
	case res.TLS != nil:
		return metav1.ConditionFalse, switchboardv1.ReasonTLSHandshakeFailed, errMessage(res)
	case !res.Reachable:
		return metav1.ConditionFalse, switchboardv1.ReasonUnreachable, errMessage(res)
	case res.AuthFailed:
		return metav1.ConditionFalse, switchboardv1.ReasonAuthenticationFailed, errMessage(res)
	default:
		return metav1.ConditionFalse, switchboardv1.ReasonTrunkError, errMessage(res)
	}
}

func errMessage(res engine.ProbeResult) string {
	if res.Err == nil {
		return fmt.Sprintf("The trunk answered OPTIONS with %d %s.", res.StatusCode, res.Reason)
	}
	return res.Err.Error()
}

// reportUsage copies the calls on the trunk into its status.
func (r *SIPTrunkReconciler) reportUsage(trunk *switchboardv1.SIPTrunk) {
	var active, queued int
	if r.Usage != nil {
		active, queued = r.Usage.Usage(trunk.Namespace, trunk.Name)
	}
	trunk.Status.ActiveCalls, trunk.Status.QueuedCalls = int32(active), int32(queued) //nolint:gosec // call counts
}

// announce emits an Event when Ready changed status or reason: what
// someone on call wants to see in `kubectl describe siptrunk`.
func (r *SIPTrunkReconciler) announce(trunk *switchboardv1.SIPTrunk, before *switchboardv1.SIPTrunkStatus) {
	now := apimeta.FindStatusCondition(trunk.Status.Conditions, switchboardv1.ReadyCondition)
	was := apimeta.FindStatusCondition(before.Conditions, switchboardv1.ReadyCondition)
	if r.Events == nil || now == nil || (was != nil && was.Status == now.Status && was.Reason == now.Reason) {
		return
	}
	eventType := corev1.EventTypeNormal
	if now.Status != metav1.ConditionTrue {
		eventType = corev1.EventTypeWarning
	}
	r.Events.Eventf(trunk, nil, eventType, now.Reason, "Probe", "%s", now.Message)
}

// trunkReady is 1 while a SIPTrunk is Ready (its carrier answers OPTIONS and
// accepts its credentials), 0 otherwise: the alert "trunk not ready" reads
// it.
var trunkReady = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "switchboard_siptrunk_ready",
	Help: "1 while the SIPTrunk is Ready, 0 while it is not (see its Ready condition's reason).",
}, []string{"namespace", "trunk"})

func init() { metrics.Registry.MustRegister(trunkReady) }

func reportReady(trunk *switchboardv1.SIPTrunk) {
	ready := 0.0
	if apimeta.IsStatusConditionTrue(trunk.Status.Conditions, switchboardv1.ReadyCondition) {
		ready = 1
	}
	trunkReady.WithLabelValues(trunk.Namespace, trunk.Name).Set(ready)
}

func setTrunkReady(trunk *switchboardv1.SIPTrunk, status metav1.ConditionStatus, reason, msg string) {
	apimeta.SetStatusCondition(&trunk.Status.Conditions, metav1.Condition{Type: switchboardv1.ReadyCondition,
		Status: status, Reason: reason, Message: msg, ObservedGeneration: trunk.Generation})
}

// digest fingerprints a resolved trunk without keeping its password.
func digest(t engine.Trunk) [sha256.Size]byte {
	return sha256.Sum256(fmt.Appendf(nil, "%q %q %q %q %d", t.Address, t.Transport, t.Username, t.Password, t.RingTimeout))
}

func (r *SIPTrunkReconciler) interval() time.Duration {
	if r.ProbeInterval > 0 {
		return r.ProbeInterval
	}
	return DefaultProbeInterval
}

func (r *SIPTrunkReconciler) clock() clock.PassiveClock {
	if r.Clock == nil {
		return clock.RealClock{}
	}
	return r.Clock
}

// SetupWithManager registers the reconciler. Spec changes (not status
// writes) and changes of a Secret a trunk names wake the trunk; so do
// UsageChanged events. Probes take up to engine.DefaultProbeTimeout, hence a
// few reconciles at once, so that one dead trunk does not hold up others.
func (r *SIPTrunkReconciler) SetupWithManager(ctx context.Context, mgr manager.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &switchboardv1.SIPTrunk{}, trunkSecretField, secretOfTrunk); err != nil {
		return err
	}
	b := builder.ControllerManagedBy(mgr).
		For(&switchboardv1.SIPTrunk{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(source.Func(r.watchSecrets)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Named("siptrunk")
	if r.UsageChanged != nil {
		b = b.WatchesRawSource(source.Channel(r.UsageChanged, &handler.EnqueueRequestForObject{}))
	}
	if r.RegistrationChanged != nil {
		b = b.WatchesRawSource(source.Channel(r.RegistrationChanged, &handler.EnqueueRequestForObject{}))
	}
	return b.Complete(r)
}

// watchSecrets queues the trunks naming a Secret that changed, while the
// controller runs. A namespace forgotten needs nothing: its trunks read
// their credentials live at each probe.
func (r *SIPTrunkReconciler) watchSecrets(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	wake := func(s *corev1.Secret) {
		for _, req := range r.trunksOfSecret(ctx, s) {
			q.Add(req)
		}
	}
	unsubscribe := r.SecretChanges.Subscribe(organizations.Handler{Upsert: wake, Delete: wake, Forget: func(string) {}})
	context.AfterFunc(ctx, unsubscribe)
	return nil
}

func secretOfTrunk(o client.Object) []string {
	t, ok := o.(*switchboardv1.SIPTrunk)
	if !ok {
		return nil
	}
	var names []string
	for _, ref := range []*switchboardv1.SecretReference{t.Spec.CredentialsSecretRef, tlsRef(t, true), tlsRef(t, false)} {
		if ref != nil {
			names = append(names, ref.Name)
		}
	}
	return names
}

// tlsRef is spec.tls's CA Secret (ca) or client certificate Secret.
func tlsRef(t *switchboardv1.SIPTrunk, ca bool) *switchboardv1.SecretReference {
	switch {
	case t.Spec.TLS == nil:
		return nil
	case ca:
		return t.Spec.TLS.CASecretRef
	}
	return t.Spec.TLS.ClientCertSecretRef
}

// trunksOfSecret maps a Secret to the trunks of its namespace naming it.
func (r *SIPTrunkReconciler) trunksOfSecret(ctx context.Context, o client.Object) []reconcile.Request {
	var list switchboardv1.SIPTrunkList
	if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace()),
		client.MatchingFields{trunkSecretField: o.GetName()}); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, t := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: t.Namespace, Name: t.Name}})
	}
	return reqs
}
