package app

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/switchboard-dev/switchboard/controllers"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip"
)

// SIPOptions configure the SIP user agent. Without them, SIPTrunks are
// not probed (their status stays empty).
type SIPOptions struct {
	// BindHost is the IP the SIP listeners bind to (see sip.EngineConfig).
	BindHost string
	// ExternalHost is the address trunks see, behind NAT; optional.
	ExternalHost string
	// ProbeInterval is how often each trunk is sent OPTIONS (default 60 s).
	ProbeInterval time.Duration
}

// setupSIPTrunks starts the SIP engine and registers the SIPTrunk
// controller, which probes trunks through it.
func setupSIPTrunks(ctx context.Context, mgr manager.Manager, opts *SIPOptions, log logr.Logger) error {
	if opts == nil {
		return nil
	}
	engine, err := sip.NewEngine(ctx, sip.EngineConfig{BindHost: opts.BindHost, ExternalHost: opts.ExternalHost,
		Logger: slog.New(logr.ToSlogHandler(log.WithName("sip")))})
	if err != nil {
		return err
	}
	if err := mgr.Add(engineCloser{engine}); err != nil {
		_ = engine.Close()
		return err
	}
	err = (&controllers.SIPTrunkReconciler{Client: mgr.GetClient(), Secrets: mgr.GetAPIReader(), Prober: engine,
		Events: mgr.GetEventRecorder("switchboard"), Clock: clock.RealClock{},
		ProbeInterval: opts.ProbeInterval}).SetupWithManager(ctx, mgr)
	if err != nil {
		return fmt.Errorf("siptrunk controller: %w", err)
	}
	return nil
}

// engineCloser closes the SIP engine when the manager stops, on every
// replica (the engine listens on all of them).
type engineCloser struct{ engine *sip.Engine }

func (c engineCloser) NeedLeaderElection() bool { return false }

func (c engineCloser) Start(ctx context.Context) error {
	<-ctx.Done()
	return c.engine.Close()
}
