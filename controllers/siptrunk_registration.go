package controllers

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/engine"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/registration"
)

// TrunkRegistrations keeps trunks registered with their registrars;
// *registration.Manager is one. Its loops run on the leader only, as this
// reconciler does.
type TrunkRegistrations interface {
	Ensure(types.NamespacedName, registration.Config)
	Stop(types.NamespacedName)
	State(types.NamespacedName) (registration.State, bool)
}

// reconcileRegistration starts, changes or stops the trunk's registration
// loop and copies what it last learned into the Registered condition.
// Calls never wait for it: Ready stays about whether the trunk answers.
func (r *SIPTrunkReconciler) reconcileRegistration(ctx context.Context, trunk *switchboardv1.SIPTrunk) error {
	if r.Registrations == nil {
		return nil
	}
	key := types.NamespacedName{Namespace: trunk.Namespace, Name: trunk.Name}
	if trunk.Spec.Registration == nil {
		r.Registrations.Stop(key)
		apimeta.RemoveStatusCondition(&trunk.Status.Conditions, switchboardv1.RegisteredCondition)
		trunk.Status.LastRegisteredAt, trunk.Status.RegisteredUntil = nil, nil
		return nil
	}
	cfg, err := resolveRegistration(ctx, r, trunk)
	var cerr *sip.ConfigError
	if errors.As(err, &cerr) {
		r.Registrations.Stop(key)
		trunk.Status.RegisteredUntil = nil
		setRegistered(trunk, metav1.ConditionFalse, cerr.Reason, cerr.Message)
		return nil
	}
	if err != nil {
		return err
	}
	r.Registrations.Ensure(key, cfg)
	state, _ := r.Registrations.State(key)
	status, reason, msg := registeredCondition(state)
	setRegistered(trunk, status, reason, msg)
	if !state.LastRegisteredAt.IsZero() {
		trunk.Status.LastRegisteredAt = &metav1.Time{Time: state.LastRegisteredAt}
	}
	trunk.Status.RegisteredUntil = nil
	if state.Registered() {
		trunk.Status.RegisteredUntil = &metav1.Time{Time: state.Until}
	}
	return nil
}

// resolveRegistration reads the trunk's credentials (live: they may have
// changed since the probe) and returns what its loop registers.
func resolveRegistration(ctx context.Context, r *SIPTrunkReconciler, trunk *switchboardv1.SIPTrunk) (registration.Config, error) {
	resolved, err := sip.Resolve(ctx, r.Secrets, trunk)
	if err != nil {
		return registration.Config{}, err
	}
	reg, err := sip.ResolveRegistration(trunk, resolved)
	if err != nil {
		return registration.Config{}, err
	}
	return registration.Config{Trunk: resolved, Registration: reg}, nil
}

// registeredCondition words a loop's state as the Registered condition.
func registeredCondition(s registration.State) (metav1.ConditionStatus, string, string) {
	res := s.Last
	switch {
	case !s.Answered:
		return metav1.ConditionUnknown, switchboardv1.ReasonRegistering, "The first REGISTER has not been answered yet."
	case s.Registered():
		return metav1.ConditionTrue, switchboardv1.ReasonRegistered,
			fmt.Sprintf("The registrar answered REGISTER with %d %s and holds the binding for %s.",
				res.StatusCode, res.Reason, res.Granted)
	case res.Refused:
		var refused *engine.AddressError
		if errors.As(res.Err, &refused) {
			return metav1.ConditionFalse, switchboardv1.ReasonAddressRefused, sip.TrunkAddressRefused(refused)
		}
		return metav1.ConditionFalse, switchboardv1.ReasonAddressRefused, res.Err.Error()
	case res.TLS != nil && res.TLS.Kind == engine.TLSCertificateInvalid:
		return metav1.ConditionFalse, switchboardv1.ReasonCertificateInvalid, res.Err.Error()
	case res.TLS != nil:
		return metav1.ConditionFalse, switchboardv1.ReasonTLSHandshakeFailed, res.Err.Error()
	case !res.Reachable:
		return metav1.ConditionFalse, switchboardv1.ReasonUnreachable, res.Err.Error()
	case res.AuthFailed:
		return metav1.ConditionFalse, switchboardv1.ReasonAuthenticationFailed, res.Err.Error()
	default:
		return metav1.ConditionFalse, switchboardv1.ReasonRegistrarError, res.Err.Error()
	}
}

func setRegistered(trunk *switchboardv1.SIPTrunk, status metav1.ConditionStatus, reason, msg string) {
	apimeta.SetStatusCondition(&trunk.Status.Conditions, metav1.Condition{Type: switchboardv1.RegisteredCondition,
		Status: status, Reason: reason, Message: msg, ObservedGeneration: trunk.Generation})
}

// announceRegistered emits an Event when Registered changed status or
// reason, as announce does for Ready.
func (r *SIPTrunkReconciler) announceRegistered(trunk *switchboardv1.SIPTrunk, before *switchboardv1.SIPTrunkStatus) {
	now := apimeta.FindStatusCondition(trunk.Status.Conditions, switchboardv1.RegisteredCondition)
	was := apimeta.FindStatusCondition(before.Conditions, switchboardv1.RegisteredCondition)
	if r.Events == nil || now == nil || now.Status == metav1.ConditionUnknown ||
		(was != nil && was.Status == now.Status && was.Reason == now.Reason) {
		return
	}
	eventType := corev1.EventTypeNormal
	if now.Status != metav1.ConditionTrue {
		eventType = corev1.EventTypeWarning
	}
	r.Events.Eventf(trunk, nil, eventType, now.Reason, "Register", "%s", now.Message)
}
