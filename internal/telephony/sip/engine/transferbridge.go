package engine

import (
	"context"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony"
)

// bridge transfers the callee by dialing the person and joining the two
// calls. Not built yet.
func (lc *liveCall) bridge(_ context.Context, _ Transfer, out telephony.TransferOutcome) telephony.TransferOutcome {
	out.Result, out.Detail = switchboardv1.TransferFailed, "not built yet"
	return out
}

// warm dials the person, whispers, and bridges once they accept. Not
// built yet.
func (lc *liveCall) warm(_ context.Context, _ Transfer, out telephony.TransferOutcome) telephony.TransferOutcome {
	out.Result, out.Detail = switchboardv1.TransferFailed, "not built yet"
	return out
}
