package deliveries

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/callid"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/quota"
)

// Emitter queues the deliveries of the events a call reaches: one per
// endpoint of its organization subscribed to the event (within the
// organization's endpoint limit), in the history store, where the delivery
// worker finds them. The call reconciler calls it before it stores the
// call's state, and wakes the worker once that state is stored.
type Emitter struct {
	// Endpoints reads the organization's WebhookEndpoints (the cache).
	Endpoints client.Reader
	// Limits are the organizations' limits (nil: no endpoint limit).
	Limits interface {
		Limits(ctx context.Context, namespace string) (quota.Limits, error)
	}
	// Queue stores the deliveries.
	Queue interface {
		EnqueueDeliveries(ctx context.Context, ds []*history.Delivery) error
	}
	// Queued, if set, wakes the delivery worker.
	Queued func()
	Clock  clock.PassiveClock
}

// Emit queues the deliveries of every event c has reached and not yet
// announced, in lifecycle order, and notes the events as emitted in c's
// status. Queuing a delivery that exists (a crash before the status
// write) finds it: nothing is sent twice. While the store cannot be
// written, the events wait: they are queued on a later pass.
func (e *Emitter) Emit(ctx context.Context, c *switchboardv1.Call) (queued bool, err error) {
	queue, kinds, err := e.Pending(ctx, c)
	if err != nil || len(kinds) == 0 {
		return false, err
	}
	if len(queue) > 0 {
		if err := e.Queue.EnqueueDeliveries(ctx, queue); err != nil {
			return false, fmt.Errorf("queuing %d deliveries: %w", len(queue), err)
		}
	}
	Emitted(c, kinds)
	return len(queue) > 0, nil
}

// Pending is what Emit queues, without queuing it: the deliveries of the
// events c has reached and not yet announced, and those events, for a
// caller that stores the deliveries with writes of its own (one
// transaction) and then notes the events (Emitted).
func (e *Emitter) Pending(ctx context.Context, c *switchboardv1.Call) ([]*history.Delivery, []string, error) {
	kinds := Unemitted(c)
	if len(kinds) == 0 {
		return nil, nil, nil
	}
	endpoints, err := e.endpoints(ctx, c.Namespace)
	if err != nil {
		return nil, nil, err
	}
	id, now := callid.Of(c), metav1.NewTime(e.Clock.Now())
	var queue []*history.Delivery
	for _, kind := range kinds {
		for i := range endpoints {
			if ep := &endpoints[i]; Receives(ep, kind) {
				d := ForCall(c, kind, ep, id)
				d.CreationTimestamp = now
				queue = append(queue, d)
			}
		}
	}
	return queue, kinds, nil
}

// Emitted notes kinds, whose deliveries are queued, as emitted in c's status.
func Emitted(c *switchboardv1.Call, kinds []string) {
	c.Status.EmittedEvents = append(c.Status.EmittedEvents, kinds...)
}

// Wake tells the delivery worker that deliveries were queued.
func (e *Emitter) Wake() {
	if e.Queued != nil {
		e.Queued()
	}
}

// endpoints are the organization's webhook endpoints within its limit.
func (e *Emitter) endpoints(ctx context.Context, ns string) ([]switchboardv1.WebhookEndpoint, error) {
	var endpoints switchboardv1.WebhookEndpointList
	if err := e.Endpoints.List(ctx, &endpoints, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing webhook endpoints: %w", err)
	}
	if e.Limits == nil {
		return endpoints.Items, nil
	}
	limits, err := e.Limits.Limits(ctx, ns)
	if err != nil {
		return nil, err
	}
	return quota.WithinEndpointLimit(endpoints.Items, limits.WebhookEndpoints), nil
}
