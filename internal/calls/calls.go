// Package calls is where an organization's calls are read, live or
// archived: a Call resource while it is in the cluster, its record in the
// history store after it has left. The REST API and the dashboard read
// calls through Book, so both see the same thing.
package calls

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/callid"
	"github.com/switchboard-dev/switchboard/internal/directory"
	"github.com/switchboard-dev/switchboard/internal/history"
)

// ErrNotFound: no call by that id in the organization, live or archived.
var ErrNotFound = errors.New("call not found")

// Book reads calls from the cluster first and the history store second.
type Book struct {
	Directory *directory.Directory
	// Cache lists the live Calls of a namespace.
	Cache   client.Reader
	History history.Store
}

// Get returns the call of namespace whose call_id is id. A live Call wins
// over its record: it is the newer of the two.
func (b *Book) Get(ctx context.Context, namespace, id string) (*switchboardv1.Call, error) {
	c, err := b.Directory.Call(ctx, namespace, id)
	if !errors.Is(err, directory.ErrNotFound) {
		return c, err
	}
	c, err = b.History.GetCall(ctx, namespace, id)
	if errors.Is(err, history.ErrNotFound) {
		return nil, ErrNotFound
	}
	return c, err
}

// Page is one page of a list, newest first.
type Page struct {
	Calls []switchboardv1.Call
	// More: calls older than the last one match too.
	More bool
}

// List returns the calls of namespace matching q, newest first, live and
// archived together without gaps or duplicates.
//
// Every call is in the cluster, in the store, or in both (it is archived
// before it is deleted), and its place in the order never changes, so the
// first q.Limit calls of the union are among the first q.Limit+1 of each
// side. A call in both is taken from the cluster, whose state is the newer.
func (b *Book) List(ctx context.Context, namespace string, q history.CallQuery) (Page, error) {
	live, liveIDs, err := b.liveCalls(ctx, namespace, q)
	if err != nil {
		return Page{}, err
	}
	archived, err := b.archivedCalls(ctx, namespace, q, liveIDs)
	if err != nil {
		return Page{}, err
	}
	all := append(live, archived...)
	slices.SortFunc(all, func(a, b switchboardv1.Call) int { return newestFirst(history.KeyOf(&a), history.KeyOf(&b)) })
	if len(all) > q.Limit {
		return Page{Calls: all[:q.Limit], More: true}, nil
	}
	return Page{Calls: all}, nil
}

// liveCalls lists the cluster's calls of namespace matching q, and the ids
// of all its calls, matching or not.
func (b *Book) liveCalls(ctx context.Context, namespace string, q history.CallQuery) ([]switchboardv1.Call, map[string]bool, error) {
	var list switchboardv1.CallList
	// The cache's objects are read, never changed: no copy of each.
	if err := b.Cache.List(ctx, &list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, fmt.Errorf("listing live calls: %w", err)
	}
	ids := make(map[string]bool, len(list.Items))
	var out []switchboardv1.Call
	for i := range list.Items {
		c := &list.Items[i]
		ids[callid.Of(c)] = true
		if Matches(c, q) {
			out = append(out, *c.DeepCopy())
		}
	}
	slices.SortFunc(out, func(a, b switchboardv1.Call) int { return newestFirst(history.KeyOf(&a), history.KeyOf(&b)) })
	if len(out) > q.Limit+1 {
		out = out[:q.Limit+1]
	}
	return out, ids, nil
}

// archivedCalls reads the store's first q.Limit+1 matching calls that are
// not live. A record of a live call is skipped (the live one stands for
// it), and the store is read on past it, so that skipping leaves no gap.
func (b *Book) archivedCalls(ctx context.Context, namespace string, q history.CallQuery, live map[string]bool) ([]switchboardv1.Call, error) {
	want := q.Limit + 1
	var out []switchboardv1.Call
	for {
		page := q
		page.Limit = want - len(out)
		got, err := b.History.ListCalls(ctx, namespace, page)
		if err != nil {
			return nil, fmt.Errorf("listing archived calls: %w", err)
		}
		for i := range got {
			if !live[callid.Of(&got[i])] {
				out = append(out, got[i])
			}
		}
		if len(got) < page.Limit || len(out) >= want {
			return out, nil
		}
		last := history.KeyOf(&got[len(got)-1])
		q.After = &last
	}
}

// Matches reports whether c passes q's filters and comes after q.After.
func Matches(c *switchboardv1.Call, q history.CallQuery) bool {
	return inRange(history.KeyOf(c), q) && fieldsMatch(c, q)
}

// inRange: after the cursor, inside the created_after/before bounds.
func inRange(key history.Key, q history.CallQuery) bool {
	switch {
	case q.After != nil && !key.Before(*q.After):
		return false
	case !q.CreatedAfter.IsZero() && !key.CreatedAt.After(q.CreatedAfter):
		return false
	case !q.CreatedBefore.IsZero() && !key.CreatedAt.Before(q.CreatedBefore):
		return false
	}
	return true
}

func fieldsMatch(c *switchboardv1.Call, q history.CallQuery) bool {
	switch {
	case q.Status != "" && string(c.CurrentPhase()) != q.Status:
		return false
	case q.Disposition != "" && string(c.Status.Disposition) != q.Disposition:
		return false
	case q.AgentID != "" && directory.NormalizeAgentID(c.Spec.AgentID) != directory.NormalizeAgentID(q.AgentID):
		return false
	case q.ToNumber != "" && c.Spec.ToNumber != q.ToNumber:
		return false
	case q.Source != "" && string(c.Spec.Source) != q.Source:
		return false
	}
	return true
}

func newestFirst(a, b history.Key) int {
	switch {
	case b.Before(a):
		return -1
	case a.Before(b):
		return 1
	}
	return 0
}
