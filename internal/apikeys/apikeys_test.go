package apikeys

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/switchboard-dev/switchboard/api/v1alpha1"
)

var _ cache.TransformFunc = TransformSecret

const (
	keyA = "sb_live_7f3a9c2e5b1d4f6a8c0e2b4d6f8a1c3e"
	keyB = "sb_live_0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e"
)

var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// apiKey returns an API-key Secret holding key, with optional annotations
// as name/value pairs.
func apiKey(ns, name, key string, annotations ...string) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{}},
		Type:       v1alpha1.APIKeySecretType,
		Data:       map[string][]byte{v1alpha1.APIKeySecretKey: []byte(key)},
	}
	for i := 0; i+1 < len(annotations); i += 2 {
		s.Annotations[annotations[i]] = annotations[i+1]
	}
	return s
}

func expiring(ns, name, key, at string) *corev1.Secret {
	return apiKey(ns, name, key, v1alpha1.APIKeyExpiresAtAnnotation, at)
}

// op is an Upsert of secret, or a Delete of del when secret is nil.
type op struct {
	secret *corev1.Secret
	del    Principal
}

func up(s *corev1.Secret) op        { return op{secret: s} }
func del(ns, name string) op        { return op{del: Principal{ns, name}} }
func who(ns, name string) Principal { return Principal{ns, name} }

type attempt struct {
	key     string
	want    Principal
	wantErr error
	reason  string // in the error message, if set
}

func TestAuthenticate(t *testing.T) {
	future := now.Add(time.Hour).Format(time.RFC3339)
	past := now.Add(-time.Hour).Format(time.RFC3339)
	exactly := now.Format(time.RFC3339Nano)
	noKey := apiKey("acme", "k1", "")
	delete(noKey.Data, v1alpha1.APIKeySecretKey)
	opaque := apiKey("acme", "k1", keyA)
	opaque.Type = corev1.SecretTypeOpaque
	digested := apiKey("acme", "k1", "sha256:"+hex.EncodeToString(sha(keyB)))

	tests := []struct {
		name     string
		ops      []op
		attempts []attempt
	}{
		{
			name:     "valid",
			ops:      []op{up(apiKey("acme", "k1", keyA)), up(apiKey("globex", "k1", keyB))},
			attempts: []attempt{{key: keyA, want: who("acme", "k1")}, {key: keyB, want: who("globex", "k1")}},
		},
		{
			name: "trailing newline",
			ops:  []op{up(apiKey("acme", "k1", keyA+"\n"))},
			attempts: []attempt{
				{key: keyA, want: who("acme", "k1")},
				{key: " " + keyA + "\r\n", want: who("acme", "k1")},
			},
		},
		{
			name: "missing",
			ops:  []op{up(apiKey("acme", "k1", keyA))},
			attempts: []attempt{
				{key: "", wantErr: ErrMissingKey},
				{key: " \n", wantErr: ErrMissingKey},
			},
		},
		{
			name: "unknown",
			ops:  []op{up(apiKey("acme", "k1", keyA))},
			attempts: []attempt{
				{key: keyB, wantErr: ErrInvalidKey},
				{key: keyA[:len(keyA)-1], wantErr: ErrInvalidKey},
			},
		},
		{
			name:     "empty index",
			attempts: []attempt{{key: keyA, wantErr: ErrInvalidKey}},
		},
		{
			name: "expired",
			ops:  []op{up(expiring("acme", "k1", keyA, past)), up(expiring("acme", "k2", keyB, exactly))},
			attempts: []attempt{
				{key: keyA, wantErr: ErrExpiredKey},
				{key: keyB, wantErr: ErrExpiredKey},
			},
		},
		{
			name:     "future expiry",
			ops:      []op{up(expiring("acme", "k1", keyA, future))},
			attempts: []attempt{{key: keyA, want: who("acme", "k1")}},
		},
		{
			name: "bad expiry fails closed",
			ops:  []op{up(expiring("acme", "k1", keyA, "tomorrow")), up(expiring("acme", "k2", keyB, ""))},
			attempts: []attempt{
				{key: keyA, wantErr: ErrExpiredKey, reason: `"tomorrow" is not an RFC 3339 time`},
				{key: keyB, wantErr: ErrExpiredKey, reason: "not an RFC 3339 time"},
			},
		},
		{
			name:     "revoked via Delete",
			ops:      []op{up(apiKey("acme", "k1", keyA)), del("acme", "k1"), del("acme", "never-existed")},
			attempts: []attempt{{key: keyA, wantErr: ErrInvalidKey}},
		},
		{
			name: "updated key replaces the old one",
			ops:  []op{up(apiKey("acme", "k1", keyA)), up(apiKey("acme", "k1", keyB))},
			attempts: []attempt{
				{key: keyA, wantErr: ErrInvalidKey},
				{key: keyB, want: who("acme", "k1")},
			},
		},
		{
			name:     "updated expiry replaces the old one",
			ops:      []op{up(expiring("acme", "k1", keyA, past)), up(apiKey("acme", "k1", keyA))},
			attempts: []attempt{{key: keyA, want: who("acme", "k1")}},
		},
		{
			name: "update without a key revokes",
			ops:  []op{up(apiKey("acme", "k1", keyA)), up(noKey), up(apiKey("acme", "k2", keyB)), up(apiKey("acme", "k2", " \n"))},
			attempts: []attempt{
				{key: keyA, wantErr: ErrInvalidKey},
				{key: keyB, wantErr: ErrInvalidKey},
			},
		},
		{
			name: "a key shorter than 32 characters authenticates nobody",
			ops:  []op{up(apiKey("acme", "k1", keyA[:31])), up(apiKey("acme", "k2", " "+keyB[:31]+"\n"))},
			attempts: []attempt{
				{key: keyA[:31], wantErr: ErrInvalidKey},
				{key: keyB[:31], wantErr: ErrInvalidKey},
			},
		},
		{
			name:     "a key of 32 characters is long enough",
			ops:      []op{up(apiKey("acme", "k1", keyA[:32]))},
			attempts: []attempt{{key: keyA[:32], want: who("acme", "k1")}},
		},
		{
			name:     "other Secret types are ignored",
			ops:      []op{up(opaque)},
			attempts: []attempt{{key: keyA, wantErr: ErrInvalidKey}},
		},
		{
			name: "same key in two namespaces fails closed",
			ops:  []op{up(apiKey("acme", "k1", keyA)), up(apiKey("globex", "k1", keyA+"\n"))},
			attempts: []attempt{
				{key: keyA, wantErr: ErrInvalidKey},
			},
		},
		{
			name:     "same key works again once one copy is deleted",
			ops:      []op{up(apiKey("acme", "k1", keyA)), up(apiKey("globex", "k9", keyA)), del("acme", "k1")},
			attempts: []attempt{{key: keyA, want: who("globex", "k9")}},
		},
		{
			name:     "a Secret may hold a digest instead of a key",
			ops:      []op{up(digested)},
			attempts: []attempt{{key: keyB, want: who("acme", "k1")}},
		},
	}
	for _, tt := range tests {
		for _, transformed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/transformed=%v", tt.name, transformed), func(t *testing.T) {
				ix := NewIndex()
				for _, o := range tt.ops {
					if o.secret == nil {
						ix.Delete(o.del.Namespace, o.del.SecretName)
						continue
					}
					s := o.secret.DeepCopy()
					if transformed {
						DigestSecretData(s)
					}
					ix.Upsert(s)
				}
				for _, a := range tt.attempts {
					checkAttempt(t, ix, a)
				}
			})
		}
	}
}

func checkAttempt(t *testing.T, ix *Index, a attempt) {
	t.Helper()
	got, err := ix.Authenticate(a.key, now)
	if got != a.want || !errors.Is(err, a.wantErr) || (a.wantErr == nil) != (err == nil) {
		t.Errorf("Authenticate(…) = %+v, %v; want %+v, %v", got, err, a.want, a.wantErr)
	}
	if err == nil {
		return
	}
	if !strings.Contains(err.Error(), a.reason) {
		t.Errorf("error %q lacks reason %q", err, a.reason)
	}
	if k := strings.TrimSpace(a.key); k != "" && strings.Contains(err.Error(), k) {
		t.Errorf("error %q echoes the key", err)
	}
}

func sha(key string) []byte {
	d := Digest([]byte(key))
	return d[:]
}

// withEverything returns an API-key Secret with its key in every place a
// client can put it.
func withEverything(key string) *corev1.Secret {
	s := apiKey("acme", "k1", key+"\n", "team", "billing")
	s.StringData = map[string]string{v1alpha1.APIKeySecretKey: key}
	applied, _ := json.Marshal(apiKey("acme", "k1", key))
	s.Annotations[corev1.LastAppliedConfigAnnotation] = string(applied)
	return s
}

func TestDigestSecretData(t *testing.T) {
	s := withEverything(keyA)
	DigestSecretData(s)
	want := "sha256:" + hex.EncodeToString(sha(keyA))
	if got := string(s.Data[v1alpha1.APIKeySecretKey]); got != want {
		t.Fatalf("data[key] = %q, want %q", got, want)
	}
	if s.Annotations["team"] != "billing" {
		t.Error("unrelated annotation dropped")
	}
	dump, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{keyA, base64.StdEncoding.EncodeToString([]byte(keyA)), base64.StdEncoding.EncodeToString([]byte(keyA + "\n"))} {
		if strings.Contains(string(dump), leak) {
			t.Errorf("transformed Secret still holds %q: %s", leak, dump)
		}
	}
	once := s.DeepCopy()
	DigestSecretData(s)
	if !reflect.DeepEqual(s, once) {
		t.Errorf("second call changed the Secret:\n%+v\n%+v", once, s)
	}
	DigestSecretData(nil) // must not panic
}

func TestTransformSecret(t *testing.T) {
	opaque := withEverything(keyA)
	opaque.Type = corev1.SecretTypeOpaque
	tls := withEverything(keyA)
	tls.Type = corev1.SecretTypeTLS
	tests := []struct {
		name string
		obj  any
	}{
		{"opaque Secret", opaque},
		{"TLS Secret", tls},
		{"ConfigMap", &corev1.ConfigMap{Data: map[string]string{"key": keyA}}},
		{"tombstone", cache.DeletedFinalStateUnknown{Key: "acme/k1", Obj: withEverything(keyA)}},
		{"nil", nil},
		{"Secret value, not pointer", *withEverything(keyA)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := deepCopy(tt.obj)
			got, err := TransformSecret(tt.obj)
			if err != nil || !reflect.DeepEqual(got, before) {
				t.Errorf("TransformSecret changed %T: got %+v, %v", tt.obj, got, err)
			}
		})
	}
	t.Run("API-key Secret", func(t *testing.T) {
		s := withEverything(keyA)
		got, err := TransformSecret(s)
		if err != nil || got != any(s) || s.Data[v1alpha1.APIKeySecretKey][0] != 's' {
			t.Errorf("TransformSecret = %v, %v; want the same Secret, digested", got, err)
		}
	})
}

// deepCopy copies the test objects of TestTransformSecret.
func deepCopy(obj any) any {
	switch o := obj.(type) {
	case *corev1.Secret:
		return o.DeepCopy()
	case corev1.Secret:
		return *o.DeepCopy()
	case *corev1.ConfigMap:
		return o.DeepCopy()
	case cache.DeletedFinalStateUnknown:
		return cache.DeletedFinalStateUnknown{Key: o.Key, Obj: deepCopy(o.Obj)}
	}
	return obj
}

// Keys changing in one organization never disturb a key nobody touches,
// and the index ends as its last change left it (run with -race: make
// test does).
func TestConcurrentUse(t *testing.T) {
	ix := NewIndex()
	ix.Upsert(apiKey("globex", "stable", keyB))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 500 {
			ix.Upsert(apiKey("acme", fmt.Sprint("k", i%3), keyA))
			ix.Delete("acme", fmt.Sprint("k", (i+1)%3))
		}
	}()
	for range 2000 {
		_, _ = ix.Authenticate(keyA, now)
		if p, err := ix.Authenticate(keyB, now); err != nil || p.Namespace != "globex" {
			t.Fatalf("untouched key during changes: %+v %v, want globex", p, err)
		}
	}
	<-done
	// The last two changes left k0 and k1 holding the key (498 and 499 %
	// 3), k2 deleted: ambiguous, so refused, until one of them goes.
	if _, err := ix.Authenticate(keyA, now); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("after the changes (k0 and k1 hold the key): %v, want ErrInvalidKey", err)
	}
	ix.Delete("acme", "k0")
	if p, err := ix.Authenticate(keyA, now); err != nil || p.SecretName != "k1" {
		t.Fatalf("k0 deleted: %+v %v, want k1", p, err)
	}
	ix.Delete("acme", "k1")
	if _, err := ix.Authenticate(keyA, now); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("every Secret of the key deleted: %v, want ErrInvalidKey", err)
	}
}

// A namespace that stops being watched loses its keys, and only its own; a
// key held by it and another namespace (ambiguous until then) becomes the
// other's.
func TestDeleteNamespace(t *testing.T) {
	ix := NewIndex()
	ix.Upsert(apiKey("acme", "k1", keyA))
	ix.Upsert(apiKey("acme", "k2", keyB))
	ix.Upsert(apiKey("globex", "copy", keyB))
	ix.DeleteNamespace("acme")
	if _, err := ix.Authenticate(keyA, now); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("key of the forgotten namespace: %v, want ErrInvalidKey", err)
	}
	if p, err := ix.Authenticate(keyB, now); err != nil || p.Namespace != "globex" {
		t.Errorf("key of the other namespace: %+v %v, want globex", p, err)
	}
}

// A Secret whose key is refused for its length says why, plaintext or as
// the cache holds it; others say nothing.
func TestRefusal(t *testing.T) {
	for _, tc := range []struct {
		name    string
		secret  *corev1.Secret
		refused bool
	}{
		{"short key", apiKey("acme", "k1", "sk_live_short"), true},
		{"long key", apiKey("acme", "k1", keyA), false},
		{"no key", apiKey("acme", "k1", " "), false},
		{"a digest", apiKey("acme", "k1", "sha256:"+hex.EncodeToString(sha(keyB))), false},
	} {
		for _, transformed := range []bool{false, true} {
			s := tc.secret.DeepCopy()
			if transformed {
				DigestSecretData(s)
			}
			why := Refusal(s)
			if (why != "") != tc.refused || tc.refused && !strings.Contains(why, "shorter than 32 characters") {
				t.Errorf("%s (transformed %v): Refusal = %q", tc.name, transformed, why)
			}
			if transformed && strings.Contains(string(s.Data[v1alpha1.APIKeySecretKey]), "sk_live_short") {
				t.Errorf("%s: the cache keeps the short key", tc.name)
			}
		}
	}
}
