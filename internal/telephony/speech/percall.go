package speech

import (
	"context"

	"github.com/switchboard-dev/switchboard/internal/telephony"
)

// PerCall chooses each call's recognizer (For its agent), as a dialer asks
// for one: the agent's server, else the embedded one, loaded at the first
// call that needs it. ctx bounds the recognizers' lives.
func (a *Agents) PerCall(ctx context.Context) func(telephony.Request) Recognizer {
	return func(req telephony.Request) Recognizer { return a.For(ctx, req.Agent) }
}
