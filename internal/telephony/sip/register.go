package sip

import (
	"errors"
	"time"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/engine"
)

// DefaultRegistrationExpires applies when spec.registration.expiresSeconds
// is unset (the API server defaults it, but objects may predate it).
const DefaultRegistrationExpires = time.Hour

// ResolveRegistration returns the binding a trunk with spec.registration
// keeps, given the trunk Resolve returned: the registrar defaults to the
// trunk's address, the user to its credentials' username. A registrar
// the engine cannot dial is a *ConfigError (ReasonInvalidAddress).
func ResolveRegistration(t *switchboardv1.SIPTrunk, resolved engine.Trunk) (engine.Registration, error) {
	spec := t.Spec.Registration
	reg := engine.Registration{Registrar: spec.Registrar, User: spec.User, Expires: DefaultRegistrationExpires}
	if reg.Registrar == "" {
		reg.Registrar = resolved.Address
	} else if err := checkAddress(reg.Registrar, resolved.Transport); err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) {
			return engine.Registration{}, &ConfigError{Reason: ce.Reason, Message: "spec.registration.registrar: " + ce.Message}
		}
		return engine.Registration{}, err
	}
	if reg.User == "" {
		reg.User = resolved.Username
	}
	if reg.User == "" {
		// The API server refuses this; an object from before the rule
		// might not.
		return engine.Registration{}, &ConfigError{Reason: switchboardv1.ReasonCredentialsMissing,
			Message: "spec.registration needs a user: set spec.credentialsSecretRef or spec.registration.user"}
	}
	if spec.ExpiresSeconds > 0 {
		reg.Expires = time.Duration(spec.ExpiresSeconds) * time.Second
	}
	return reg, nil
}
