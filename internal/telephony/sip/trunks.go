package sip

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/engine"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/gate"
)

// ClusterTrunks reads SIPTrunks from the informer cache and their
// credentials Secrets live (the manager caches only API-key Secrets).
// A trunk the cache does not hold yet is read live before the call is
// refused: a platform team that applies a trunk and places a call at once
// must not lose the call to the informer's lag.
type ClusterTrunks struct {
	Cache client.Reader
	Live  client.Reader
}

var _ TrunkSource = ClusterTrunks{}

// Trunk resolves namespace/name; a missing or misconfigured trunk is a
// dispatch failure that says what to fix.
func (c ClusterTrunks) Trunk(ctx context.Context, namespace, name string) (engine.Trunk, gate.Limits, error) {
	var t switchboardv1.SIPTrunk
	key := types.NamespacedName{Namespace: namespace, Name: name}
	err := c.Cache.Get(ctx, key, &t)
	if apierrors.IsNotFound(err) {
		err = c.Live.Get(ctx, key, &t)
	}
	if apierrors.IsNotFound(err) {
		return engine.Trunk{}, gate.Limits{}, &telephony.DispatchError{Code: telephony.CodeDispatchFailed,
			Reason: fmt.Sprintf("the agent's SIP trunk %q does not exist", name)}
	} else if err != nil {
		return engine.Trunk{}, gate.Limits{}, fmt.Errorf("reading SIP trunk %s: %w", name, err)
	}
	st, err := Resolve(ctx, c.Live, &t)
	var ce *ConfigError
	if errors.As(err, &ce) {
		return engine.Trunk{}, gate.Limits{}, &telephony.DispatchError{Code: telephony.CodeDispatchFailed,
			Reason: fmt.Sprintf("SIP trunk %q: %s", name, ce.Message)}
	} else if err != nil {
		return engine.Trunk{}, gate.Limits{}, err
	}
	var lim gate.Limits
	if t.Spec.MaxConcurrentCalls != nil {
		lim.MaxConcurrent = int(*t.Spec.MaxConcurrentCalls)
	}
	if t.Spec.CallsPerSecond != nil {
		lim.CallsPerSecond = int(*t.Spec.CallsPerSecond)
	}
	return st, lim, nil
}
