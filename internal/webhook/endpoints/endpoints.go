// Package endpoints holds the operations on an organization's webhook
// endpoints and their delivery log: create, update, delete, rotate the
// secret, send a test event, list, read and retry deliveries. The REST API
// and the dashboard both call them, so an endpoint behaves the same
// whichever one a customer uses.
package endpoints

import (
	"cmp"
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/go-logr/logr"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/directory"
	"github.com/switchboard-dev/switchboard/internal/egress"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/quota"
	"github.com/switchboard-dev/switchboard/internal/webhook"
	"github.com/switchboard-dev/switchboard/internal/webhook/deliveries"
)

// Error codes a refusal carries (the REST API's error_code).
const (
	CodeSecretMissing = "secret_missing"
	// CodeSecretManaged refuses to rotate a Secret declared in the cluster.
	CodeSecretManaged  = "secret_managed_in_cluster"
	CodeTestNotRetried = "test_not_retried"
)

// IDPattern is what an endpoint id looks like.
const IDPattern = `^we_[0-9a-f]{32}$`

var idPattern = regexp.MustCompile(IDPattern)

// ValidID reports whether id can be an endpoint id.
func ValidID(id string) bool { return idPattern.MatchString(id) }

var (
	// ErrNotFound: no such endpoint in the organization (or it was deleted).
	ErrNotFound = errors.New("webhook endpoint not found")
	// ErrDeliveryNotFound: no such delivery to the endpoint.
	ErrDeliveryNotFound = errors.New("delivery not found")
)

// Refused is an action the endpoint's state or the organization's limits
// refuse; Code names the reason. RetryAfter, when set, is when trying
// again may succeed (a bound on attempts in flight).
type Refused struct {
	Code, Message string
	RetryAfter    time.Duration
}

func (e *Refused) Error() string { return e.Message }

// Unavailable: the cluster or the delivery log did not answer; What says
// what could not be done ("The webhook endpoint could not be created").
// When the API server found the endpoint invalid, Err is its Invalid error.
type Unavailable struct {
	What string
	Err  error
}

func (e *Unavailable) Error() string { return e.What + ": " + e.Err.Error() }
func (e *Unavailable) Unwrap() error { return e.Err }

// Change is what a create or update sets; fields not Set stay as they are.
type Change struct {
	URL            string
	URLSet         bool
	Events         []switchboardv1.WebhookEventType // nil: the call events
	EventsSet      bool
	Description    string
	DescriptionSet bool
	Disabled       bool
	DisabledSet    bool
}

// Apply writes the change into spec.
func (c *Change) Apply(spec *switchboardv1.WebhookEndpointSpec) {
	if c.URLSet {
		spec.URL = c.URL
	}
	if c.EventsSet {
		spec.Events = c.Events
	}
	if c.DescriptionSet {
		spec.Description = c.Description
	}
	if c.DisabledSet {
		spec.Disabled = c.Disabled
	}
}

// Service runs the operations.
type Service struct {
	Directory *directory.Directory
	// Client writes WebhookEndpoints and Secrets.
	Client client.Client
	// Live reads straight from the API server: signing Secrets, which the
	// cache does not hold, and endpoints that must not be a moment old.
	Live  client.Reader
	Quota *quota.Admission
	// Deliveries is the delivery log (the history store).
	DeliveryLog history.DeliveryLog
	// Wake, if set, tells this process's delivery worker a retry was asked.
	Wake func()
	// Sender sends test events (one attempt, no retries).
	Sender *webhook.Sender
	// Policy checks receiver URLs when endpoints are saved or tested.
	Policy egress.URLPolicy
	// RotationOverlap is how long a rotated-out secret keeps signing.
	RotationOverlap time.Duration
	// InFlight bounds the attempts in flight per organization and per
	// endpoint, which test sends share with the delivery worker; Lease is
	// how long a test send holds its slot at most.
	InFlight history.InFlightLimits
	Lease    time.Duration
	Now      func() time.Time
	Log      logr.Logger
}

func (s *Service) now() time.Time {
	if s.Now == nil {
		return time.Now()
	}
	return s.Now()
}

// Find returns the endpoint of namespace whose id is id, from the cache.
func (s *Service) Find(ctx context.Context, namespace, id string) (*switchboardv1.WebhookEndpoint, error) {
	if !ValidID(id) {
		return nil, ErrNotFound
	}
	ep, err := s.Directory.Endpoint(ctx, namespace, id)
	switch {
	case errors.Is(err, directory.ErrNotFound) || (err == nil && ep.DeletionTimestamp != nil):
		return nil, ErrNotFound
	case err != nil:
		return nil, &Unavailable{What: "The webhook endpoint could not be read", Err: err}
	}
	return ep, nil
}

// List returns the organization's endpoints, oldest first; the id breaks
// ties, as creation times have second precision.
func (s *Service) List(ctx context.Context, namespace string) ([]switchboardv1.WebhookEndpoint, error) {
	var list switchboardv1.WebhookEndpointList
	if err := s.Client.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, &Unavailable{What: "The webhook endpoints could not be listed", Err: err}
	}
	items := list.Items[:0]
	for _, ep := range list.Items {
		if ep.DeletionTimestamp == nil {
			items = append(items, ep)
		}
	}
	SortOldestFirst(items)
	return items, nil
}

// Page returns the namespace's endpoints after the one whose id is
// cursor (from the first when cursor is empty), at most limit of them,
// oldest first, and whether more follow. A cursor naming no endpoint of
// the namespace is ErrUnknownCursor.
func (s *Service) Page(ctx context.Context, namespace, cursor string, limit int) (
	[]switchboardv1.WebhookEndpoint, bool, error) {
	items, err := s.List(ctx, namespace)
	if err != nil {
		return nil, false, err
	}
	if cursor != "" {
		i := slices.IndexFunc(items, func(ep switchboardv1.WebhookEndpoint) bool { return ep.ResolvedID() == cursor })
		if i < 0 {
			return nil, false, ErrUnknownCursor
		}
		items = items[i+1:]
	}
	if len(items) > limit {
		return items[:limit], true, nil
	}
	return items, false, nil
}

// SortOldestFirst orders endpoints oldest first; the id breaks ties, as
// creation times have second precision.
func SortOldestFirst(eps []switchboardv1.WebhookEndpoint) {
	slices.SortFunc(eps, func(a, b switchboardv1.WebhookEndpoint) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time),
			strings.Compare(a.ResolvedID(), b.ResolvedID()))
	})
}

// CheckURL checks a receiver URL against the policy: a *egress.URLError
// says why it is refused.
func (s *Service) CheckURL(ctx context.Context, url string) error {
	err := s.Policy.Check(ctx, url)
	var refused *egress.URLError
	if err != nil && !errors.As(err, &refused) {
		return &Unavailable{What: "The URL could not be checked", Err: err}
	}
	return err
}

// Create creates an endpoint of namespace and its signing Secret, and
// returns both. The URL is checked first, then the organization's limit.
func (s *Service) Create(ctx context.Context, namespace string, c *Change) (*switchboardv1.WebhookEndpoint, string, error) {
	if err := s.CheckURL(ctx, c.URL); err != nil {
		return nil, "", err
	}
	ep := &switchboardv1.WebhookEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, GenerateName: "endpoint-"},
	}
	c.Apply(&ep.Spec)
	ticket, err := s.Quota.AdmitEndpoint(ctx, ep.Namespace)
	var exceeded *quota.Exceeded
	switch {
	case errors.As(err, &exceeded):
		return nil, "", &Refused{Code: exceeded.Code, Message: exceeded.Message}
	case err != nil:
		return nil, "", &Unavailable{What: "The organization's limits could not be checked", Err: err}
	}
	if err := s.Client.Create(ctx, ep); err != nil {
		ticket.Release()
		return nil, "", &Unavailable{What: "The webhook endpoint could not be created", Err: err}
	}
	ticket.Placed(ep.Name)
	s.Directory.EndpointCreated(ep)
	secret, err := s.generateSecret(ctx, ep)
	if err != nil {
		// Without its secret the caller could not verify deliveries: undo,
		// so that a retry does not leave a second endpoint behind.
		if delErr := s.Client.Delete(context.WithoutCancel(ctx), ep); delErr != nil && !apierrors.IsNotFound(delErr) {
			s.Log.Error(delErr, "removing webhook endpoint without a secret", "namespace", ep.Namespace, "name", ep.Name)
		}
		return nil, "", &Unavailable{What: "The webhook endpoint could not be created", Err: err}
	}
	return ep, secret, nil
}

// generateSecret creates ep's signing Secret, owned by ep so that it goes
// with it, and returns the secret. The endpoint reconciler generates the
// same Secret when it finds none; if it came first, its secret is the one.
func (s *Service) generateSecret(ctx context.Context, ep *switchboardv1.WebhookEndpoint) (string, error) {
	secret, value, err := deliveries.NewSecret(ep)
	if err != nil {
		return "", err
	}
	controller := true
	secret.OwnerReferences = []metav1.OwnerReference{{APIVersion: switchboardv1.GroupVersion.String(),
		Kind: "WebhookEndpoint", Name: ep.Name, UID: ep.UID, Controller: &controller}}
	err = s.Client.Create(ctx, secret)
	if !apierrors.IsAlreadyExists(err) {
		return value, err
	}
	var existing corev1.Secret
	if err := s.Live.Get(ctx, client.ObjectKeyFromObject(secret), &existing); err != nil {
		return "", err
	}
	if !metav1.IsControlledBy(&existing, ep) {
		return "", errors.New("Secret " + secret.Name + " exists and does not belong to the endpoint")
	}
	return string(existing.Data[switchboardv1.WebhookSecretKey]), nil
}

// errEndpointGone: the endpoint was deleted (or replaced) meanwhile.
var errEndpointGone = errors.New("webhook endpoint gone")

// Update applies c to ep as the API server holds it now. Re-enabling an
// endpoint also clears why Switchboard disabled it.
func (s *Service) Update(ctx context.Context, ep *switchboardv1.WebhookEndpoint, c *Change) (*switchboardv1.WebhookEndpoint, error) {
	if c.URLSet {
		if err := s.CheckURL(ctx, c.URL); err != nil {
			return nil, err
		}
	}
	var updated *switchboardv1.WebhookEndpoint
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		updated = &switchboardv1.WebhookEndpoint{}
		if err := s.Live.Get(ctx, client.ObjectKeyFromObject(ep), updated); err != nil {
			return err
		}
		if updated.UID != ep.UID || updated.DeletionTimestamp != nil {
			return errEndpointGone
		}
		c.Apply(&updated.Spec)
		if c.DisabledSet && !c.Disabled {
			delete(updated.Annotations, switchboardv1.WebhookDisabledReasonAnnotation)
		}
		return s.Client.Update(ctx, updated)
	})
	switch {
	case apierrors.IsNotFound(err) || errors.Is(err, errEndpointGone):
		return nil, ErrNotFound
	case err != nil:
		return nil, &Unavailable{What: "The webhook endpoint could not be updated", Err: err}
	}
	return updated, nil
}

// Delete deletes ep; its generated signing Secret goes with it.
func (s *Service) Delete(ctx context.Context, ep *switchboardv1.WebhookEndpoint) error {
	// The UID precondition spares an endpoint re-created under the same
	// name (an applied manifest): that one has another id.
	err := s.Client.Delete(ctx, ep, client.Preconditions{UID: &ep.UID})
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return ErrNotFound
	case err != nil:
		return &Unavailable{What: "The webhook endpoint could not be deleted", Err: err}
	}
	return nil
}

// Live re-reads ep from the API server, for actions that must not use a
// cached copy a moment old: a test event right after a change of the URL
// goes to the new URL.
func (s *Service) live(ctx context.Context, cached *switchboardv1.WebhookEndpoint) (*switchboardv1.WebhookEndpoint, error) {
	ep := &switchboardv1.WebhookEndpoint{}
	err := s.Live.Get(ctx, client.ObjectKeyFromObject(cached), ep)
	switch {
	case apierrors.IsNotFound(err) || (err == nil && (ep.UID != cached.UID || ep.DeletionTimestamp != nil)):
		return nil, ErrNotFound
	case err != nil:
		return nil, &Unavailable{What: "The webhook endpoint could not be read", Err: err}
	}
	return ep, nil
}

// Rotated is the result of a rotation.
type Rotated struct {
	Endpoint *switchboardv1.WebhookEndpoint
	// Secret is the new secret, shown this once.
	Secret string
	// PreviousExpiresAt is when the old secret stops signing, if there was
	// one (HasPrevious).
	PreviousExpiresAt time.Time
	HasPrevious       bool
}

// Rotate gives ep a new signing secret; the old one keeps signing for the
// rotation overlap.
func (s *Service) Rotate(ctx context.Context, cached *switchboardv1.WebhookEndpoint) (*Rotated, error) {
	ep, err := s.live(ctx, cached)
	if err != nil {
		return nil, err
	}
	if ep.Spec.SecretRef != nil {
		// The platform team declared this Secret in the cluster (and may
		// manage it with GitOps or an external secret store): an API key
		// must not rewrite it.
		return nil, &Refused{Code: CodeSecretManaged, Message: "The endpoint's signing Secret " + ep.Spec.SecretRef.Name +
			" is declared in the cluster (spec.secretRef); rotate it there, with kubectl or the tool that manages it."}
	}
	now := s.now()
	overlap := cmp.Or(s.RotationOverlap, deliveries.DefaultRotationOverlap)
	var (
		secret *corev1.Secret
		fresh  string
	)
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		secret = &corev1.Secret{}
		key := client.ObjectKey{Namespace: ep.Namespace, Name: ep.SigningSecretName()}
		if err := s.Live.Get(ctx, key, secret); err != nil {
			return err
		}
		var err error
		if fresh, err = deliveries.Rotate(secret, now, overlap); err != nil {
			return err
		}
		return s.Client.Update(ctx, secret)
	})
	switch {
	case apierrors.IsNotFound(err):
		return nil, &Refused{Code: CodeSecretMissing, Message: secretMissing(ep)}
	case err != nil:
		return nil, &Unavailable{What: "The signing secret could not be rotated", Err: err}
	}
	out := &Rotated{Endpoint: ep, Secret: fresh}
	out.PreviousExpiresAt, out.HasPrevious = deliveries.PreviousExpiresAt(secret)
	return out, nil
}

// secretMissing says why an endpoint has no signing Secret.
func secretMissing(ep *switchboardv1.WebhookEndpoint) string {
	if ep.Spec.SecretRef != nil {
		return "The Secret " + ep.Spec.SecretRef.Name + " named in the endpoint's spec.secretRef does not exist; " +
			"create it with the key \"" + switchboardv1.WebhookSecretKey + "\"."
	}
	return "The endpoint's signing Secret " + ep.SigningSecretName() +
		" does not exist yet; Switchboard generates it within moments, so try again shortly."
}
