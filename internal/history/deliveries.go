package history

import (
	"context"
	"time"
)

// DeliveryLog is the durable queue and the log of webhook deliveries: one
// record per (call, event, endpoint) or test event, with its attempts. A
// delivery is kept whole (its Delivery record as JSON) beside the
// columns the queue and the lists need. An event costs the cluster nothing.
//
// The queue is the delivery table itself: a pending delivery is due at a
// time, a worker claims due deliveries with a lease (so that a crashed
// worker's deliveries are claimed again once the lease lapses: at least
// once), works on them and saves them with the time they are next due.
type DeliveryLog interface {
	// CountDueDeliveries counts the deliveries waiting for an attempt (due
	// now or later, leased or not): the backlog.
	CountDueDeliveries(ctx context.Context) (int64, error)
	// EnqueueDeliveries stores new deliveries, due at once. One whose
	// (namespace, delivery id) is already stored is left as it is: an emit
	// redone after a crash creates nothing twice.
	EnqueueDeliveries(ctx context.Context, ds []*Delivery) error
	// SaveDelivery inserts or replaces d's record and ends any lease on it.
	// due is when it is next to be worked on; zero: not until a retry is
	// requested. A retry requested while d was being worked on (see
	// RequestDeliveryRetry) and not handled in d (Status.RetryHandled
	// differs from it) keeps it due at once, whatever due says.
	SaveDelivery(ctx context.Context, d *Delivery, due time.Time) error
	// ClaimDeliveries leases up to c.Limit deliveries that are due at or
	// before now and not leased (or whose lease has lapsed), until
	// now+c.Lease, and returns them, earliest due first. It takes them
	// round-robin across organizations (every organization's earliest
	// first, the organizations with the fewest attempts in flight first;
	// among the earliest due of those below their bounds, a few times
	// c.Limit of them), and never so many that an organization or an
	// endpoint would have more attempts in flight (deliveries leased at
	// now, test sends included) than c.InFlight allows: the rest stay
	// queued. It finds something whenever a delivery is due and within
	// the bounds. Concurrent claimers never get the same delivery while
	// its lease runs.
	ClaimDeliveries(ctx context.Context, now time.Time, c Claim) ([]*Delivery, error)
	// ReserveDelivery stores d, a test delivery about to be sent, leased
	// until now+lease so that it counts as an attempt in flight, if its
	// organization and endpoint are within limits with it; false, and
	// nothing stored, when they are not. Saving d ends the lease. A
	// reservation never saved (its sender died) is due when its lease
	// lapses, for the worker to close.
	ReserveDelivery(ctx context.Context, d *Delivery, now time.Time, lease time.Duration,
		limits InFlightLimits) (bool, error)
	// NextDeliveryDue is the earliest time after after (zero: ever) at
	// which an unleased delivery is due, or a lease lapses; ok is false
	// when there is none.
	NextDeliveryDue(ctx context.Context, after time.Time) (next time.Time, ok bool, err error)
	// GetDelivery returns the delivery of namespace whose id is id, or
	// ErrNotFound.
	GetDelivery(ctx context.Context, namespace, id string) (*Delivery, error)
	// ListDeliveries returns up to q.Limit deliveries of namespace matching
	// q, newest first by (creation time, delivery id), strictly after
	// q.After when set.
	ListDeliveries(ctx context.Context, namespace string, q DeliveryQuery) ([]Delivery, error)
	// CountDeliveryPhases counts namespace's deliveries created at or after
	// since by phase, and the pending ones waiting for a retry, leaving out
	// those of the event except, in the database.
	CountDeliveryPhases(ctx context.Context, namespace string, since time.Time, except string) (DeliveryPhaseCounts, error)
	// RequestDeliveryRetry asks for one more attempt of a delivery now: it
	// becomes due at once, and the records returned from then on carry the
	// annotation DeliveryRetryAnnotation with at (RFC 3339, nanoseconds)
	// until the next request. ErrNotFound when absent.
	RequestDeliveryRetry(ctx context.Context, namespace, id string, at time.Time) (*Delivery, error)
	// DeleteDeliveriesCompletedBefore removes the deliveries that finished
	// (Status.CompletedAt) before t and are not due, returning how many.
	DeleteDeliveriesCompletedBefore(ctx context.Context, t time.Time) (int64, error)
}

// Claim is what ClaimDeliveries may lease.
type Claim struct {
	// Limit is how many deliveries to lease at most.
	Limit int
	// Lease is how long they are the claimer's.
	Lease time.Duration
	// InFlight bounds the attempts in flight per organization and
	// endpoint.
	InFlight InFlightLimits
}

// InFlightLimits bound the attempts in flight (leased deliveries) of one
// organization and of one endpoint (by namespace and resource name), so
// that a slow receiver holds at most that many of the worker's slots.
// Zero or less: no bound.
type InFlightLimits struct {
	PerOrganization int
	PerEndpoint     int
}

// DeliveryQuery filters a list of deliveries. Zero values do not filter.
type DeliveryQuery struct {
	// Endpoint is the WebhookEndpoint's resource name.
	Endpoint string
	// EndpointID, when set, keeps the deliveries recorded for that endpoint
	// id (or for none): an endpoint deleted and created again under the
	// same name does not inherit its predecessor's log.
	EndpointID string
	// CallName is the Call resource's name (DeliveryCallLabel).
	CallName string
	Event    string // a call event kind or "test"
	Phase    string // pending, succeeded, failed
	// After is the place of the last delivery of the previous page.
	After *DeliveryKey
	Limit int
}

// DeliveryKey is a delivery's place in the newest-first order.
type DeliveryKey struct {
	CreatedAt  time.Time
	DeliveryID string
}

// DeliveryKeyOf is d's place in the order.
func DeliveryKeyOf(d *Delivery) DeliveryKey {
	return DeliveryKey{CreatedAt: d.CreationTimestamp.UTC(), DeliveryID: d.Spec.DeliveryID}
}
