package controllers

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/organizations"
)

// accessRecheckInterval re-checks sooner a resource whose namespace
// Switchboard may not read Secrets in: the platform team is likely setting
// it up as an organization, and no watch tells of a new RoleBinding.
const accessRecheckInterval = 30 * time.Second

// OrganizationCheck tells the Agent and WebhookEndpoint reconcilers whether
// their namespace is an organization. Outside one, API keys answer a bare
// 401 (the REST API tells a caller no more), so these resources, an Event
// and one log line per namespace are where a platform team learns why.
// Both reconcilers share one, so that a namespace is logged once.
type OrganizationCheck struct {
	// Cache reads Namespaces: the manager's cache, which watches them.
	Cache client.Reader
	// Live asks the apiserver whether Switchboard may list a namespace's
	// Secrets, which no cache can tell.
	Live   client.Reader
	Events events.EventRecorder
	Log    logr.Logger

	// logged holds the namespaces reported as no organization since they
	// last were one.
	logged sync.Map
}

// notAnOrganization says why namespace is no organization (it lacks the
// label), or "" when it is labelled one.
func (c *OrganizationCheck) notAnOrganization(ctx context.Context, namespace string) (string, error) {
	var ns corev1.Namespace
	err := c.Cache.Get(ctx, client.ObjectKey{Name: namespace}, &ns)
	if err != nil && !apierrors.IsNotFound(err) {
		return "", err
	}
	if err == nil && organizations.IsOrganization(&ns) {
		c.logged.Delete(namespace)
		return "", nil
	}
	msg := organizations.NotAnOrganization(namespace)
	if _, seen := c.logged.LoadOrStore(namespace, true); !seen {
		c.Log.Info("Agents or webhook endpoints are in a namespace that is not an organization: its API keys answer 401",
			"namespace", namespace, "fix", msg)
	}
	return msg, nil
}

// problem returns the Ready reason and message of a resource whose
// namespace is no organization, or whose Secrets (its API keys) Switchboard
// may not read; "" when its keys are served.
func (c *OrganizationCheck) problem(ctx context.Context, namespace string) (reason, message string, err error) {
	if msg, err := c.notAnOrganization(ctx, namespace); err != nil || msg != "" {
		return switchboardv1.ReasonNotAnOrganization, msg, err
	}
	allowed, err := organizations.MayListSecrets(ctx, c.Live, namespace)
	if err != nil || allowed {
		return "", "", err
	}
	// package organizations logs the refusal and records it on the namespace.
	return switchboardv1.ReasonSecretAccessDenied, organizations.NoRoleBinding(namespace), nil
}

// warn records a Warning Event on obj when its Ready condition has just
// turned to a reason saying that its namespace is no working organization:
// once per change, not on every recheck.
func (c *OrganizationCheck) warn(obj runtime.Object, was string, ready *metav1.Condition) {
	if ready == nil || ready.Reason == was ||
		(ready.Reason != switchboardv1.ReasonNotAnOrganization && ready.Reason != switchboardv1.ReasonSecretAccessDenied) {
		return
	}
	c.Events.Eventf(obj, nil, corev1.EventTypeWarning, ready.Reason, "CheckOrganization", "%s", ready.Message)
}

// readyReasonOf is the reason of the Ready condition in conds, or "".
func readyReasonOf(conds []metav1.Condition) string {
	if c := apimeta.FindStatusCondition(conds, switchboardv1.ReadyCondition); c != nil {
		return c.Reason
	}
	return ""
}

// organizationChanged passes the update of a Namespace that becomes an
// organization or stops being one. A new Namespace holds nothing yet, and
// a deleted one takes its resources with it.
var organizationChanged = predicate.Funcs{
	CreateFunc: func(event.CreateEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		was, ok := e.ObjectOld.(*corev1.Namespace)
		is, isNamespace := e.ObjectNew.(*corev1.Namespace)
		return ok && isNamespace && organizations.IsOrganization(was) != organizations.IsOrganization(is)
	},
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// allInNamespace maps a Namespace to the objects of its namespace that c
// lists into a list newList makes.
func allInNamespace(c client.Reader, newList func() client.ObjectList) handler.MapFunc {
	return func(ctx context.Context, ns client.Object) []reconcile.Request {
		list := newList()
		if err := c.List(ctx, list, client.InNamespace(ns.GetName())); err != nil {
			return nil
		}
		var reqs []reconcile.Request
		_ = apimeta.EachListItem(list, func(o runtime.Object) error {
			if obj, ok := o.(client.Object); ok {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
			}
			return nil
		})
		return reqs
	}
}
