package app

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// metricsOptions serves the metrics on their own port: in a cluster over
// HTTPS to clients the apiserver authenticates and authorizes (a
// ServiceAccount bound to the metrics-reader ClusterRole, such as
// Prometheus'), in development as plain HTTP.
func metricsOptions(opts Options) metricsserver.Options {
	o := metricsserver.Options{BindAddress: opts.MetricsAddr}
	if opts.MetricsSecure {
		o.SecureServing = true
		o.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return o
}

var (
	liveCallsMu        sync.Mutex
	liveCallsCollector prometheus.Collector
)

// registerLiveCalls makes c the collector of the live and queued calls
// gauges. One process may build several managers one after the other (the
// tests' restarts); the latest one's cache is the one to read.
func registerLiveCalls(c prometheus.Collector) {
	liveCallsMu.Lock()
	defer liveCallsMu.Unlock()
	if liveCallsCollector != nil {
		metrics.Registry.Unregister(liveCallsCollector)
	}
	metrics.Registry.MustRegister(c)
	liveCallsCollector = c
}
