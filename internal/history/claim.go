package history

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Fair claiming: delivery capacity shared between organizations.
//
// An attempt in flight is a leased delivery (lease_until after now): the
// worker's own, a test send's (ReserveDelivery), or a dead worker's until
// its lease lapses. The store counts them per organization and endpoint, so
// the bounds hold across restarts and replicas with no state in memory.
//
// A claim reads the earliest due deliveries of the organizations and
// endpoints below their bounds (a backlog at its bound is passed over in
// the index, its rows unread), then fairPick chooses among them: round-robin across
// organizations, the organizations with the fewest attempts in flight first,
// never past a bound; and leases what it chose. So one organization's
// backlog never sits in front of another's events, and its slow receivers
// hold at most its own share of the worker's slots.

// candidate is a due delivery that may be claimed, with the attempts in
// flight of its endpoint and organization.
type candidate struct {
	namespace, endpoint, deliveryID string
	endpointHeld, orgHeld           int
}

// candidatesPerSlot sizes a claim's reading: so many due deliveries per
// delivery to claim (at least minCandidates), so that a claim costs the
// same whatever the backlog. Round-robin holds among the organizations in
// that reading; one whose backlog fills it takes its share and is at its
// bound for the next claim, which reads past it.
const (
	candidatesPerSlot = 8
	minCandidates     = 64
)

// {leased} and {due} in the statements below name the deliveries table as
// read through the index of leased deliveries, and of due ones (as d).
// SQLite is told to use them: without statistics (ANALYZE) its planner
// prefers scanning a whole index in GROUP BY order to searching the small
// partial one, which made a claim beside 50,000 finished deliveries take
// 200 ms instead of 0.1. PostgreSQL keeps statistics (autovacuum) and
// plans these statements well with them (1 ms for the same claim).
var (
	sqliteIndexes   = strings.NewReplacer("{leased}", "deliveries INDEXED BY deliveries_leased", "{due}", "deliveries AS d INDEXED BY deliveries_due")
	postgresIndexes = strings.NewReplacer("{leased}", "deliveries", "{due}", "deliveries AS d")
)

// selectCandidates ($1 now, $2 per endpoint, $3 per organization, $4 how
// many) reads due, unleased deliveries in due order, leaving out those of
// the endpoints and organizations at their bounds. Its order is the
// index's, so the first rows are read without sorting the rest.
const selectCandidates = `
WITH held_by_endpoint AS (
    SELECT namespace, endpoint, COUNT(*) AS n FROM {leased}
    WHERE lease_until > $1 GROUP BY namespace, endpoint
), held_by_org AS (
    SELECT namespace, COUNT(*) AS n FROM {leased}
    WHERE lease_until > $1 GROUP BY namespace
)
SELECT d.namespace, d.endpoint, d.delivery_id, COALESCE(e.n, 0), COALESCE(o.n, 0)
FROM {due}
LEFT JOIN held_by_endpoint e ON e.namespace = d.namespace AND e.endpoint = d.endpoint
LEFT JOIN held_by_org o ON o.namespace = d.namespace
WHERE d.due_at <= $1 AND (d.lease_until IS NULL OR d.lease_until <= $1)
  AND COALESCE(e.n, 0) < $2 AND COALESCE(o.n, 0) < $3
ORDER BY d.due_at, d.namespace, d.endpoint, d.delivery_id LIMIT $4`

// reserveDelivery ($10 the lease's end, $13 now, $14 per organization,
// $15 per endpoint) inserts a test delivery leased, and due when the lease
// lapses, if its organization and endpoint have room for one more attempt.
const reserveDelivery = `
INSERT INTO deliveries (namespace, delivery_id, endpoint, endpoint_id, call_name, event, phase,
                        created_at, completed_at, due_at, object, updated_at, lease_until)
SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $10
WHERE (SELECT COUNT(*) FROM {leased} WHERE lease_until > $13 AND namespace = $1) < $14
  AND (SELECT COUNT(*) FROM {leased} WHERE lease_until > $13 AND namespace = $1 AND endpoint = $3) < $15
ON CONFLICT (namespace, delivery_id) DO NOTHING`

func (l deliveryLog) ClaimDeliveries(ctx context.Context, now time.Time, c Claim) ([]*Delivery, error) {
	if c.Limit <= 0 {
		return nil, nil
	}
	cs, err := l.candidates(ctx, now, c)
	if err != nil {
		return nil, fmt.Errorf("history: claiming deliveries: %w", err)
	}
	picked := fairPick(cs, c.Limit, c.InFlight)
	if len(picked) == 0 {
		return nil, nil
	}
	query, args := leaseQuery(now, now.Add(c.Lease), picked)
	claimed, err := l.deliveries(ctx, true, query, args...)
	if err != nil {
		return nil, fmt.Errorf("history: claiming deliveries: %w", err)
	}
	// RETURNING gives rows in no particular order. A claimed row is due,
	// so its due time is set.
	slices.SortStableFunc(claimed, func(a, b storedDelivery) int { return cmp.Compare(*a.due, *b.due) })
	ds := make([]*Delivery, len(claimed))
	for i, c := range claimed {
		ds[i] = c.d
	}
	return ds, nil
}

func (l deliveryLog) candidates(ctx context.Context, now time.Time, c Claim) ([]candidate, error) {
	var cs []candidate
	err := l.db.query(ctx, false, l.indexes.Replace(selectCandidates),
		[]any{now.UnixNano(), bound(c.InFlight.PerEndpoint), bound(c.InFlight.PerOrganization),
			int64(max(c.Limit*candidatesPerSlot, minCandidates))},
		func(row rowScanner) error {
			var d candidate
			err := row.Scan(&d.namespace, &d.endpoint, &d.deliveryID, &d.endpointHeld, &d.orgHeld)
			cs = append(cs, d)
			return err
		})
	return cs, err
}

// fairPick chooses up to limit of cs (in due order) to claim. Going through
// them in due order, it skips what would take an endpoint or an
// organization past its bound, and gives each of the others a slot: its
// organization's attempts in flight plus its place among that
// organization's chosen. It takes the lowest slots first (due order within
// a slot): every organization's next delivery before any organization's
// second, and an organization with few attempts in flight before one with
// many.
func fairPick(cs []candidate, limit int, bounds InFlightLimits) []candidate {
	type slotted struct {
		candidate
		slot int
	}
	var fitting []slotted
	byOrg, byEndpoint := map[string]int{}, map[[2]string]int{}
	for _, c := range cs {
		endpoint := [2]string{c.namespace, c.endpoint}
		if !below(c.endpointHeld+byEndpoint[endpoint], bounds.PerEndpoint) ||
			!below(c.orgHeld+byOrg[c.namespace], bounds.PerOrganization) {
			continue
		}
		byEndpoint[endpoint]++
		byOrg[c.namespace]++
		fitting = append(fitting, slotted{c, c.orgHeld + byOrg[c.namespace]})
	}
	slices.SortStableFunc(fitting, func(a, b slotted) int { return cmp.Compare(a.slot, b.slot) })
	picked := make([]candidate, 0, min(limit, len(fitting)))
	for _, f := range fitting[:min(limit, len(fitting))] {
		picked = append(picked, f.candidate)
	}
	return picked
}

// below reports whether n is under bound; zero or less is no bound.
func below(n, bound int) bool { return bound <= 0 || n < bound }

// bound is a bound as the SQL compares it: zero or less is none.
func bound(limit int) int64 {
	if limit <= 0 {
		return 1 << 31
	}
	return int64(limit)
}

// leaseQuery leases the picked deliveries that are still due and unleased
// (a concurrent claimer may have taken one since they were read):
// $1 now, $2 the lease's end, then each delivery's namespace and id.
func leaseQuery(now, until time.Time, picked []candidate) (string, []any) {
	args := []any{now.UnixNano(), until.UnixNano()}
	keys := make([]string, len(picked))
	for i, c := range picked {
		args = append(args, c.namespace, c.deliveryID)
		keys[i] = "($" + strconv.Itoa(len(args)-1) + ", $" + strconv.Itoa(len(args)) + ")"
	}
	return `UPDATE deliveries SET lease_until = $2
WHERE due_at <= $1 AND (lease_until IS NULL OR lease_until <= $1)
  AND (namespace, delivery_id) IN (VALUES ` + strings.Join(keys, ", ") + `)
RETURNING ` + deliveryColumns, args
}

func (l deliveryLog) ReserveDelivery(ctx context.Context, d *Delivery, now time.Time,
	lease time.Duration, limits InFlightLimits) (bool, error) {
	leaseEnd := now.Add(lease).UnixNano()
	r, err := deliveryRecordOf(d, &leaseEnd, now)
	if err != nil {
		return false, err
	}
	args := append(r.args(), now.UnixNano(), bound(limits.PerOrganization), bound(limits.PerEndpoint))
	n, err := l.db.exec(ctx, l.indexes.Replace(reserveDelivery), args...)
	if err != nil {
		return false, fmt.Errorf("history: reserving delivery %s: %w", r.deliveryID, err)
	}
	return n == 1, nil
}
