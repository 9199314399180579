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
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/callid"
	"github.com/switchboard-dev/switchboard/internal/directory"
	"github.com/switchboard-dev/switchboard/internal/history"
)

// The values a list of calls is filtered by, in the order forms show them.
var (
	Statuses = []string{string(switchboardv1.CallQueued), string(switchboardv1.CallInProgress),
		string(switchboardv1.CallEnded), string(switchboardv1.CallFailed)}
	Dispositions = []string{string(switchboardv1.DispositionAnswered), string(switchboardv1.DispositionAnsweringMachine),
		string(switchboardv1.DispositionNoAnswer), string(switchboardv1.DispositionBusy), string(switchboardv1.DispositionRejected),
		string(switchboardv1.DispositionUnreachable), string(switchboardv1.DispositionInvalidNumber),
		string(switchboardv1.DispositionCarrierFailure)}
	Sources = []string{string(switchboardv1.SourceAPI), string(switchboardv1.SourceDashboard),
		string(switchboardv1.SourceKubectl)}
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
// first q.Limit+1 calls of the union are among the first q.Limit+1 of each
// side: one bounded read of each. A call in both is taken from the cluster,
// whose state is the newer.
func (b *Book) List(ctx context.Context, namespace string, q history.CallQuery) (Page, error) {
	live, err := b.liveCalls(ctx, namespace, q)
	if err != nil {
		return Page{}, err
	}
	page := q
	page.Limit = q.Limit + 1
	archived, err := b.History.ListCalls(ctx, namespace, page)
	if err != nil {
		return Page{}, fmt.Errorf("listing archived calls: %w", err)
	}
	seen := make(map[string]bool, len(live))
	for i := range live {
		seen[callid.Of(&live[i])] = true
	}
	all := live
	for i := range archived {
		if !seen[callid.Of(&archived[i])] {
			all = append(all, archived[i])
		}
	}
	slices.SortFunc(all, func(a, b switchboardv1.Call) int { return newestFirst(history.KeyOf(&a), history.KeyOf(&b)) })
	if len(all) > q.Limit {
		return Page{Calls: all[:q.Limit], More: true}, nil
	}
	return Page{Calls: all}, nil
}

// Since returns the calls of namespace created after since, newest first,
// read page by page; past atMost calls it stops and reports that it did.
func (b *Book) Since(ctx context.Context, namespace string, since time.Time, atMost int) (
	[]switchboardv1.Call, bool, error) {
	var out []switchboardv1.Call
	q := history.CallQuery{CreatedAfter: since, Limit: 1000}
	for {
		page, err := b.List(ctx, namespace, q)
		if err != nil {
			return nil, false, err
		}
		out = append(out, page.Calls...)
		if !page.More {
			return out, false, nil
		}
		if len(out) >= atMost {
			return out, true, nil
		}
		after := history.KeyOf(&page.Calls[len(page.Calls)-1])
		q.After = &after
	}
}

// liveCalls returns the cluster's first q.Limit+1 calls of namespace
// matching q. The cache's objects are read in place and only those
// returned are copied: a namespace holds every call of the retention
// window.
func (b *Book) liveCalls(ctx context.Context, namespace string, q history.CallQuery) ([]switchboardv1.Call, error) {
	var list switchboardv1.CallList
	if err := b.Cache.List(ctx, &list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing live calls: %w", err)
	}
	var matching []*switchboardv1.Call
	for i := range list.Items {
		if c := &list.Items[i]; Matches(c, q) {
			matching = append(matching, c)
		}
	}
	slices.SortFunc(matching, func(a, b *switchboardv1.Call) int { return newestFirst(history.KeyOf(a), history.KeyOf(b)) })
	out := make([]switchboardv1.Call, 0, min(len(matching), q.Limit+1))
	for _, c := range matching[:min(len(matching), q.Limit+1)] {
		out = append(out, *c.DeepCopy())
	}
	return out, nil
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
