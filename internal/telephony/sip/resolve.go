package sip

import (
	"context"
	"fmt"
	"strings"
	"time"

	sipmsg "github.com/emiago/sipgo/sip"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/engine"
)

// DefaultRingTimeout applies when spec.ringTimeoutSeconds is unset (the API
// server defaults it, but objects may predate the default).
const DefaultRingTimeout = 60 * time.Second

// ConfigError is a SIPTrunk whose spec or credentials cannot work as they
// are: it will not fix itself until someone edits the trunk or its Secret.
type ConfigError struct {
	// Reason is ReasonCredentialsMissing, ReasonInvalidAddress,
	// ReasonTLSSecretMissing or ReasonSecretAccessDenied.
	Reason string
	// Message says what to fix, for the Ready condition.
	Message string
}

func (e *ConfigError) Error() string { return e.Message }

// Resolve reads the trunk's credentials Secret from secrets and returns the
// engine's Trunk. A problem in the configuration is a *ConfigError; any
// other error (the API server failing) is worth a retry.
func Resolve(ctx context.Context, secrets client.Reader, t *switchboardv1.SIPTrunk) (engine.Trunk, error) {
	out := engine.Trunk{
		Address:     t.Spec.Address,
		Transport:   string(t.Spec.Transport),
		RingTimeout: DefaultRingTimeout,
		DTMF:        t.Spec.DTMF,
	}
	if out.Transport == "" && strings.HasPrefix(t.Spec.Address, "sips:") {
		out.Transport = string(switchboardv1.SIPTransportTLS)
	}
	if t.Spec.RingTimeoutSeconds > 0 {
		out.RingTimeout = time.Duration(t.Spec.RingTimeoutSeconds) * time.Second
	}
	if err := checkAddress(t.Spec.Address, out.Transport); err != nil {
		return engine.Trunk{}, err
	}
	if err := resolveSecurity(ctx, secrets, t, &out); err != nil {
		return engine.Trunk{}, err
	}
	if t.Spec.CredentialsSecretRef == nil {
		return out, nil
	}
	user, pass, err := credentials(ctx, secrets, t.Namespace, t.Spec.CredentialsSecretRef.Name)
	if err != nil {
		return engine.Trunk{}, err
	}
	out.Username, out.Password = user, pass
	return out, nil
}

// EffectiveTransport is the transport t's calls use: spec.transport, else
// tls for a sips: address, else the address's transport parameter, else
// udp. It is the trunk's status.transport, which kubectl get shows.
func EffectiveTransport(t *switchboardv1.SIPTrunk) switchboardv1.SIPTransport {
	switch {
	case t.Spec.Transport != "":
		return t.Spec.Transport
	case strings.HasPrefix(t.Spec.Address, "sips:"):
		return switchboardv1.SIPTransportTLS
	}
	var u sipmsg.Uri
	if err := sipmsg.ParseUri(t.Spec.Address, &u); err == nil && u.UriParams != nil {
		if p, ok := u.UriParams.Get("transport"); ok && p != "" {
			return switchboardv1.SIPTransport(strings.ToLower(p))
		}
	}
	return switchboardv1.SIPTransportUDP
}

// checkAddress rejects what the engine cannot dial, with the engine's own
// parser. The CRD's pattern lets anything without spaces or @ after the
// scheme through.
func checkAddress(addr, transport string) error {
	sips := strings.HasPrefix(addr, "sips:")
	if !strings.HasPrefix(addr, "sip:") && !sips {
		return &ConfigError{Reason: switchboardv1.ReasonInvalidAddress,
			Message: fmt.Sprintf("spec.address %q must start with sip: or sips:", addr)}
	}
	if sips && transport != "" && transport != string(switchboardv1.SIPTransportTLS) {
		return &ConfigError{Reason: switchboardv1.ReasonInvalidAddress,
			Message: fmt.Sprintf("spec.address %q is sips: but spec.transport is %s: set it to tls", addr, transport)}
	}
	var u sipmsg.Uri
	if err := sipmsg.ParseUri(addr, &u); err != nil || u.Host == "" || u.Port < 0 || u.Port > 65535 {
		return &ConfigError{Reason: switchboardv1.ReasonInvalidAddress,
			Message: fmt.Sprintf("spec.address %q is not a sip:host[:port] URI", addr)}
	}
	// spec.transport wins over the address's transport parameter; since it
	// defaults to udp, a disagreement is a trunk that would silently use
	// another transport than its address says.
	if param, ok := u.UriParams.Get("transport"); ok && transport != "" && !strings.EqualFold(param, transport) {
		return &ConfigError{Reason: switchboardv1.ReasonInvalidAddress,
			Message: fmt.Sprintf("spec.address %q says transport=%s but spec.transport is %s: set spec.transport to %s",
				addr, param, transport, strings.ToLower(param))}
	}
	return nil
}

// credentials reads the username and password keys of the Secret.
func credentials(ctx context.Context, secrets client.Reader, ns, name string) (string, string, error) {
	var s corev1.Secret
	err := secrets.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &s)
	if apierrors.IsNotFound(err) {
		return "", "", &ConfigError{Reason: switchboardv1.ReasonCredentialsMissing,
			Message: fmt.Sprintf("the credentials Secret %s/%s does not exist", ns, name)}
	}
	if apierrors.IsForbidden(err) {
		return "", "", &ConfigError{Reason: switchboardv1.ReasonSecretAccessDenied,
			Message: switchboardv1.SecretAccessDeniedMessage(ns, name)}
	}
	if err != nil {
		return "", "", fmt.Errorf("reading credentials Secret %s/%s: %w", ns, name, err)
	}
	var missing []string
	for _, key := range []string{switchboardv1.SIPUsernameKey, switchboardv1.SIPPasswordKey} {
		if len(s.Data[key]) == 0 {
			missing = append(missing, key)
		}
	}
	if len(missing) > 0 {
		return "", "", &ConfigError{Reason: switchboardv1.ReasonCredentialsMissing,
			Message: fmt.Sprintf("the credentials Secret %s/%s has no %s", ns, name, strings.Join(missing, " and no "))}
	}
	return string(s.Data[switchboardv1.SIPUsernameKey]), string(s.Data[switchboardv1.SIPPasswordKey]), nil
}
