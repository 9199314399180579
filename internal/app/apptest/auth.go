package apptest

// Authentication and organization scoping (bearer API keys, one organization each): what a caller
// with a missing, wrong, expired, revoked or foreign key gets.

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// KeySecret returns the API-key Secret of ns that holds key.
func KeySecret(t *testing.T, ns, key string) *corev1.Secret {
	t.Helper()
	var secrets corev1.SecretList
	NewWithT(t).Expect(K8s.List(context.Background(), &secrets, client.InNamespace(ns))).To(Succeed())
	for i := range secrets.Items {
		s := &secrets.Items[i]
		if s.Type == switchboardv1.APIKeySecretType && string(s.Data[switchboardv1.APIKeySecretKey]) == key {
			return s
		}
	}
	t.Fatalf("no API-key Secret in %s holds the key", ns)
	return nil
}

// KeyStatus is the status GET /v1/calls/call_0 gives key: 404 for a key
// that works (the call does not exist), 401 for one that does not.
func KeyStatus(t *testing.T, key string) int {
	t.Helper()
	return Do(t, "GET", "/v1/calls/call_0", key, nil).Status
}
