package history

import (
	"slices"
	"strings"
	"testing"
)

// TestFairPick: the scheduler's choice among due deliveries (in due order),
// written org/endpoint/id with what each has in flight.
func TestFairPick(t *testing.T) {
	cases := []struct {
		name   string
		due    []candidate
		limit  int
		bounds InFlightLimits
		want   []string
	}{{
		name:  "round-robin across organizations, whatever the order they queued in",
		due:   []candidate{b("1", 0, 0), b("2", 0, 0), b("3", 0, 0), b("4", 0, 0), a("1", 0, 0), a("2", 0, 0)},
		limit: 4,
		want:  []string{"b/1", "a/1", "b/2", "a/2"},
	}, {
		name:  "the organization with fewer attempts in flight first",
		due:   []candidate{b("1", 0, 5), b("2", 0, 5), a("1", 0, 1), a("2", 0, 1), c("1", 0, 0)},
		limit: 4,
		want:  []string{"c/1", "a/1", "a/2", "b/1"},
	}, {
		name:   "an endpoint's bound counts what it has in flight",
		due:    []candidate{b("1", 1, 1), b("2", 1, 1), b("3", 1, 1), onEndpoint(b("4", 0, 1), "other")},
		limit:  10,
		bounds: InFlightLimits{PerEndpoint: 2},
		want:   []string{"b/1", "b/4"},
	}, {
		name:   "an organization's bound counts what it has in flight on every endpoint",
		due:    []candidate{b("1", 0, 3), onEndpoint(b("2", 0, 3), "other"), a("1", 0, 0)},
		limit:  10,
		bounds: InFlightLimits{PerOrganization: 4, PerEndpoint: 16},
		want:   []string{"a/1", "b/1"},
	}, {
		name:   "both bounds at once",
		due:    []candidate{b("1", 0, 0), b("2", 0, 0), b("3", 0, 0), onEndpoint(b("4", 0, 0), "other"), onEndpoint(b("5", 0, 0), "other")},
		limit:  10,
		bounds: InFlightLimits{PerOrganization: 3, PerEndpoint: 2},
		want:   []string{"b/1", "b/2", "b/4"},
	}, {
		name:  "no more than the limit",
		due:   []candidate{a("1", 0, 0), b("1", 0, 0), c("1", 0, 0)},
		limit: 2,
		want:  []string{"a/1", "b/1"},
	}, {
		name:  "nothing due",
		limit: 5,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range fairPick(tc.due, tc.limit, tc.bounds) {
				got = append(got, strings.TrimPrefix(p.namespace, "org-")+"/"+p.deliveryID)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("fairPick = %v, want %v", got, tc.want)
			}
		})
	}
}

// a, b and c are due deliveries of three organizations, on their endpoint
// "hooks", with the attempts in flight of that endpoint and of the
// organization.
func a(id string, endpointHeld, orgHeld int) candidate {
	return due("org-a", id, endpointHeld, orgHeld)
}
func b(id string, endpointHeld, orgHeld int) candidate {
	return due("org-b", id, endpointHeld, orgHeld)
}
func c(id string, endpointHeld, orgHeld int) candidate {
	return due("org-c", id, endpointHeld, orgHeld)
}

func due(ns, id string, endpointHeld, orgHeld int) candidate {
	return candidate{namespace: ns, endpoint: "hooks", deliveryID: id, endpointHeld: endpointHeld, orgHeld: orgHeld}
}

func onEndpoint(c candidate, endpoint string) candidate {
	c.endpoint = endpoint
	return c
}
