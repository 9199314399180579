package workers

import (
	"context"

	"github.com/go-logr/logr"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// Informer is the part of an informer (a controller-runtime cache's) the
// watches here use.
type Informer interface {
	AddEventHandler(toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error)
}

// LoadOf counts worker's calls (Count) from r: what its Heartbeat reports,
// an error logged, not returned (the Lease is renewed regardless).
func LoadOf(r client.Reader, worker string, log logr.Logger) func() Load {
	return func() Load {
		l, err := Count(context.Background(), r, worker)
		if err != nil {
			log.Error(err, "counting this worker's calls")
		}
		return l
	}
}

// Unprocessed is what a Drainer waits for: worker's calls not yet done.
func Unprocessed(r client.Reader, worker string) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		l, err := Count(ctx, r, worker)
		return l.Unprocessed, err
	}
}

// WatchOwnCalls rewrites hb's Lease when one of its worker's calls changes
// (at most once a second): the Lease says what the worker carries per
// organization, for the other replicas' active-calls limits, and must not
// wait for the next renewal.
func WatchOwnCalls(calls Informer, hb *Heartbeat) error {
	changed := func(obj any) {
		if gone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = gone.Obj
		}
		if c, ok := obj.(*switchboardv1.Call); ok && c.Labels[Label] == hb.Name {
			hb.Changed()
		}
	}
	_, err := calls.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: changed,
		UpdateFunc: func(_, obj any) { changed(obj) }, DeleteFunc: changed})
	return err
}

// WatchLeases nudges s when a worker's Lease is deleted: a worker that
// stopped deleted its Lease, and its calls move at once, not at the next
// sweep.
func WatchLeases(leases Informer, s *Sweeper) error {
	_, err := leases.AddEventHandler(toolscache.ResourceEventHandlerFuncs{DeleteFunc: func(any) { s.Nudge() }})
	return err
}
