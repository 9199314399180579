package controllers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/egress"
	"github.com/switchboard-dev/switchboard/internal/quota"
	"github.com/switchboard-dev/switchboard/internal/webhook/deliveries"
)

const (
	// healthWriteInterval bounds how often delivery results are written to
	// an endpoint's status while its health does not change.
	healthWriteInterval = 2 * time.Second
	// recheckInterval re-checks the URL (DNS changes) and the Secret.
	recheckInterval = 5 * time.Minute
	// limitRecheckInterval re-checks an endpoint beyond its organization's
	// limit.
	limitRecheckInterval = 10 * time.Second
)

// WebhookEndpointReconciler reports an endpoint's state: its REST id, its
// signing Secret (generated when the spec names none), whether its URL is
// allowed (Ready), whether deliveries fail (Degraded) and whether it is
// disabled, and it disables an endpoint that has failed for too long.
type WebhookEndpointReconciler struct {
	client.Client
	// Live reads Secrets, which the cache does not hold.
	Live   client.Reader
	Policy egress.URLPolicy
	Health *deliveries.Health
	Events events.EventRecorder
	Clock  clock.PassiveClock
	// DisableAfter disables an endpoint whose deliveries have all failed
	// for this long (0: never).
	DisableAfter time.Duration
	// Quota holds organizations to their endpoint limit (nil: no limit).
	Quota *quota.Admission
	// Organizations tells whether the endpoint's namespace is one.
	Organizations *OrganizationCheck

	// checked remembers when each endpoint's URL and Secret were last
	// checked (types.NamespacedName -> time.Time).
	checked sync.Map
}

// +kubebuilder:rbac:groups=switchboard.dev,resources=webhookendpoints,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=switchboard.dev,resources=webhookendpoints/status,verbs=get;update;patch
// Signing Secrets are read and generated in organization namespaces only,
// with the rights of config/rbac/organization_role.yaml.

// Reconcile brings one endpoint's status up to date.
func (r *WebhookEndpointReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var ep switchboardv1.WebhookEndpoint
	if err := r.Get(ctx, req.NamespacedName, &ep); err != nil {
		if apierrors.IsNotFound(err) {
			r.Health.Forget(req.NamespacedName)
			r.checked.Delete(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if ep.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	status := newStatusPatcher(r.Client, &ep)
	result := reconcile.Result{RequeueAfter: recheckInterval}
	was := readyReason(&ep)
	if err := r.check(ctx, &ep); err != nil {
		return reconcile.Result{}, err
	}
	switch readyReason(&ep) {
	case switchboardv1.ReasonEndpointLimitReached:
		// An older endpoint's deletion or a raised limit lets it in.
		result.RequeueAfter = limitRecheckInterval
	case switchboardv1.ReasonSecretAccessDenied:
		result.RequeueAfter = accessRecheckInterval
	}
	r.setDisabled(&ep)
	if wait := r.reportHealth(&ep); wait > 0 {
		result.RequeueAfter = min(result.RequeueAfter, wait)
	}
	if err := r.disableIfFailingTooLong(ctx, &ep); err != nil {
		return reconcile.Result{}, err
	}
	if _, err := status.patch(ctx, &ep); err != nil {
		return result, err
	}
	r.Organizations.warn(&ep, was, apimeta.FindStatusCondition(ep.Status.Conditions, switchboardv1.ReadyCondition))
	return result, nil
}

func readyReason(ep *switchboardv1.WebhookEndpoint) string {
	return readyReasonOf(ep.Status.Conditions)
}

// check sets Ready: NotAnOrganization, read from the cache on every pass
// so that a namespace losing its label is reported at once, or else the
// outcome of checkConfig when it is due.
func (r *WebhookEndpointReconciler) check(ctx context.Context, ep *switchboardv1.WebhookEndpoint) error {
	notOrg, err := r.Organizations.notAnOrganization(ctx, ep.Namespace)
	switch {
	case err != nil:
		return err
	case notOrg != "":
		// No Secret is read or generated outside an organization.
		ep.Status.EndpointID = ep.ResolvedID()
		ep.Status.ObservedGeneration = ep.Generation
		r.setCondition(ep, switchboardv1.ReadyCondition, metav1.ConditionFalse, switchboardv1.ReasonNotAnOrganization, notOrg)
		return nil
	case r.needsCheck(ep):
		return r.checkConfig(ctx, ep)
	}
	return nil
}

// needsCheck: the URL and Secret are checked when the spec changed, while
// the endpoint is not Ready, and every recheckInterval; not on every
// delivery result.
func (r *WebhookEndpointReconciler) needsCheck(ep *switchboardv1.WebhookEndpoint) bool {
	ready := apimeta.FindStatusCondition(ep.Status.Conditions, switchboardv1.ReadyCondition)
	if ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != ep.Generation {
		return true
	}
	last, ok := r.checked.Load(types.NamespacedName{Namespace: ep.Namespace, Name: ep.Name})
	return !ok || r.Clock.Since(last.(time.Time)) >= recheckInterval
}

func (r *WebhookEndpointReconciler) checkConfig(ctx context.Context, ep *switchboardv1.WebhookEndpoint) error {
	r.checked.Store(types.NamespacedName{Namespace: ep.Namespace, Name: ep.Name}, r.Clock.Now())
	ep.Status.EndpointID = ep.ResolvedID()
	ep.Status.ObservedGeneration = ep.Generation
	secretErr, err := r.ensureSecret(ctx, ep)
	if err != nil {
		return err
	}
	overLimit, err := r.overLimit(ctx, ep)
	if err != nil {
		return err
	}
	urlErr := r.Policy.Check(ctx, ep.Spec.URL)
	var uerr *egress.URLError
	switch {
	case errors.As(urlErr, &uerr):
		r.setCondition(ep, switchboardv1.ReadyCondition, metav1.ConditionFalse, switchboardv1.ReasonURLNotAllowed, uerr.Reason)
	case urlErr != nil:
		r.setCondition(ep, switchboardv1.ReadyCondition, metav1.ConditionFalse, switchboardv1.ReasonURLNotAllowed, urlErr.Error())
	case errors.Is(secretErr, errSecretAccessDenied):
		r.setCondition(ep, switchboardv1.ReadyCondition, metav1.ConditionFalse, switchboardv1.ReasonSecretAccessDenied,
			switchboardv1.SecretAccessDeniedMessage(ep.Namespace, ep.SigningSecretName()))
	case secretErr != nil:
		r.setCondition(ep, switchboardv1.ReadyCondition, metav1.ConditionFalse, switchboardv1.ReasonSecretMissing, secretErr.Error())
	case overLimit != "":
		r.setCondition(ep, switchboardv1.ReadyCondition, metav1.ConditionFalse, switchboardv1.ReasonEndpointLimitReached, overLimit)
	default:
		r.setCondition(ep, switchboardv1.ReadyCondition, metav1.ConditionTrue, switchboardv1.ReasonReconciled,
			"The URL is allowed and the signing secret is in place.")
	}
	return nil
}

// overLimit says why ep is beyond its organization's endpoint limit (the
// oldest endpoints count), or "". Such an endpoint receives no events
// (the call reconciler applies the same rule); an endpoint applied with
// kubectl is no way around the limit the REST API enforces.
func (r *WebhookEndpointReconciler) overLimit(ctx context.Context, ep *switchboardv1.WebhookEndpoint) (string, error) {
	if r.Quota == nil {
		return "", nil
	}
	limits, err := r.Quota.Limits(ctx, ep.Namespace)
	if err != nil || limits.WebhookEndpoints == 0 {
		return "", err
	}
	var endpoints switchboardv1.WebhookEndpointList
	if err := r.List(ctx, &endpoints, client.InNamespace(ep.Namespace)); err != nil {
		return "", err
	}
	for _, within := range quota.WithinEndpointLimit(endpoints.Items, limits.WebhookEndpoints) {
		if within.UID == ep.UID {
			return "", nil
		}
	}
	return fmt.Sprintf("The organization has %d webhook endpoints and may have %d; this one, among the newest, "+
		"receives no events until older ones are deleted or the limit is raised.",
		len(endpoints.Items), limits.WebhookEndpoints), nil
}

// errSecretAccessDenied: the namespace is not set up as an organization.
var errSecretAccessDenied = errors.New("access to the namespace's Secrets denied")

// ensureSecret generates the signing Secret of an endpoint that names
// none, and checks the one in use. The first result is a problem to report
// in the status; the second an error to retry.
func (r *WebhookEndpointReconciler) ensureSecret(ctx context.Context, ep *switchboardv1.WebhookEndpoint) (error, error) {
	name := ep.SigningSecretName()
	ep.Status.SecretName = name
	var s corev1.Secret
	err := r.Live.Get(ctx, client.ObjectKey{Namespace: ep.Namespace, Name: name}, &s)
	switch {
	case apierrors.IsNotFound(err) && ep.Spec.SecretRef == nil:
		return nil, r.generateSecret(ctx, ep)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("the Secret %s does not exist", name), nil
	case apierrors.IsForbidden(err):
		return errSecretAccessDenied, nil
	case err != nil:
		return nil, err
	}
	_, problem := deliveries.SigningSecrets(&s, r.Clock.Now())
	return problem, nil
}

func (r *WebhookEndpointReconciler) generateSecret(ctx context.Context, ep *switchboardv1.WebhookEndpoint) error {
	s, _, err := deliveries.NewSecret(ep)
	if err != nil {
		return err
	}
	if err := controllerutil.SetControllerReference(ep, s, r.Scheme()); err != nil {
		return err
	}
	// The REST API may have just created it: either one is fine.
	if err := r.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("generating signing secret: %w", err)
	}
	return nil
}

func (r *WebhookEndpointReconciler) setDisabled(ep *switchboardv1.WebhookEndpoint) {
	if !ep.Spec.Disabled {
		r.setCondition(ep, switchboardv1.DisabledCondition, metav1.ConditionFalse, switchboardv1.ReasonEnabled,
			"Deliveries are sent.")
		return
	}
	reason, msg := switchboardv1.ReasonDisabledByUser, "spec.disabled is true."
	if why := ep.Annotations[switchboardv1.WebhookDisabledReasonAnnotation]; why != "" {
		reason, msg = switchboardv1.ReasonDisabledBySystem, why+" Set spec.disabled to false to re-enable."
	}
	r.setCondition(ep, switchboardv1.DisabledCondition, metav1.ConditionTrue, reason, msg)
}

// reportHealth copies the latest delivery result into the status, at most
// every healthWriteInterval unless the endpoint turns degraded or healthy.
// It returns how long to wait before a held-back write.
func (r *WebhookEndpointReconciler) reportHealth(ep *switchboardv1.WebhookEndpoint) time.Duration {
	key := types.NamespacedName{Namespace: ep.Namespace, Name: ep.Name}
	if ep.Status.FailingSince != nil {
		r.Health.Seed(key, ep.Status.FailingSince.Time)
	}
	obs, ok := r.Health.Latest(key)
	if !ok || obs.Result == "" || (ep.Status.LastDeliveryAt != nil && !obs.At.After(ep.Status.LastDeliveryAt.Time)) {
		if apimeta.FindStatusCondition(ep.Status.Conditions, switchboardv1.DegradedCondition) == nil {
			r.setCondition(ep, switchboardv1.DegradedCondition, metav1.ConditionFalse, switchboardv1.ReasonNoDeliveriesYet,
				"No delivery has been attempted yet.")
		}
		return 0
	}
	degraded := apimeta.IsStatusConditionTrue(ep.Status.Conditions, switchboardv1.DegradedCondition)
	if ep.Status.LastDeliveryAt != nil && degraded == !obs.OK {
		if wait := healthWriteInterval - r.Clock.Since(ep.Status.LastDeliveryAt.Time); wait > 0 {
			return wait
		}
	}
	ep.Status.LastDeliveryAt = &metav1.Time{Time: obs.At}
	ep.Status.LastDeliveryResult = obs.Result
	if obs.OK {
		ep.Status.FailingSince = nil
		r.setCondition(ep, switchboardv1.DegradedCondition, metav1.ConditionFalse, switchboardv1.ReasonDeliveriesHealthy,
			"The latest delivery succeeded.")
		return 0
	}
	ep.Status.FailingSince = &metav1.Time{Time: obs.FailingSince}
	r.setCondition(ep, switchboardv1.DegradedCondition, metav1.ConditionTrue, switchboardv1.ReasonDeliveriesFailing,
		fmt.Sprintf("Deliveries have failed since %s; latest: %s.", obs.FailingSince.UTC().Format(time.RFC3339), obs.Result))
	return 0
}

func (r *WebhookEndpointReconciler) disableIfFailingTooLong(ctx context.Context, ep *switchboardv1.WebhookEndpoint) error {
	if r.DisableAfter <= 0 || ep.Spec.Disabled || ep.Status.FailingSince == nil ||
		r.Clock.Since(ep.Status.FailingSince.Time) < r.DisableAfter {
		return nil
	}
	status := ep.Status.DeepCopy()
	err := disableEndpoint(ctx, r.Client, r.Events, ep, fmt.Sprintf("Every delivery has failed since %s.",
		ep.Status.FailingSince.UTC().Format(time.RFC3339)))
	ep.Status = *status // the spec patch returns the stored status
	r.setDisabled(ep)
	return err
}

func (r *WebhookEndpointReconciler) setCondition(ep *switchboardv1.WebhookEndpoint, typ string,
	status metav1.ConditionStatus, reason, msg string) {
	apimeta.SetStatusCondition(&ep.Status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason,
		Message: msg, ObservedGeneration: ep.Generation})
}

// SetupWithManager registers the reconciler. Delivery attempts wake the
// endpoint they went to (through the health tracker), which then reports
// the latest result; a namespace becoming an organization or ceasing to be
// one wakes its endpoints.
func (r *WebhookEndpointReconciler) SetupWithManager(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		For(&switchboardv1.WebhookEndpoint{}).
		WatchesRawSource(source.Channel(r.Health.Changes(), &handler.EnqueueRequestForObject{})).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(allInNamespace(r.Client,
			func() client.ObjectList { return &switchboardv1.WebhookEndpointList{} })),
			builder.WithPredicates(organizationChanged)).
		Named("webhookendpoint").
		Complete(r)
}
