package httpapi

import (
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// requestSeconds times every request by its route pattern (for example
// "/v1/calls/{callID}", never the id itself), method and status code, so
// that label values stay bounded. POST /v1/calls is the create latency.
var requestSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "switchboard_api_request_duration_seconds",
	Help:    "Time to answer a REST API request, by route pattern, method and status code.",
	Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
}, []string{"route", "method", "code"})

func init() { metrics.Registry.MustRegister(requestSeconds) }

// observeRequest records a finished request; the route is chi's pattern,
// "unmatched" for a path no route took.
func observeRequest(rctx *chi.Context, method string, status int, took time.Duration) {
	route := "unmatched"
	if rctx != nil && rctx.RoutePattern() != "" {
		route = rctx.RoutePattern()
	}
	requestSeconds.WithLabelValues(route, method, strconv.Itoa(status)).Observe(took.Seconds())
}
