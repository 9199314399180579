package workers

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// Load is what a worker carries, as its Calls say.
type Load struct {
	// Live calls are queued or in progress: they use the worker's room.
	Live int
	// Unprocessed calls are live, or ended with their recording or
	// analysis still to do: a draining worker waits for them, as only it
	// holds their audio.
	Unprocessed int
}

// Count reads worker's load from r (the manager's cache).
func Count(ctx context.Context, r client.Reader, worker string) (Load, error) {
	var calls switchboardv1.CallList
	if err := r.List(ctx, &calls, client.MatchingLabels{Label: worker}, client.UnsafeDisableDeepCopy); err != nil {
		return Load{}, err
	}
	var l Load
	for i := range calls.Items {
		c := &calls.Items[i]
		if !c.CurrentPhase().Final() {
			l.Live++
		}
		if !c.Processed() {
			l.Unprocessed++
		}
	}
	return l, nil
}
