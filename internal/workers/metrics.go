package workers

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// AssignmentSeconds is how long calls waited for a worker: at placement,
// the pick; for a call queued while no worker had room, from its
// acceptance to the leader's assignment; for a Call applied with kubectl,
// from the leader's first sight of it (Assigner.waitingSince).
var AssignmentSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
	Name:    "switchboard_call_assignment_seconds",
	Help:    "Time a call waited for a worker: the pick at placement, or from its acceptance (or the leader's first sight of a Call applied with kubectl) to the leader's assignment.",
	Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
})

// ObserveAssignment records one call's wait for its worker.
func ObserveAssignment(d time.Duration) { AssignmentSeconds.Observe(d.Seconds()) }

var (
	liveDesc = prometheus.NewDesc("switchboard_worker_live_calls",
		"Calls this replica carries now (queued or in progress), as its worker Lease says.", []string{"worker"}, nil)
	capacityDesc = prometheus.NewDesc("switchboard_worker_capacity",
		"Live calls this replica carries at most (--max-active-calls-per-replica).", []string{"worker"}, nil)
	drainingDesc = prometheus.NewDesc("switchboard_worker_draining",
		"1 while this replica drains: it takes no new calls and waits for its calls to finish.", []string{"worker"}, nil)
)

// Collector reports this worker's load at each scrape.
func (h *Heartbeat) Collector() prometheus.Collector { return heartbeatCollector{h} }

type heartbeatCollector struct{ h *Heartbeat }

func (c heartbeatCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- liveDesc
	ch <- capacityDesc
	ch <- drainingDesc
}

func (c heartbeatCollector) Collect(ch chan<- prometheus.Metric) {
	draining := 0.0
	if c.h.Draining() {
		draining = 1
	}
	ch <- prometheus.MustNewConstMetric(liveDesc, prometheus.GaugeValue, float64(c.h.Load().Live), c.h.Name)
	ch <- prometheus.MustNewConstMetric(capacityDesc, prometheus.GaugeValue, float64(c.h.Capacity), c.h.Name)
	ch <- prometheus.MustNewConstMetric(drainingDesc, prometheus.GaugeValue, draining, c.h.Name)
}

func init() { metrics.Registry.MustRegister(AssignmentSeconds) }
