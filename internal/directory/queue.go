package directory

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// QueuedOnTrunk lists, from the cache, the Calls of namespace that are
// queued and placed by an Agent going out on trunk: the trunk's backlog as
// this replica sees it (its own worker's calls and the unassigned ones;
// the caller keeps those its gate admits). A call applied moments ago may
// be missing; it then joins at its turn.
func (d *Directory) QueuedOnTrunk(ctx context.Context, namespace, trunk string) ([]switchboardv1.Call, error) {
	var agents switchboardv1.AgentList
	if err := d.Cache.List(ctx, &agents, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing agents: %w", err)
	}
	seen := map[string]bool{}
	var out []switchboardv1.Call
	for _, a := range agents.Items {
		id := NormalizeAgentID(a.ResolvedID())
		if a.Spec.TrunkRef == nil || a.Spec.TrunkRef.Name != trunk || seen[id] {
			continue
		}
		seen[id] = true
		var calls switchboardv1.CallList
		if err := d.Cache.List(ctx, &calls, client.InNamespace(namespace),
			client.MatchingFields{QueuedAgentField: id}); err != nil {
			return nil, fmt.Errorf("listing queued calls: %w", err)
		}
		out = append(out, calls.Items...)
	}
	return out, nil
}
