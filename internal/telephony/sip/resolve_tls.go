package sip

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/engine"
)

// resolveSecurity fills out's TLS settings (CA bundle, client certificate,
// server name) from spec.tls and its Secrets, and its media mode. A tls
// trunk without spec.tls verifies against the system's roots.
func resolveSecurity(ctx context.Context, secrets client.Reader, t *switchboardv1.SIPTrunk, out *engine.Trunk) error {
	out.Media = string(t.Spec.Media)
	spec := t.Spec.TLS
	if spec == nil {
		return nil
	}
	settings := &engine.TrunkTLS{ServerName: spec.ServerName}
	if spec.CASecretRef != nil {
		s, err := readSecret(ctx, secrets, t.Namespace, spec.CASecretRef.Name, "CA", switchboardv1.SIPCAKey)
		if err != nil {
			return err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(s.Data[switchboardv1.SIPCAKey]) {
			return &ConfigError{Reason: switchboardv1.ReasonTLSSecretMissing,
				Message: fmt.Sprintf("the CA Secret %s/%s: %s holds no PEM certificate", t.Namespace, s.Name, switchboardv1.SIPCAKey)}
		}
		settings.Roots = pool
	}
	if spec.ClientCertSecretRef != nil {
		s, err := readSecret(ctx, secrets, t.Namespace, spec.ClientCertSecretRef.Name, "client certificate",
			corev1.TLSCertKey, corev1.TLSPrivateKeyKey)
		if err != nil {
			return err
		}
		cert, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
		if err != nil {
			// The parser's words name no key material.
			return &ConfigError{Reason: switchboardv1.ReasonTLSSecretMissing,
				Message: fmt.Sprintf("the client certificate Secret %s/%s: %v", t.Namespace, s.Name, err)}
		}
		settings.ClientCert = &cert
	}
	out.TLS = settings
	return nil
}

// readSecret reads a Secret of spec.tls that must hold keys.
func readSecret(ctx context.Context, secrets client.Reader, ns, name, what string, keys ...string) (*corev1.Secret, error) {
	var s corev1.Secret
	err := secrets.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &s)
	switch {
	case apierrors.IsNotFound(err):
		return nil, &ConfigError{Reason: switchboardv1.ReasonTLSSecretMissing,
			Message: fmt.Sprintf("the %s Secret %s/%s does not exist", what, ns, name)}
	case apierrors.IsForbidden(err):
		return nil, &ConfigError{Reason: switchboardv1.ReasonSecretAccessDenied,
			Message: switchboardv1.SecretAccessDeniedMessage(ns, name)}
	case err != nil:
		return nil, fmt.Errorf("reading %s Secret %s/%s: %w", what, ns, name, err)
	}
	for _, k := range keys {
		if len(s.Data[k]) == 0 {
			return nil, &ConfigError{Reason: switchboardv1.ReasonTLSSecretMissing,
				Message: fmt.Sprintf("the %s Secret %s/%s has no %s", what, ns, name, k)}
		}
	}
	return &s, nil
}
