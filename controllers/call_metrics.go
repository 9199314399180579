package controllers

import (
	"context"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/directory"
	"github.com/switchboard-dev/switchboard/internal/quota"
)

// Call metrics. Labels are bounded: a source, a status, a disposition and
// a trunk name, never a call id or a number.
var (
	callsCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_calls_created_total",
		Help: "Calls the reconciler took up, by source (api, dashboard, kubectl).",
	}, []string{"source"})
	callsEnded = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_calls_ended_total",
		Help: "Calls that reached a final status (ended or failed), by status and disposition (empty for failed calls).",
	}, []string{"status", "disposition"})
	callAnswerSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "switchboard_call_time_to_answer_seconds",
		Help:    "Time from dialing to the callee (or a machine) answering, for answered calls.",
		Buckets: []float64{0.5, 1, 2, 5, 10, 15, 20, 30, 45, 60},
	})
	callDurationSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "switchboard_call_duration_seconds",
		Help:    "Connected time of answered calls.",
		Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1200, 3600},
	})
	recordingsLimited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_recordings_limited_total",
		Help: "Recordings a limit cut (call_size: --recording-max-bytes) or kept from storage (organization_quota: its recording storage quota).",
	}, []string{"limit"})
)

// The limits of switchboard_recordings_limited_total.
const (
	limitCallSize          = "call_size"
	limitOrganizationQuota = "organization_quota"
)

func init() {
	metrics.Registry.MustRegister(callsCreated, callsEnded, callAnswerSeconds, callDurationSeconds, recordingsLimited)
}

// observeTransition counts what a reconcile step changed: a call taken up
// (it had no call id yet), a call that became final.
func observeTransition(before, after *switchboardv1.Call) {
	if before.Status.CallID == "" && after.Status.CallID != "" {
		callsCreated.WithLabelValues(sourceOf(after)).Inc()
	}
	if before.CurrentPhase().Final() || !after.CurrentPhase().Final() {
		return
	}
	callsEnded.WithLabelValues(string(after.Status.Phase), string(after.Status.Disposition)).Inc()
	s := after.Status
	if s.StartedAt == nil || s.EndedAt == nil || s.DurationMS == nil || *s.DurationMS <= 0 {
		return
	}
	connected := time.Duration(*s.DurationMS) * time.Millisecond
	callDurationSeconds.Observe(connected.Seconds())
	if ringing := s.EndedAt.Sub(s.StartedAt.Time) - connected; ringing >= 0 {
		callAnswerSeconds.Observe(ringing.Seconds())
	}
}

func sourceOf(c *switchboardv1.Call) string {
	if c.Spec.Source == "" {
		return string(switchboardv1.SourceKubectl)
	}
	return string(c.Spec.Source)
}

// LiveCallsCollector reports the calls in progress and the calls queued
// per trunk (the agent's SIPTrunk, "simulator" without one) when scraped,
// from the informer cache's index of live calls: no apiserver request.
// Each replica reports the calls it carries, and the leader the calls not
// assigned yet (which every replica's cache holds), so that a sum over the
// replicas counts each call once.
type LiveCallsCollector struct {
	Cache     client.Reader
	Directory *directory.Directory
	// Worker is this replica's; Leader is closed once it leads.
	Worker string
	Leader <-chan struct{}
}

var (
	liveCallsDesc = prometheus.NewDesc("switchboard_calls_live",
		"Calls in progress (ringing or connected) now.", nil, nil)
	queuedCallsDesc = prometheus.NewDesc("switchboard_calls_queued",
		"Calls accepted and not yet dialed, by the trunk they wait for (simulator: the simulated carrier).", []string{"trunk"}, nil)
)

// Describe implements prometheus.Collector.
func (l *LiveCallsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- liveCallsDesc
	ch <- queuedCallsDesc
}

// Collect implements prometheus.Collector.
func (l *LiveCallsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	live, err := l.count(ctx, switchboardv1.CallInProgress)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(liveCallsDesc, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(liveCallsDesc, prometheus.GaugeValue, float64(len(live)))
	queued, err := l.count(ctx, switchboardv1.CallQueued)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(queuedCallsDesc, err)
		return
	}
	byTrunk := map[string]int{}
	for _, c := range queued {
		byTrunk[l.trunkOf(ctx, &c)]++
	}
	for trunk, n := range byTrunk {
		ch <- prometheus.MustNewConstMetric(queuedCallsDesc, prometheus.GaugeValue, float64(n), trunk)
	}
}

func (l *LiveCallsCollector) count(ctx context.Context, phase switchboardv1.CallPhase) ([]switchboardv1.Call, error) {
	var calls switchboardv1.CallList
	err := l.Cache.List(ctx, &calls, client.MatchingFields{quota.LivePhaseIndex: string(phase)}, client.UnsafeDisableDeepCopy)
	leads := l.leads()
	return slices.DeleteFunc(calls.Items, func(c switchboardv1.Call) bool {
		w := c.Labels[switchboardv1.WorkerLabel]
		return w != l.Worker && (w != "" || !leads)
	}), err
}

func (l *LiveCallsCollector) leads() bool {
	select {
	case <-l.Leader:
		return true
	default:
		return false
	}
}

func (l *LiveCallsCollector) trunkOf(ctx context.Context, c *switchboardv1.Call) string {
	agent, err := l.Directory.Agent(ctx, c.Namespace, c.Spec.AgentID)
	switch {
	case err != nil:
		return "unknown"
	case agent.Spec.TrunkRef == nil:
		return "simulator"
	}
	return c.Namespace + "/" + agent.Spec.TrunkRef.Name
}
