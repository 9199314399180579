package campaigns

import (
	"context"
	"errors"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/callpolicy"
	"github.com/switchboard-dev/switchboard/internal/directory"
)

// ContactsAddedAnnotation on a Campaign counts the contacts added to it
// after its creation. Writing it wakes the reconciler, which counts them
// at once, and makes a completion written from an older count conflict.
const ContactsAddedAnnotation = "switchboard.dev/contacts-added"

// Added is contacts added to a running campaign.
type Added struct {
	Campaign *switchboardv1.Campaign
	// Added were stored; Duplicates left out, repeating a number of the
	// list or one the campaign holds already.
	Added, Duplicates int
}

// AddContacts adds contacts to campaign id of namespace: ErrEnded once it
// has completed or was canceled. The contacts are stored first and
// numbered after the campaign's last; the campaign is then annotated
// under optimistic concurrency, so that a reconciler that counted before
// the addition cannot complete it without counting again. Additions in
// this process run one at a time, as each numbers after the last.
func (s *Service) AddContacts(ctx context.Context, ns, id string, contacts []ContactInput) (*Added, error) {
	s.adding.Lock()
	defer s.adding.Unlock()
	c, err := s.open(ctx, client.ObjectKey{Namespace: ns, Name: id})
	if err != nil {
		return nil, err
	}
	last, err := s.Contacts.MaxContactSeq(ctx, ns, id)
	if err != nil {
		return nil, err
	}
	// Contacts declared in the resource take seqs 0 to len-1, perhaps
	// not imported yet.
	first := max(last+1, int64(len(c.Spec.Contacts)))
	now := s.Now()
	prepared, invalid := Prepare(contacts, s.Region, first, now)
	if len(invalid) == 0 {
		if invalid, err = s.missingRequired(ctx, c, contacts); err != nil {
			return nil, err
		}
	}
	if len(invalid) > 0 {
		return nil, &InvalidContacts{Items: invalid}
	}
	added, err := s.Contacts.AddContacts(ctx, ns, id, prepared.Contacts, now)
	if err != nil {
		return nil, err
	}
	if c, err = s.announce(ctx, c, added, now); err != nil {
		return nil, err
	}
	return &Added{Campaign: c, Added: added,
		Duplicates: prepared.Duplicates + len(prepared.Contacts) - added}, nil
}

// open reads the campaign from the apiserver: ErrEnded when it has ended.
func (s *Service) open(ctx context.Context, key client.ObjectKey) (*switchboardv1.Campaign, error) {
	c := &switchboardv1.Campaign{}
	if err := s.Live.Get(ctx, key, c); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, ErrNotFound
		}
		return nil, err
	}
	if c.Spec.Canceled || c.Status.State == switchboardv1.CampaignCompleted || c.Status.State == switchboardv1.CampaignCanceled {
		return nil, ErrEnded
	}
	return c, nil
}

// maxAnnounce bounds the tries of the annotation: each conflict is a
// status write of the reconciler's, a few seconds apart.
const maxAnnounce = 5

// announce adds n to the campaign's ContactsAddedAnnotation. Should the
// campaign have ended in the meantime (completed from a count taken
// before the addition), the contacts just added are canceled, never to be
// dialed, and the answer is ErrEnded.
func (s *Service) announce(ctx context.Context, c *switchboardv1.Campaign, n int, now time.Time) (*switchboardv1.Campaign, error) {
	for range maxAnnounce {
		before := c.DeepCopy()
		had, _ := strconv.Atoi(c.Annotations[ContactsAddedAnnotation])
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[ContactsAddedAnnotation] = strconv.Itoa(had + n)
		err := s.Client.Patch(ctx, c, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
		if err == nil {
			s.written.remember(client.ObjectKeyFromObject(c), c.Generation, time.Now())
			return c, nil
		}
		if !apierrors.IsConflict(err) {
			return nil, err
		}
		if c, err = s.open(ctx, client.ObjectKeyFromObject(before)); err != nil {
			if errors.Is(err, ErrEnded) {
				_, cancelErr := s.Contacts.CancelContacts(ctx, before.Namespace, before.Name, now)
				return nil, errors.Join(err, cancelErr)
			}
			return nil, err
		}
	}
	return nil, errors.New("the campaign kept changing while its new contacts were announced")
}

// missingRequired is MissingRequired for the campaign's agent. Without
// one (deleted since the campaign was created) there is nothing to check
// against: the contacts wait for it, as the campaign's others do.
func (s *Service) missingRequired(ctx context.Context, c *switchboardv1.Campaign, in []ContactInput) ([]Invalid, error) {
	agent, err := s.Directory.Agent(ctx, c.Namespace, directory.NormalizeAgentID(c.Spec.AgentID))
	switch {
	case errors.Is(err, directory.ErrNotFound) || errors.Is(err, directory.ErrAmbiguous):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return MissingRequired(callpolicy.RequiredVariables(agent), in), nil
}
