package campaigns

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/callpolicy"
	"github.com/switchboard-dev/switchboard/internal/directory"
	"github.com/switchboard-dev/switchboard/internal/history"
)

// DuplicatesAnnotation on a Campaign counts the contacts its creation left
// out because an earlier one had the same number.
const DuplicatesAnnotation = "switchboard.dev/duplicate-contacts"

// Service is the campaign operations the REST API, the dashboard and the
// SDK path share: each handler decodes, calls one of these, renders.
type Service struct {
	// Client creates and changes Campaigns; Cache reads them, and Live
	// when the cache has not seen one yet.
	Client    client.Client
	Cache     client.Reader
	Live      client.Reader
	Directory *directory.Directory
	Contacts  history.Contacts
	// Region reads numbers sent without "+".
	Region string
	Now    func() time.Time

	// written makes reads consistent with this process's own writes.
	written writes
	// adding serializes the additions of contacts, which number them.
	adding sync.Mutex
}

// Errors of the operations.
var (
	// ErrNotFound: no campaign of that id in the organization.
	ErrNotFound = errors.New("campaign not found")
	// ErrEnded: the campaign is completed or canceled.
	ErrEnded = errors.New("campaign has ended")
)

type (
	// AgentUnknown: no agent of that id in the organization.
	AgentUnknown struct{ AgentID string }
	// InvalidContacts: some contacts cannot be called; nothing was created.
	InvalidContacts struct{ Items []Invalid }
)

func (e *AgentUnknown) Error() string { return "No agent " + e.AgentID + " in this organization." }
func (e *InvalidContacts) Error() string {
	return fmt.Sprintf("%d contacts are invalid, the first at %s", len(e.Items), e.Items[0].Where())
}

// Created is a campaign created.
type Created struct {
	Campaign *switchboardv1.Campaign
	// Contacts is how many contacts it holds; Duplicates how many were
	// left out as repeats.
	Contacts, Duplicates int
}

// Create creates campaign id of namespace with spec and contacts: the
// contacts go to the history store first, then the resource, so the
// runner never sees a campaign without its contacts. Both steps are
// idempotent: a request repeated with the same id (an Idempotency-Key)
// finds what the first one created.
func (s *Service) Create(ctx context.Context, ns, id string, spec switchboardv1.CampaignSpec,
	contacts []ContactInput) (*Created, error) {
	agent, err := s.Directory.Agent(ctx, ns, directory.NormalizeAgentID(spec.AgentID))
	if err != nil {
		if errors.Is(err, directory.ErrNotFound) || errors.Is(err, directory.ErrAmbiguous) {
			return nil, &AgentUnknown{AgentID: spec.AgentID}
		}
		return nil, err
	}
	now := s.Now()
	prepared, invalid := Prepare(contacts, s.Region, 0, now)
	if len(invalid) == 0 {
		invalid = MissingRequired(callpolicy.RequiredVariables(agent), contacts)
	}
	if len(invalid) > 0 {
		return nil, &InvalidContacts{Items: invalid}
	}
	if _, err := s.Contacts.AddContacts(ctx, ns, id, prepared.Contacts, now); err != nil {
		return nil, err
	}
	c := &switchboardv1.Campaign{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: id,
		Annotations: map[string]string{DuplicatesAnnotation: fmt.Sprint(prepared.Duplicates)}}, Spec: spec}
	err = s.Client.Create(ctx, c)
	if apierrors.IsAlreadyExists(err) {
		err = s.Live.Get(ctx, client.ObjectKeyFromObject(c), c)
	}
	if err != nil {
		return nil, err
	}
	s.written.remember(client.ObjectKeyFromObject(c), c.Generation, time.Now())
	return &Created{Campaign: c, Contacts: len(prepared.Contacts), Duplicates: prepared.Duplicates}, nil
}

// Get returns campaign id of namespace, as the cache has it unless this
// process created or changed it a moment ago and the cache does not show
// that yet: then as the apiserver has it.
func (s *Service) Get(ctx context.Context, ns, id string) (*switchboardv1.Campaign, error) {
	key := client.ObjectKey{Namespace: ns, Name: id}
	c := &switchboardv1.Campaign{}
	err := s.Cache.Get(ctx, key, c)
	if apierrors.IsNotFound(err) || err == nil && s.written.stale(key, c.Generation, time.Now()) {
		// Created a moment ago and not in the cache yet, or changed and
		// the cache has the older copy: one live read.
		c = &switchboardv1.Campaign{}
		err = s.Live.Get(ctx, key, c)
	}
	if apierrors.IsNotFound(err) {
		return nil, ErrNotFound
	}
	return c, err
}

// List returns the campaigns of namespace, newest first: the cache's,
// with those this process wrote a moment ago read live where the cache
// lags (a handful at most, so the list stays cheap).
func (s *Service) List(ctx context.Context, ns string) ([]switchboardv1.Campaign, error) {
	var list switchboardv1.CampaignList
	if err := s.Cache.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	now := time.Now()
	items := make([]switchboardv1.Campaign, 0, len(list.Items))
	seen := make(map[string]bool, len(list.Items))
	var lagging []client.ObjectKey
	for _, c := range list.Items {
		seen[c.Name] = true
		if key := client.ObjectKeyFromObject(&c); s.written.stale(key, c.Generation, now) {
			lagging = append(lagging, key)
			continue
		}
		items = append(items, c)
	}
	for _, key := range append(lagging, s.written.missing(ns, seen, now)...) {
		var c switchboardv1.Campaign
		err := s.Live.Get(ctx, key, &c)
		if apierrors.IsNotFound(err) {
			continue // deleted since
		}
		if err != nil {
			return nil, err
		}
		items = append(items, c)
	}
	sort.SliceStable(items, func(i, j int) bool {
		return items[j].CreationTimestamp.Before(&items[i].CreationTimestamp)
	})
	return items, nil
}

// Action is a change of a campaign's course.
type Action string

// The actions of POST /v1/campaigns/{id}/pause|resume|cancel.
const (
	Pause  Action = "pause"
	Resume Action = "resume"
	Cancel Action = "cancel"
)

// Do applies action to campaign id: a patch of its spec, which the runner
// sees at its next tick. Pausing or resuming an ended campaign is ErrEnded;
// canceling one is a no-op.
func (s *Service) Do(ctx context.Context, ns, id string, action Action) (*switchboardv1.Campaign, error) {
	// Decided on the campaign as the apiserver has it, not the cache's
	// copy: a resume right after a cancel must see the cancel.
	c := &switchboardv1.Campaign{}
	if err := s.Live.Get(ctx, client.ObjectKey{Namespace: ns, Name: id}, c); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, ErrNotFound
		}
		return nil, err
	}
	ended := c.Spec.Canceled || c.Status.State == switchboardv1.CampaignCompleted
	if ended && action == Cancel {
		return c, nil
	}
	if ended {
		return nil, ErrEnded
	}
	before := c.DeepCopy()
	switch action {
	case Pause:
		c.Spec.Paused = true
	case Resume:
		c.Spec.Paused = false
	case Cancel:
		c.Spec.Canceled = true
	}
	if err := s.Client.Patch(ctx, c, client.MergeFrom(before)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, ErrNotFound
		}
		return nil, err
	}
	s.written.remember(client.ObjectKeyFromObject(c), c.Generation, time.Now())
	return c, nil
}
