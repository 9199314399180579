package controllers

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/webhook"
)

var (
	deliveryAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_webhook_delivery_attempts_total",
		Help: "Webhook delivery attempts, by result: succeeded (2xx), client_error (4xx), server_error (5xx), other_status, no_response (connection, TLS, timeout).",
	}, []string{"result"})
	deliveryLagSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "switchboard_webhook_delivery_lag_seconds",
		Help:    "Time from an event (its delivery queued) to the receiver's 2xx, retries included.",
		Buckets: []float64{0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 1800, 3600},
	})
)

func init() { metrics.Registry.MustRegister(deliveryAttempts, deliveryLagSeconds) }

// observeAttempt counts an attempt and, when it succeeded, its event's lag.
func observeAttempt(d *history.Delivery, res webhook.Result, done time.Time) {
	deliveryAttempts.WithLabelValues(attemptResult(res)).Inc()
	if res.Succeeded() && !d.CreationTimestamp.IsZero() {
		deliveryLagSeconds.Observe(max(done.Sub(d.CreationTimestamp.Time), 0).Seconds())
	}
}

func attemptResult(res webhook.Result) string {
	switch c := res.StatusCode; {
	case c == 0:
		return "no_response"
	case c >= 200 && c <= 299:
		return "succeeded"
	case c >= 400 && c <= 499:
		return "client_error"
	case c >= 500 && c <= 599:
		return "server_error"
	}
	return "other_status"
}

// PendingDeliveriesCollector reports the delivery backlog when scraped.
type PendingDeliveriesCollector struct {
	Store history.DeliveryLog
}

var pendingDeliveriesDesc = prometheus.NewDesc("switchboard_webhook_deliveries_pending",
	"Webhook deliveries waiting for an attempt (due now or at a later retry).", nil, nil)

// Describe implements prometheus.Collector.
func (p *PendingDeliveriesCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- pendingDeliveriesDesc
}

// Collect implements prometheus.Collector.
func (p *PendingDeliveriesCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n, err := p.Store.CountDueDeliveries(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(pendingDeliveriesDesc, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(pendingDeliveriesDesc, prometheus.GaugeValue, float64(n))
}
