package controllers

import (
	"context"
	"fmt"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// NumberListReconciler reports each NumberList's size and readiness. The
// lookup index itself is fed by informer events on every replica (see
// internal/app), because the REST API, which runs on every replica, reads it.
type NumberListReconciler struct {
	client.Client
}

// +kubebuilder:rbac:groups=switchboard.dev,resources=numberlists,verbs=get;list;watch
// +kubebuilder:rbac:groups=switchboard.dev,resources=numberlists/status,verbs=get;update;patch

// Reconcile sets status.entries and the Ready condition.
func (r *NumberListReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var list switchboardv1.NumberList
	if err := r.Get(ctx, req.NamespacedName, &list); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	status := newStatusPatcher(r.Client, &list)
	list.Status.Entries = len(list.Spec.Numbers) + len(list.Spec.Prefixes)
	list.Status.ObservedGeneration = list.Generation
	apimeta.SetStatusCondition(&list.Status.Conditions, metav1.Condition{
		Type: switchboardv1.ReadyCondition, Status: metav1.ConditionTrue, Reason: switchboardv1.ReasonReconciled,
		Message:            fmt.Sprintf("%d entries apply to every call of namespace %s.", list.Status.Entries, list.Namespace),
		ObservedGeneration: list.Generation,
	})
	_, err := status.patch(ctx, &list)
	return reconcile.Result{}, err
}

// SetupWithManager registers the reconciler.
func (r *NumberListReconciler) SetupWithManager(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		For(&switchboardv1.NumberList{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Named("numberlist").
		Complete(r)
}
