// Package calls is where an organization's calls are read, live or
// archived: a Call resource while it is in the cluster, its record in the
// history store after it has left. The REST API and the dashboard read
// calls through Book, so both see the same thing.
package calls

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/callid"
	"github.com/switchboard-dev/switchboard/internal/directory"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/shard"
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
		string(switchboardv1.SourceKubectl), string(switchboardv1.SourceCampaign)}
)

// ErrNotFound: no call by that id in the organization, live or archived.
var ErrNotFound = errors.New("call not found")

// Book reads calls from the cluster first and the history store second.
type Book struct {
	Directory *directory.Directory
	// Live lists the Calls of a namespace from the apiserver (its watch
	// cache), a page at a time: the manager's cache holds only this
	// replica's share of them (package shard).
	Live    client.Reader
	History history.Store
}

// Get returns the call of namespace whose call_id is id. A live Call wins
// over its record: it is the newer of the two. A Call applied with kubectl
// that another replica carries is found last, by a filtered live list.
func (b *Book) Get(ctx context.Context, namespace, id string) (*switchboardv1.Call, error) {
	c, err := b.Directory.Call(ctx, namespace, id)
	if !errors.Is(err, directory.ErrNotFound) {
		return c, err
	}
	c, err = b.History.GetCall(ctx, namespace, id)
	if !errors.Is(err, history.ErrNotFound) {
		return c, err
	}
	c, err = b.Directory.LiveCall(ctx, namespace, id)
	if errors.Is(err, directory.ErrNotFound) {
		return nil, ErrNotFound
	}
	return c, err
}

// ErrNoTranscript: the call has no transcript (it has not connected, or
// not ended yet, or the transcript's retention has passed).
var ErrNoTranscript = errors.New("transcript not found")

// Transcript returns the stored transcript of the call of namespace whose
// call_id is id; the caller has found the call in namespace first.
func (b *Book) Transcript(ctx context.Context, namespace, id string) (history.Transcript, error) {
	t, err := b.History.GetTranscript(ctx, namespace, id)
	if errors.Is(err, history.ErrNotFound) {
		return history.Transcript{}, ErrNoTranscript
	}
	return t, err
}

// Page is one page of a list, newest first.
type Page struct {
	Calls []switchboardv1.Call
	// More: calls older than the last one match too.
	More bool
}

// List returns the calls of namespace matching q, newest first, live and
// archived together without gaps or duplicates (see Each).
func (b *Book) List(ctx context.Context, namespace string, q history.CallQuery) (Page, error) {
	var page Page
	for c, err := range b.Each(ctx, namespace, q) {
		switch {
		case err != nil:
			return Page{}, err
		case len(page.Calls) == q.Limit:
			page.More = true
			return page, nil
		}
		page.Calls = append(page.Calls, *c.DeepCopy())
	}
	return page, nil
}

// The store is read in chunks of at most archiveChunkRows calls, ended
// early at archiveChunkBytes of stored objects: a reader holds one chunk
// at a time, and holds a database connection only while it reads one, not
// while its caller writes the calls to a slow client.
const (
	archiveChunkRows  = 50
	archiveChunkBytes = 256 << 10
)

// Each yields the first q.Limit+1 calls of namespace matching q, newest
// first, live and archived together without gaps or duplicates; the one
// past q.Limit tells the caller that more follow. An error ends it. The
// calls yielded must not be changed or kept: archived ones are read a
// chunk at a time.
//
// Every call is in the cluster, in the store, or in both (it is archived
// before it is deleted), and its place in the order never changes, so the
// first q.Limit+1 calls of the union are among the first q.Limit+1 of each
// side: the live ones are read from the apiserver, and the archived ones are
// read from the store as the merge needs them. A call in both is taken
// from the cluster, whose state is the newer.
func (b *Book) Each(ctx context.Context, namespace string, q history.CallQuery) iter.Seq2[*switchboardv1.Call, error] {
	return func(yield func(*switchboardv1.Call, error) bool) {
		live, err := b.liveCalls(ctx, namespace, q)
		if err != nil {
			yield(nil, err)
			return
		}
		archived := &archiveReader{store: b.History, ns: namespace, q: q, left: q.Limit + 1, live: liveIDs(live)}
		for range q.Limit + 1 {
			a, err := archived.peek(ctx)
			if err != nil {
				yield(nil, err)
				return
			}
			var c *switchboardv1.Call
			switch {
			case len(live) > 0 && (a == nil || history.KeyOf(a).Before(history.KeyOf(live[0]))):
				c, live = live[0], live[1:]
			case a != nil:
				c = a
				archived.next()
			default:
				return
			}
			if !yield(c, nil) {
				return
			}
		}
	}
}

func liveIDs(live []*switchboardv1.Call) map[string]bool {
	ids := make(map[string]bool, len(live))
	for _, c := range live {
		ids[callid.Of(c)] = true
	}
	return ids
}

// archiveReader reads a list's archived calls a chunk at a time, leaving
// out those the cluster still has.
type archiveReader struct {
	store history.Store
	ns    string
	// q is the list's query; its After moves past each chunk read.
	q     history.CallQuery
	left  int // rows still to read
	live  map[string]bool
	chunk []switchboardv1.Call
	done  bool
}

// peek returns the next archived call, nil after the last.
func (r *archiveReader) peek(ctx context.Context) (*switchboardv1.Call, error) {
	for {
		for len(r.chunk) > 0 && r.live[callid.Of(&r.chunk[0])] {
			r.chunk = r.chunk[1:]
		}
		if len(r.chunk) > 0 {
			return &r.chunk[0], nil
		}
		if r.done || r.left == 0 {
			return nil, nil
		}
		if err := r.read(ctx); err != nil {
			return nil, err
		}
	}
}

func (r *archiveReader) next() { r.chunk = r.chunk[1:] }

// read reads the next chunk, after the last call read.
func (r *archiveReader) read(ctx context.Context) error {
	q := r.q
	q.Limit, q.MaxBytes = min(r.left, archiveChunkRows), archiveChunkBytes
	chunk, err := r.store.ListCalls(ctx, r.ns, q)
	if err != nil {
		return fmt.Errorf("listing archived calls: %w", err)
	}
	if len(chunk) == 0 {
		r.done = true
		return nil
	}
	r.left -= len(chunk)
	last := history.KeyOf(&chunk[len(chunk)-1])
	r.q.After = &last
	r.chunk = chunk
	return nil
}

// liveCalls returns the cluster's first q.Limit+1 calls of namespace
// matching q, newest first. The namespace's calls are read a page at a
// time (every call of the retention window, across every worker), and
// only those q.Limit+1 are kept.
func (b *Book) liveCalls(ctx context.Context, namespace string, q history.CallQuery) ([]*switchboardv1.Call, error) {
	var newest []*switchboardv1.Call
	keep := q.Limit + 1
	err := shard.EachLive(ctx, b.Live, namespace, labelsOf(q), func(c *switchboardv1.Call) error {
		if !Matches(c, q) {
			return nil
		}
		at, _ := slices.BinarySearchFunc(newest, history.KeyOf(c), func(kept *switchboardv1.Call, key history.Key) int {
			return newestFirst(history.KeyOf(kept), key)
		})
		if at < keep {
			newest = slices.Insert(newest, at, c.DeepCopy())
			newest = newest[:min(len(newest), keep)]
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing live calls: %w", err)
	}
	return newest, nil
}

// labelsOf is what the apiserver can filter of q: the campaign, a label.
func labelsOf(q history.CallQuery) labels.Selector {
	if q.Campaign == "" {
		return nil
	}
	return labels.SelectorFromSet(labels.Set{switchboardv1.CampaignLabel: q.Campaign})
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
	case q.Campaign != "" && c.Labels[switchboardv1.CampaignLabel] != q.Campaign:
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
