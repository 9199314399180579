package apikeys

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// Errors of Authenticate. None of them contains the key.
var (
	ErrMissingKey = errors.New("missing API key")
	ErrInvalidKey = errors.New("invalid API key")
	ErrExpiredKey = errors.New("expired API key")
)

// Principal is who a key authenticates: its organization (namespace) and
// the Secret holding it.
type Principal struct {
	Namespace  string
	SecretName string
}

// Index maps key digests to the Secrets holding them. It is safe for
// concurrent use. The zero value is not usable: call NewIndex.
//
// A key held by more than one Secret, in one namespace or several,
// authenticates nobody until only one copy is left: its organization would
// be ambiguous, and deleting one copy would not revoke it. Fail closed.
type Index struct {
	mu      sync.RWMutex
	secrets map[Principal]*entry
	digests map[[32]byte][]*entry // more than one entry: ambiguous key
}

// entry is one API-key Secret as indexed.
type entry struct {
	principal Principal
	digest    [32]byte
	expiresAt time.Time // zero: never expires
	refused   string    // why the key is expired whatever the time, if it is
}

// NewIndex returns an empty Index.
func NewIndex() *Index {
	return &Index{secrets: make(map[Principal]*entry), digests: make(map[[32]byte][]*entry)}
}

// Upsert indexes s, replacing what was indexed under its namespace and
// name, so an updated key stops the old one. A Secret of another type, or
// without a key, only removes what was indexed under its name. s may be
// plaintext or have gone through DigestSecretData.
func (ix *Index) Upsert(s *corev1.Secret) {
	if s == nil {
		return
	}
	e, ok := newEntry(s)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.remove(Principal{Namespace: s.Namespace, SecretName: s.Name})
	if ok {
		ix.secrets[e.principal] = e
		ix.digests[e.digest] = append(ix.digests[e.digest], e)
	}
}

// Delete revokes the key of Secret namespace/name.
func (ix *Index) Delete(namespace, name string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.remove(Principal{Namespace: namespace, SecretName: name})
}

// Authenticate returns the Principal of key at time now. Errors are
// ErrMissingKey, ErrInvalidKey, or ErrExpiredKey, possibly wrapped with the
// reason, e.g. an expires-at annotation that does not parse.
func (ix *Index) Authenticate(key string, now time.Time) (Principal, error) {
	return ix.AuthenticateDigest(Digest([]byte(key)), now)
}

// AuthenticateDigest is Authenticate for the key whose digest is d: the
// dashboard keeps the digest of the key a session was opened with, never
// the key, and checks it again on every request, so that a revoked or
// expired key ends its sessions.
func (ix *Index) AuthenticateDigest(d [32]byte, now time.Time) (Principal, error) {
	if d == emptyDigest {
		return Principal{}, ErrMissingKey
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	holders := ix.digests[d]
	if len(holders) != 1 { // unknown, or ambiguous: see Index
		return Principal{}, ErrInvalidKey
	}
	e := holders[0]
	// The map lookup compares digests in variable time, which is harmless:
	// it can only reveal how a digest of the caller's own guess relates to
	// stored digests, and SHA-256 leaks nothing usable about keys. The
	// decision to accept is still made here in constant time, so it does not
	// rest on how the map compares, should the lookup ever be made inexact.
	if subtle.ConstantTimeCompare(e.digest[:], d[:]) != 1 {
		return Principal{}, ErrInvalidKey
	}
	if err := e.expired(now); err != nil {
		return Principal{}, err
	}
	return e.principal, nil
}

// Organization is the organization of the key whose digest is d, whether
// or not it authenticates now (an expired key); "" for a key nobody holds,
// or more than one Secret holds. A failed authentication with a key it
// names counts against that organization (package authlimit).
func (ix *Index) Organization(d [32]byte) string {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if holders := ix.digests[d]; len(holders) == 1 {
		return holders[0].principal.Namespace
	}
	return ""
}

// newEntry reads an API-key Secret; false if s is not one, has no key or
// one shorter than MinKeyLength.
func newEntry(s *corev1.Secret) (*entry, bool) {
	if s.Type != v1alpha1.APIKeySecretType {
		return nil, false
	}
	d, ok := secretDigest(s)
	if !ok {
		return nil, false
	}
	e := &entry{principal: Principal{Namespace: s.Namespace, SecretName: s.Name}, digest: d}
	if v, has := s.Annotations[v1alpha1.APIKeyExpiresAtAnnotation]; has {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			// Fail closed: a key meant to expire must not live forever.
			e.refused = fmt.Sprintf("annotation %s=%q is not an RFC 3339 time", v1alpha1.APIKeyExpiresAtAnnotation, v)
		}
		e.expiresAt = t
	}
	return e, true
}

func (e *entry) expired(now time.Time) error {
	switch {
	case e.refused != "":
		return fmt.Errorf("%w: %s", ErrExpiredKey, e.refused)
	case !e.expiresAt.IsZero() && !now.Before(e.expiresAt):
		return ErrExpiredKey
	}
	return nil
}

// remove unindexes the Secret p, if indexed. The caller holds ix.mu.
func (ix *Index) remove(p Principal) {
	e := ix.secrets[p]
	if e == nil {
		return
	}
	delete(ix.secrets, p)
	rest := slices.DeleteFunc(ix.digests[e.digest], func(o *entry) bool { return o == e })
	if len(rest) == 0 {
		delete(ix.digests, e.digest)
	} else {
		ix.digests[e.digest] = rest
	}
}

// DeleteNamespace revokes every key of namespace: Switchboard no longer
// watches its Secrets, so it would not see them deleted.
func (ix *Index) DeleteNamespace(namespace string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for p := range ix.secrets {
		if p.Namespace == namespace {
			ix.remove(p)
		}
	}
}
