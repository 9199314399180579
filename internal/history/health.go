package history

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var storeUp = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "switchboard_history_store_up",
	Help: "1 while the history store answers, 0 while it does not (calls go on; archiving and webhook deliveries wait).",
})

func init() { metrics.Registry.MustRegister(storeUp) }

// HealthCheck pings the store every Interval on every replica, and reports
// it in switchboard_history_store_up and in the log when it changes. It
// does not fail readiness: a replica whose store is down still accepts and
// places calls, which is what the service is for; only archiving, the
// delivery queue and reads of history wait.
type HealthCheck struct {
	Store    Store
	Interval time.Duration
	Log      logr.Logger
}

// NeedLeaderElection: every replica reports its own view of the store.
func (h *HealthCheck) NeedLeaderElection() bool { return false }

// Start pings until ctx ends.
func (h *HealthCheck) Start(ctx context.Context) error {
	up := true
	storeUp.Set(1)
	tick := time.NewTicker(h.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		pingCtx, cancel := context.WithTimeout(ctx, h.Interval)
		err := h.Store.Ping(pingCtx)
		cancel()
		switch {
		case err != nil && up && ctx.Err() == nil:
			h.Log.Error(err, "history store unreachable: calls go on; archiving and webhook deliveries wait for it")
			storeUp.Set(0)
			up = false
		case err == nil && !up:
			h.Log.Info("history store reachable again")
			storeUp.Set(1)
			up = true
		}
	}
}
