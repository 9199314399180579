// Package apikeys authenticates API keys. A key is a Secret of type
// switchboard.dev/api-key in an organization's namespace; deleting the Secret
// revokes the key.
//
// Only SHA-256 digests of keys are kept in memory: TransformSecret replaces
// the plaintext before a Secret reaches the informer cache, and Index holds
// digests only. Keys are never logged, and errors never contain them.
package apikeys

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"

	"github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// digestPrefix marks a Secret's key that was replaced by its digest, as
// "sha256:" and 64 hex digits.
const digestPrefix = "sha256:"

// emptyDigest is the digest of an empty or blank key, which is no key.
var emptyDigest = Digest(nil)

// Digest returns the SHA-256 of key without surrounding whitespace, since
// `kubectl create secret --from-file` keeps the file's trailing newline.
func Digest(key []byte) [32]byte {
	return sha256.Sum256(bytes.TrimSpace(key))
}

// DigestSecretData replaces the key of an API-key Secret by its digest, in
// place, so that the plaintext never sits in the informer cache. It also
// drops the other places a key can hide: stringData and the
// last-applied-configuration annotation of `kubectl apply`, which holds the
// whole manifest. Calling it again is a no-op. Other Secrets are untouched.
//
// A key that itself reads "sha256:" and 64 hex digits is taken as a digest:
// such a Secret accepts the digest's preimage. This also lets a Secret be
// provisioned with a digest rather than a key.
func DigestSecretData(s *corev1.Secret) {
	if s == nil || s.Type != v1alpha1.APIKeySecretType {
		return
	}
	delete(s.Annotations, corev1.LastAppliedConfigAnnotation)
	s.StringData = nil
	raw, ok := s.Data[v1alpha1.APIKeySecretKey]
	if !ok {
		return
	}
	if _, done := parseDigest(raw); done {
		return
	}
	if tooShortKey(raw) {
		// The length would be lost with the key: what remains says why
		// the Secret authenticates nobody.
		s.Data[v1alpha1.APIKeySecretKey] = []byte(tooShort)
		return
	}
	d := Digest(raw)
	s.Data[v1alpha1.APIKeySecretKey] = []byte(digestPrefix + hex.EncodeToString(d[:]))
}

// MinKeyLength is the fewest characters (surrounding whitespace aside) an
// API key may have: a Secret with a shorter key authenticates nobody, as
// a short key could be guessed.
const MinKeyLength = 32

// tooShort replaces, in the cache, a key shorter than MinKeyLength.
const tooShort = "refused:shorter-than-minimum"

// tooShortKey: key is not blank (no key at all) but shorter than
// MinKeyLength, or already marked so.
func tooShortKey(key []byte) bool {
	k := bytes.TrimSpace(key)
	return string(k) == tooShort || len(k) > 0 && utf8.RuneCount(k) < MinKeyLength
}

// Refusal says why the API-key Secret s authenticates nobody although it
// holds a key: "" unless its key, plaintext or as DigestSecretData left
// it, is shorter than MinKeyLength. A digest stands for a key of unknown
// length (a Secret provisioned with one) and is accepted.
func Refusal(s *corev1.Secret) string {
	if s.Type != v1alpha1.APIKeySecretType || !tooShortKey(s.Data[v1alpha1.APIKeySecretKey]) {
		return ""
	}
	return fmt.Sprintf("The API key in %s is shorter than %d characters, so Switchboard ignores it: "+
		"store a longer random key (for example the output of `openssl rand -hex 32`)",
		v1alpha1.APIKeySecretKey, MinKeyLength)
}

// TransformSecret is a cache.TransformFunc applying DigestSecretData to
// API-key Secrets. Anything else, tombstones included, passes unchanged.
func TransformSecret(obj any) (any, error) {
	if s, ok := obj.(*corev1.Secret); ok {
		DigestSecretData(s)
	}
	return obj, nil
}

// secretDigest returns the digest of s's key, whether s went through
// DigestSecretData or still holds the plaintext; false if s has no key.
func secretDigest(s *corev1.Secret) ([32]byte, bool) {
	raw, ok := s.Data[v1alpha1.APIKeySecretKey]
	if !ok {
		return [32]byte{}, false
	}
	d, digested := parseDigest(raw)
	if !digested {
		if tooShortKey(raw) {
			return [32]byte{}, false // see MinKeyLength
		}
		d = Digest(raw)
	}
	return d, d != emptyDigest
}

// parseDigest decodes a value written by DigestSecretData.
func parseDigest(v []byte) ([32]byte, bool) {
	var d [32]byte
	h, ok := bytes.CutPrefix(v, []byte(digestPrefix))
	if !ok || len(h) != hex.EncodedLen(len(d)) {
		return d, false
	}
	_, err := hex.Decode(d[:], h)
	return d, err == nil
}
