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
	collectorsMu sync.Mutex
	collectors   = map[string]prometheus.Collector{}
)

// registerCollector makes c the collector registered under name. One
// process may build several managers one after the other (the tests'
// restarts); the latest one's cache and store are the ones to read.
func registerCollector(name string, c prometheus.Collector) {
	collectorsMu.Lock()
	defer collectorsMu.Unlock()
	if prev := collectors[name]; prev != nil {
		metrics.Registry.Unregister(prev)
	}
	metrics.Registry.MustRegister(c)
	collectors[name] = c
}
