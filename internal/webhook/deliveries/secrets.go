package deliveries

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/signing"
)

// ErrNoSecret: the endpoint's Secret has no usable signing secret.
var ErrNoSecret = errors.New("no signing secret")

// DefaultRotationOverlap is how long a rotated-out secret keeps signing.
const DefaultRotationOverlap = 24 * time.Hour

// SigningSecrets are the secrets that sign a delivery now: the current one,
// and the previous one while a rotation's overlap lasts.
func SigningSecrets(s *corev1.Secret, now time.Time) ([]string, error) {
	current := string(s.Data[switchboardv1.WebhookSecretKey])
	if current == "" {
		return nil, fmt.Errorf("%w: Secret %s has no key %q", ErrNoSecret, s.Name, switchboardv1.WebhookSecretKey)
	}
	if _, err := signing.ParseSecret(current); err != nil {
		return nil, fmt.Errorf("%w: Secret %s: %w", ErrNoSecret, s.Name, err)
	}
	secrets := []string{current}
	if previous := string(s.Data[switchboardv1.WebhookPreviousSecretKey]); previous != "" && inOverlap(s, now) {
		secrets = append(secrets, previous)
	}
	return secrets, nil
}

// PreviousExpiresAt is the end of the rotation overlap, if one is running.
func PreviousExpiresAt(s *corev1.Secret) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339, s.Annotations[switchboardv1.WebhookPreviousExpiresAnnotation])
	return t, err == nil && len(s.Data[switchboardv1.WebhookPreviousSecretKey]) > 0
}

func inOverlap(s *corev1.Secret, now time.Time) bool {
	until, ok := PreviousExpiresAt(s)
	return ok && now.Before(until)
}

// Rotate puts a new secret in s; the current one becomes the previous one
// and keeps signing for overlap.
func Rotate(s *corev1.Secret, now time.Time, overlap time.Duration) (string, error) {
	fresh, err := signing.NewSecret()
	if err != nil {
		return "", err
	}
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	if current := s.Data[switchboardv1.WebhookSecretKey]; len(current) > 0 {
		s.Data[switchboardv1.WebhookPreviousSecretKey] = current
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[switchboardv1.WebhookPreviousExpiresAnnotation] = now.Add(overlap).UTC().Format(time.RFC3339)
	}
	s.Data[switchboardv1.WebhookSecretKey] = []byte(fresh)
	return fresh, nil
}

// NewSecret is a generated signing Secret for ep.
func NewSecret(ep *switchboardv1.WebhookEndpoint) (*corev1.Secret, string, error) {
	value, err := signing.NewSecret()
	if err != nil {
		return nil, "", err
	}
	s := &corev1.Secret{Type: switchboardv1.WebhookSecretType,
		Data: map[string][]byte{switchboardv1.WebhookSecretKey: []byte(value)}}
	s.Namespace, s.Name = ep.Namespace, switchboardv1.GeneratedSecretName(ep.Name)
	return s, value, nil
}

// SecretReader reads signing Secrets from a cache of the Secrets Switchboard
// generates (kept current by a watch, so a rotation is seen at once), and
// from the API server for a Secret the cache does not hold (one a
// platform team named in secretRef, of another type, or one of a namespace
// that is not watched).
type SecretReader struct {
	Cache SecretGetter
	Live  client.Reader
}

// SecretGetter reads one Secret.
type SecretGetter interface {
	Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error
}

// Get reads the Secret key. Any cache failure (not found, not started
// yet) falls back to a live read.
func (r SecretReader) Get(ctx context.Context, key client.ObjectKey, s *corev1.Secret) error {
	if r.Cache != nil {
		if err := r.Cache.Get(ctx, key, s); err == nil && s.Type == switchboardv1.WebhookSecretType {
			return nil
		}
	}
	return r.Live.Get(ctx, key, s)
}
