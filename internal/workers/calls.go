package workers

import (
	"context"
	"strconv"

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
	// Organizations are the live calls by organization (namespace), for
	// the active-calls limit of every replica; organizations with none
	// are left out.
	Organizations map[string]OrganizationCalls
	// AsOf is the highest resourceVersion among the calls counted: the
	// count holds every change to the worker's Calls up to it (the cache
	// applies them in order). 0 when none parses as a number.
	AsOf uint64
}

// OrganizationCalls are one organization's queued and in-progress calls
// on a worker.
type OrganizationCalls struct {
	Queued, Live int
}

// Count reads worker's load from r (the manager's cache).
func Count(ctx context.Context, r client.Reader, worker string) (Load, error) {
	var calls switchboardv1.CallList
	if err := r.List(ctx, &calls, client.MatchingLabels{Label: worker}, client.UnsafeDisableDeepCopy); err != nil {
		return Load{}, err
	}
	l := Load{Organizations: map[string]OrganizationCalls{}}
	for i := range calls.Items {
		c := &calls.Items[i]
		if rv, err := strconv.ParseUint(c.ResourceVersion, 10, 64); err == nil {
			l.AsOf = max(l.AsOf, rv)
		}
		if !c.Processed() {
			l.Unprocessed++
		}
		if c.CurrentPhase().Final() {
			continue
		}
		l.Live++
		org := l.Organizations[c.Namespace]
		if c.CurrentPhase() == switchboardv1.CallInProgress {
			org.Live++
		} else {
			org.Queued++
		}
		l.Organizations[c.Namespace] = org
	}
	return l, nil
}
