package controllers

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/webhook/deliveries"
)

// callEvents queues Calls as controller-runtime's own handler does (the
// priority queue puts the initial list of a starting reconciler after
// fresh changes), except that in the initial list only the Calls with
// nothing left but their archive go last. After a leader change that list
// is every Call in the cluster, mostly finished ones waiting out their
// retention (an hour of calls by default); a call queued, ringing or
// talking when the old leader stopped, or placed during the handover and
// so listed too, is served before them instead of after.
func callEvents() handler.EventHandler {
	standard := handler.WithLowPriorityWhenUnchanged(&handler.EnqueueRequestForObject{})
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, evt event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			call, isCall := evt.Object.(*switchboardv1.Call)
			pq, isPriority := q.(priorityqueue.PriorityQueue[reconcile.Request])
			if !evt.IsInInitialList || !isCall || !isPriority || onlyArchiveLeft(call) {
				standard.Create(ctx, evt, q)
				return
			}
			// The priority said outright: handler.Funcs gives initial-list
			// events low priority unless the add names one.
			pq.AddWithOpts(priorityqueue.AddOpts{Priority: ptr(normalPriority)},
				reconcile.Request{NamespacedName: client.ObjectKeyFromObject(call)})
		},
		UpdateFunc:  standard.Update,
		DeleteFunc:  standard.Delete,
		GenericFunc: standard.Generic,
	}
}

// normalPriority is the priority queue's priority of an item added without
// one: that of every change.
const normalPriority = 0

// onlyArchiveLeft reports whether c is finished, analyzed and has had its
// events queued: all the reconciler still does is archive it and, after
// the retention, delete it.
func onlyArchiveLeft(c *switchboardv1.Call) bool {
	return finished(c) && len(deliveries.Unemitted(c)) == 0
}
