package calls

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// ErrNotActive: the call has ended or failed; there is nothing to stop.
var ErrNotActive = errors.New("call is not active")

// Stopping a call patches its spec.
// +kubebuilder:rbac:groups=switchboard.dev,resources=calls,verbs=patch

// Stopper stops calls the way a platform team does with kubectl: it sets
// the Call's spec.stop, and the reconciler cancels or hangs the call up.
type Stopper struct {
	Book *Book
	// Client patches Calls.
	Client client.Client
}

// Stop asks for the call of namespace whose call_id is id to end, and
// returns it as it is now (still live: it ends shortly). Stopping a call
// already asked to stop is no error. A call that is final, or no longer in
// the cluster, is ErrNotActive; an unknown one ErrNotFound.
func (s *Stopper) Stop(ctx context.Context, namespace, id string) (*switchboardv1.Call, error) {
	c, err := s.Book.Get(ctx, namespace, id)
	if err != nil {
		return nil, err
	}
	// Archived calls are final: only a live Call can still be stopped.
	if c.CurrentPhase().Final() {
		return nil, ErrNotActive
	}
	if c.Spec.Stop {
		return c, nil
	}
	patch := client.MergeFrom(c.DeepCopy())
	c.Spec.Stop = true
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	// The reconciler may get to the stop after the call's natural end: the
	// time the 202 was given is what decides which came first.
	c.Annotations[switchboardv1.StopRequestedAtAnnotation] = time.Now().UTC().Format(time.RFC3339Nano)
	switch err := s.Client.Patch(ctx, c, patch); {
	case apierrors.IsNotFound(err):
		return nil, ErrNotActive
	case err != nil:
		return nil, fmt.Errorf("stopping call %s: %w", id, err)
	}
	// The patch answers with the Call as it is now: one that ended while
	// the stop was on its way is not stopped (the reconciler ignores the
	// flag on a final call).
	if c.CurrentPhase().Final() {
		return nil, ErrNotActive
	}
	return c, nil
}
