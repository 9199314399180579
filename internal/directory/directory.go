// Package directory finds Agents by agent_id, Calls by call_id and
// WebhookEndpoints by endpoint id within an organization (namespace). Reads come from the informer cache through field
// indexes; a cache miss falls back to a live read, so a GET right after a
// POST, or a call right after `kubectl apply` of its agent, never 404s.
package directory

import (
	"context"
	"errors"
	"fmt"
	"strings"

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

// Directory looks resources up.
type Directory struct {
	// Cache is the manager's cached client (indexed).
	Cache client.Reader
	// Live reads straight from the API server.
	Live client.Reader
}

// Agent returns the Agent of namespace whose agent_id is id.
func (d *Directory) Agent(ctx context.Context, namespace, id string) (*switchboardv1.Agent, error) {
	id = NormalizeAgentID(id)
	var cached switchboardv1.AgentList
	if err := d.Cache.List(ctx, &cached, client.InNamespace(namespace),
		client.MatchingFields{AgentIDField: id}); err != nil {
		return nil, err
	}
	if len(cached.Items) == 0 {
		// A miss may be an Agent the cache has not seen yet.
		var live switchboardv1.AgentList
		if err := d.Live.List(ctx, &live, client.InNamespace(namespace)); err != nil {
			return nil, err
		}
		cached.Items = filterAgents(live.Items, id)
	}
	switch len(cached.Items) {
	case 0:
		return nil, ErrNotFound
	case 1:
		return &cached.Items[0], nil
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

// Call returns the Call of namespace whose call_id is id.
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

// Endpoint returns the WebhookEndpoint of namespace whose REST id is id.
func (d *Directory) Endpoint(ctx context.Context, namespace, id string) (*switchboardv1.WebhookEndpoint, error) {
	var cached switchboardv1.WebhookEndpointList
	if err := d.Cache.List(ctx, &cached, client.InNamespace(namespace),
		client.MatchingFields{EndpointIDField: id}); err != nil {
		return nil, err
	}
	if len(cached.Items) > 0 {
		return &cached.Items[0], nil
	}
	// The id derives from the UID, not the name (endpoints applied as YAML
	// have names of their own): a miss lists the namespace live.
	var live switchboardv1.WebhookEndpointList
	if err := d.Live.List(ctx, &live, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	for i := range live.Items {
		if live.Items[i].ResolvedID() == id {
			return &live.Items[i], nil
		}
	}
	return nil, ErrNotFound
}
