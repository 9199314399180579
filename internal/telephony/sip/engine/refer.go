package engine

import (
	"context"
	"errors"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony"
)

// errNoTransfers refuses the transfers of a call placed without a guard.
var errNoTransfers = errors.New("the agent declares no transferDestinations")

// refer transfers the callee by REFER. Not built yet.
func (lc *liveCall) refer(_ context.Context, _ Transfer, out telephony.TransferOutcome) telephony.TransferOutcome {
	out.Result, out.Detail = switchboardv1.TransferFailed, "not built yet"
	return out
}
