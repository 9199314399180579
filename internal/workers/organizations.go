package workers

import (
	"context"
	"encoding/json"
	"strconv"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// What a worker's Lease says of its calls per organization, so that every
// replica can hold an organization to its active-calls limit without
// caching the other workers' Calls.
const (
	// OrganizationsAnnotation: {"namespace": [queued, in progress], ...}
	// for the organizations with live calls on the worker.
	OrganizationsAnnotation = "switchboard.dev/calls-by-organization"
	// AsOfAnnotation: the resourceVersion the counts hold every change of
	// the worker's Calls up to (Load.AsOf).
	AsOfAnnotation = "switchboard.dev/calls-as-of"
)

func encodeOrganizations(orgs map[string]OrganizationCalls) string {
	out := make(map[string][2]int, len(orgs))
	for ns, c := range orgs {
		out[ns] = [2]int{c.Queued, c.Live}
	}
	b, _ := json.Marshal(out) // a map of strings to ints always encodes
	return string(b)
}

func decodeOrganizations(s string) (map[string]OrganizationCalls, bool) {
	var in map[string][2]int
	if err := json.Unmarshal([]byte(s), &in); err != nil {
		return nil, false
	}
	out := make(map[string]OrganizationCalls, len(in))
	for ns, c := range in {
		out[ns] = OrganizationCalls{Queued: c[0], Live: c[1]}
	}
	return out, true
}

// Published is what one other worker's Lease says of an organization's
// calls.
type Published struct {
	Worker string
	OrganizationCalls
	// AsOf: the counts hold every Call of the worker created at or before
	// this resourceVersion.
	AsOf uint64
}

// Elsewhere reads the other workers' Leases.
type Elsewhere struct {
	// Reader reads Leases (the manager's cache, which watches them).
	Reader    client.Reader
	Namespace string
	// Self is this replica's worker, whose calls are counted from its
	// cache, not from its Lease.
	Self  string
	Clock clock.PassiveClock
}

// Calls returns what each other live worker's Lease says of namespace's
// calls. A worker whose Lease says nothing of organizations (an older
// version) is left out.
func (e *Elsewhere) Calls(ctx context.Context, namespace string) ([]Published, error) {
	var leases coordinationv1.LeaseList
	if err := e.Reader.List(ctx, &leases, client.InNamespace(e.Namespace), client.MatchingLabels{Label: "true"}); err != nil {
		return nil, err
	}
	now := e.Clock.Now()
	var out []Published
	for i := range leases.Items {
		l := &leases.Items[i]
		w, ok := FromLease(l)
		if !ok || w.Name == e.Self || !w.Alive(now) {
			continue
		}
		orgs, ok := decodeOrganizations(l.Annotations[OrganizationsAnnotation])
		asOf, err := strconv.ParseUint(l.Annotations[AsOfAnnotation], 10, 64)
		if !ok || err != nil {
			continue
		}
		out = append(out, Published{Worker: w.Name, OrganizationCalls: orgs[namespace], AsOf: asOf})
	}
	return out, nil
}
