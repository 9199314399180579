package sip

import (
	"context"

	"k8s.io/apimachinery/pkg/types"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/gate"
)

// WorkerBacklog is the Backlog of one worker's trunk gates: of the calls
// queued on a trunk (queued, the directory's QueuedOnTrunk), those
// assigned to worker. The gate is this worker's: a call queued for
// another worker's, or not assigned yet, never comes to it.
func WorkerBacklog(queued func(ctx context.Context, namespace, trunk string) ([]switchboardv1.Call, error), worker string) Backlog {
	return func(ctx context.Context, namespace, trunk string) ([]gate.Waiter, error) {
		calls, err := queued(ctx, namespace, trunk)
		waiters := make([]gate.Waiter, 0, len(calls))
		for i := range calls {
			if calls[i].Labels[switchboardv1.WorkerLabel] != worker {
				continue
			}
			waiters = append(waiters, gate.Waiter{Order: calls[i].QueueOrder(),
				Call: types.NamespacedName{Namespace: calls[i].Namespace, Name: calls[i].Name}})
		}
		return waiters, err
	}
}
