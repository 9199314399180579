package sip

import (
	"context"

	"github.com/switchboard-dev/switchboard/internal/telephony/sip/engine"
)

// EngineCloser closes the SIP engine when the manager stops, on every
// replica (the engine listens on all of them), once the calls in progress
// have hung up and closed their recordings.
type EngineCloser struct {
	Engine *engine.Engine
	Dialer *Dialer
}

// NeedLeaderElection: every replica has its engine.
func (c EngineCloser) NeedLeaderElection() bool { return false }

// Start waits for ctx to end, then for the calls, and closes the engine.
func (c EngineCloser) Start(ctx context.Context) error {
	<-ctx.Done()
	c.Dialer.Wait()
	return c.Engine.Close()
}
