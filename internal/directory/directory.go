// Package directory finds Agents by agent_id, Calls by call_id and
// WebhookEndpoints by endpoint id within an organization (namespace).
// Reads come from the informer cache through field indexes.
//
// Anyone with an API key can send any agent_id or endpoint id, so the REST
// API's lookups of those never read the API server: that would be an
// unthrottled live list per request. A miss looks at the cache again for a
// moment instead (MissGrace), as something applied a moment ago reaches the
// cache within milliseconds. The live reads left are bounded: an endpoint
// this process created seconds ago (a GET right after its POST), a call_id
// (one GET by name; a GET right after a POST never 404s; and for an id
// found nowhere else, one list filtered by the apiserver), and the call
// reconciler's agent lookup (a Call applied with kubectl together with its
// Agent), which costs at most one read per Call created.
package directory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/callid"
)

// Field index names.
const (
	AgentIDField    = "agentID"
	CallIDField     = "callID"
	EndpointIDField = "endpointID"
	// QueuedAgentField indexes queued Calls by the agent_id placing them.
	QueuedAgentField = "queuedAgentID"
)

var (
	// ErrNotFound: nothing by that id in the namespace.
	ErrNotFound = errors.New("not found")
	// ErrAmbiguous: several Agents in the namespace resolve to the same id.
	ErrAmbiguous = errors.New("ambiguous agent id")
)

// IndexFields registers the indexes the directory reads.
func IndexFields(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &switchboardv1.Agent{}, AgentIDField, func(o client.Object) []string {
		return []string{NormalizeAgentID(o.(*switchboardv1.Agent).ResolvedID())}
	}); err != nil {
		return fmt.Errorf("indexing agents by id: %w", err)
	}
	if err := indexer.IndexField(ctx, &switchboardv1.Call{}, CallIDField, func(o client.Object) []string {
		return []string{callid.Of(o.(*switchboardv1.Call))}
	}); err != nil {
		return fmt.Errorf("indexing calls by id: %w", err)
	}
	if err := indexer.IndexField(ctx, &switchboardv1.Call{}, QueuedAgentField, func(o client.Object) []string {
		c := o.(*switchboardv1.Call)
		if c.CurrentPhase() != switchboardv1.CallQueued {
			return nil
		}
		return []string{NormalizeAgentID(c.Spec.AgentID)}
	}); err != nil {
		return fmt.Errorf("indexing queued calls by agent: %w", err)
	}
	if err := indexer.IndexField(ctx, &switchboardv1.WebhookEndpoint{}, EndpointIDField, func(o client.Object) []string {
		return []string{o.(*switchboardv1.WebhookEndpoint).ResolvedID()}
	}); err != nil {
		return fmt.Errorf("indexing webhook endpoints by id: %w", err)
	}
	return nil
}

// NormalizeAgentID makes UUIDs comparable whatever their letter case.
func NormalizeAgentID(id string) string { return strings.ToLower(id) }

// DefaultMissGrace is how long an agent or endpoint lookup of the REST API
// looks at the cache again before it answers ErrNotFound.
const DefaultMissGrace = time.Second

// missRecheck is how often the cache is looked at during the grace.
const missRecheck = 20 * time.Millisecond

// Directory looks resources up.
type Directory struct {
	// Cache is the manager's cached client (indexed).
	Cache client.Reader
	// Live reads straight from the API server.
	Live client.Reader
	// MissGrace is how long Agent and Endpoint look at the cache again
	// when it does not have the id; DefaultMissGrace when zero, no second
	// look when negative.
	MissGrace time.Duration

	created recentEndpoints
}

// Agent returns the Agent of namespace whose agent_id is id, for the REST
// API: from the cache, looked at again for up to MissGrace (an Agent
// applied a moment ago is found), never from the API server.
func (d *Directory) Agent(ctx context.Context, namespace, id string) (*switchboardv1.Agent, error) {
	var agent *switchboardv1.Agent
	err := d.awaitCache(ctx, func() (err error) {
		agent, err = d.CachedAgent(ctx, namespace, id)
		return err
	})
	return agent, err
}

// CachedAgent is Agent with one look at the cache: for reconcilers, which
// must not wait.
func (d *Directory) CachedAgent(ctx context.Context, namespace, id string) (*switchboardv1.Agent, error) {
	var cached switchboardv1.AgentList
	if err := d.Cache.List(ctx, &cached, client.InNamespace(namespace),
		client.MatchingFields{AgentIDField: NormalizeAgentID(id)}); err != nil {
		return nil, err
	}
	return oneAgent(cached.Items)
}

// AgentConfirmed is CachedAgent, confirming a miss with a live list. It is
// the call reconciler's, which must not fail a Call applied together with
// its Agent (one `kubectl apply`) because the cache has not seen the Agent
// yet. Its cost is bounded by the Calls created: the REST API creates none
// for an agent it did not find.
func (d *Directory) AgentConfirmed(ctx context.Context, namespace, id string) (*switchboardv1.Agent, error) {
	agent, err := d.CachedAgent(ctx, namespace, id)
	if !errors.Is(err, ErrNotFound) {
		return agent, err
	}
	var live switchboardv1.AgentList
	if err := d.Live.List(ctx, &live, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	return oneAgent(filterAgents(live.Items, NormalizeAgentID(id)))
}

// awaitCache runs lookup until it finds something or fails otherwise than
// ErrNotFound, for at most MissGrace. A request that goes away stops it:
// no one waits for the answer.
func (d *Directory) awaitCache(ctx context.Context, lookup func() error) error {
	grace := d.MissGrace
	if grace == 0 {
		grace = DefaultMissGrace
	}
	deadline := time.Now().Add(grace)
	for {
		err := lookup()
		if !errors.Is(err, ErrNotFound) || !time.Now().Before(deadline) {
			return err
		}
		t := time.NewTimer(missRecheck)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

func oneAgent(agents []switchboardv1.Agent) (*switchboardv1.Agent, error) {
	switch len(agents) {
	case 0:
		return nil, ErrNotFound
	case 1:
		return &agents[0], nil
	default:
		return nil, ErrAmbiguous
	}
}

func filterAgents(agents []switchboardv1.Agent, id string) []switchboardv1.Agent {
	var out []switchboardv1.Agent
	for i := range agents {
		if NormalizeAgentID(agents[i].ResolvedID()) == id {
			out = append(out, agents[i])
		}
	}
	return out
}

// Call returns the Call of namespace whose call_id is id: from the cache
// (this replica's Calls and the unassigned ones), else one live GET by the
// name a REST API call has.
func (d *Directory) Call(ctx context.Context, namespace, id string) (*switchboardv1.Call, error) {
	var cached switchboardv1.CallList
	if err := d.Cache.List(ctx, &cached, client.InNamespace(namespace),
		client.MatchingFields{CallIDField: id}); err != nil {
		return nil, err
	}
	if len(cached.Items) > 0 {
		return &cached.Items[0], nil
	}
	// REST API calls are named after their id: one live GET settles a miss.
	var live switchboardv1.Call
	err := d.Live.Get(ctx, client.ObjectKey{Namespace: namespace, Name: callid.ResourceName(id)}, &live)
	switch {
	case apierrors.IsNotFound(err):
		return nil, ErrNotFound
	case err != nil:
		return nil, err
	case callid.Of(&live) != id:
		return nil, ErrNotFound
	}
	return &live, nil
}

// CallIDSelectableField is the field of a Call the apiserver filters by
// (the CRD's selectableFields): its call id once the reconciler set it.
const CallIDSelectableField = "status.callID"

// LiveCall finds the Call of namespace whose call_id is id with one
// consistent list (served from the apiserver's watch cache, see
// shard.EachLive), filtered there by status.callID. It
// is the last resort of a read by id: a Call applied with kubectl (named
// by its author, not after its id) that another replica carries is in
// neither this replica's cache nor at the name of its id.
func (d *Directory) LiveCall(ctx context.Context, namespace, id string) (*switchboardv1.Call, error) {
	var live switchboardv1.CallList
	if err := d.Live.List(ctx, &live, client.InNamespace(namespace),
		client.MatchingFields{CallIDSelectableField: id}); err != nil {
		return nil, err
	}
	if len(live.Items) == 0 {
		return nil, ErrNotFound
	}
	return &live.Items[0], nil
}

// Endpoint returns the WebhookEndpoint of namespace whose REST id is id,
// from the cache, looked at again for up to MissGrace. Only an endpoint
// this process created seconds ago (EndpointCreated) is read from the API
// server when the cache does not have it: a GET right after the POST that
// answered its id finds it, however far the cache lags.
func (d *Directory) Endpoint(ctx context.Context, namespace, id string) (*switchboardv1.WebhookEndpoint, error) {
	if key, ok := d.created.lookup(id, time.Now()); ok && key.Namespace == namespace {
		if ep, err := d.cachedEndpoint(ctx, namespace, id); !errors.Is(err, ErrNotFound) {
			return ep, err
		}
		return d.liveEndpoint(ctx, key, id)
	}
	var ep *switchboardv1.WebhookEndpoint
	err := d.awaitCache(ctx, func() (err error) {
		ep, err = d.cachedEndpoint(ctx, namespace, id)
		return err
	})
	return ep, err
}

func (d *Directory) cachedEndpoint(ctx context.Context, namespace, id string) (*switchboardv1.WebhookEndpoint, error) {
	var cached switchboardv1.WebhookEndpointList
	if err := d.Cache.List(ctx, &cached, client.InNamespace(namespace),
		client.MatchingFields{EndpointIDField: id}); err != nil {
		return nil, err
	}
	if len(cached.Items) == 0 {
		return nil, ErrNotFound
	}
	return &cached.Items[0], nil
}

func (d *Directory) liveEndpoint(ctx context.Context, key client.ObjectKey, id string) (*switchboardv1.WebhookEndpoint, error) {
	var live switchboardv1.WebhookEndpoint
	err := d.Live.Get(ctx, key, &live)
	switch {
	case apierrors.IsNotFound(err) || (err == nil && live.ResolvedID() != id):
		return nil, ErrNotFound
	case err != nil:
		return nil, err
	}
	return &live, nil
}

// EndpointCreated notes an endpoint this process has just created, so that
// Endpoint finds it before the cache does.
func (d *Directory) EndpointCreated(ep *switchboardv1.WebhookEndpoint) {
	d.created.add(ep.ResolvedID(), client.ObjectKeyFromObject(ep), time.Now())
}
